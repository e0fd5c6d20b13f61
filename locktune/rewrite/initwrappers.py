"""Init wrappers: each caller of a function that brings its caller's lock to life gets a site
of its own (issue 11, item 5; the shape: refactor/src/InitWrapper.h).

    static inline int mythread_mutex_init(mythread_mutex *mutex)
    {   return pthread_mutex_init(mutex, NULL); }          every xz lock: one site, line 187

becomes

    static inline int mythread_mutex_init(mythread_mutex *mutex, int lt_site)
    {   return lt_mutex_init(mutex, NULL, lt_site); }
    ...
    if (mythread_mutex_init(&thr->mutex, LT_SITE_SRC_LIBLZMA_COMMON_STREAM_ENCODER_MT_C_506))

so that locktune_config.h has one entry per caller, each with its own algorithm.  This pass
runs after the semantic patches (the wrapper's call is lt_mutex_init with the wrapper's own
site by then) and works on the current text by token, finding each call by its original line.

Only a static function is changed, and only when every use of it is a call this pass can
edit: a call the preprocessor writes (in a macro) or a use of its address keeps the wrapper's
one site, as does a function with external linkage (its signature is its callers' API); each
such wrapper gets a note with the reason.  A site taken from the wrapper remembers it (`via`):
a profile taken before the rewrite names the wrapper's line, and that profile goes to each of
its callers' sites.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from locktune.rewrite import clex, sites

PARAM = "lt_site"


@dataclass
class Wrapper:
    name: str
    file: str
    line: int
    init_line: int
    param: int
    declarations: list[tuple[str, int]] = field(default_factory=list)
    calls: list[dict] = field(default_factory=list)  # {file, line, lock}

    @property
    def site(self) -> tuple[str, int]:
        return (self.file, self.init_line)


def plan(listing: dict | None, states: dict) -> tuple[list[Wrapper], list[dict]]:
    """The init wrappers to give per-caller sites, and a note ({file, line, message}) for each
    one that keeps its one site."""
    if not listing:
        return [], []
    # by the function used: static functions of two files may share a name
    uses: dict[tuple[str, str, int], list[dict]] = {}
    for u in listing.get("init_wrapper_uses") or []:
        uses.setdefault((u["name"], u["def_file"], int(u["def_line"])), []).append(u)
    chosen, notes = [], []
    for w in listing.get("init_wrappers") or []:
        name, here = w["name"], (w["file"], int(w["line"]))

        def keep(why: str, w=w, name=name) -> None:
            notes.append(
                {
                    "file": w["file"],
                    "line": int(w["init_line"]),
                    "message": f"{name}() initialises its caller's lock: {why}, so every lock "
                    "it initialises shares this site",
                }
            )

        mine = uses.get((name, *here), [])
        if not w.get("static"):
            keep("it has external linkage (its signature is its callers' API)")
            continue
        if w.get("in_macro"):
            keep("a macro defines it")
            continue
        if w.get("init_in_macro"):
            keep("its pthread_mutex_init call is written by a macro")
            continue
        address = [u for u in mine if not u.get("call")]
        if address:
            a = address[0]
            keep(f"its address is taken ({a['file']}:{a['line']})")
            continue
        in_macro = [u for u in mine if u.get("in_macro")]
        if in_macro:
            m = in_macro[0]
            keep(f"a macro calls it ({m['file']}:{m['line']})")
            continue
        if not mine:
            continue  # no caller: nothing to give a site
        # a file that could not be analysed lists none of its calls: it may call the wrapper
        blind = sorted(
            rel
            for rel, st in states.items()
            if st.error is not None and name in st.text and _names(st.text, name)
        )
        if blind:
            keep(f"{blind[0]} may call it and could not be analysed")
            continue
        files = {w["file"], *(u["file"] for u in mine), *(d["file"] for d in w["declarations"])}
        unusable = sorted(f for f in files if f not in states or not states[f].usable)
        if unusable:
            keep(f"{unusable[0]} is not rewritten")
            continue
        chosen.append(
            Wrapper(
                name,
                here[0],
                here[1],
                int(w["init_line"]),
                int(w["param"]),
                [(d["file"], int(d["line"])) for d in w["declarations"]],
                [
                    {
                        "file": u["file"],
                        "line": int(u["line"]),
                        "lock": lock_name(
                            w.get("init_lock", ""), w.get("param_name", ""), u.get("lock") or ""
                        ),
                    }
                    for u in mine
                ],
            )
        )
    return chosen, notes


def lock_name(init_lock: str, param: str, arg: str) -> str:
    """The lock a call initialises, as its caller would write it: the wrapper's init argument
    with the parameter replaced by the call's argument (`&me->stats.mutex`, me =
    `&threads[i]`: `threads[i].stats.mutex`)."""
    if not init_lock or not param:
        return sites.normalize_lock(arg)
    out, pos = [], 0
    for t in clex.tokens(init_lock):
        out.append(init_lock[pos : t.start])
        out.append(f"({arg})" if t.kind == "ident" and t.text == param else t.text)
        pos = t.start + len(t.text)
    text = "".join(out) + init_lock[pos:]
    text = re.sub(r"\(\s*&\s*([^()]*?)\s*\)\s*->", r"\1.", text)  # (&x)->f: x.f
    while True:  # parentheses around a plain access path
        shorter = re.sub(r"\(([\w.\[\]&>-]+)\)", r"\1", text)
        if shorter == text:
            break
        text = shorter
    return sites.normalize_lock(text)


def _names(text: str, name: str) -> bool:
    return any(t.kind == "ident" and t.text == name for t in clex.tokens(text))


def _calls_on(toks: list[clex.Token], name: str, linemap, line: int) -> list[tuple[int, int]]:
    """(index of '(', index of its ')') of every `name(` whose original line is `line`."""
    out = []
    for i, t in enumerate(toks[:-1]):
        if t.kind == "ident" and t.text == name and toks[i + 1].text == "(":
            if linemap(t.line) == line:
                close = clex.matching_paren(toks, i + 1)
                if close is not None:
                    out.append((i + 1, close))
    return out


def _edits(wr: Wrapper, states: dict) -> dict[str, list[tuple[int, int, str]]] | str:
    """The edits (offset, end, text) per file, or why they cannot be made."""
    edits: dict[str, list[tuple[int, int, str]]] = {}
    toks = {f: clex.tokens(states[f].text) for f in {wr.file, *(c["file"] for c in wr.calls)}}
    for f, _ in wr.declarations:
        toks.setdefault(f, clex.tokens(states[f].text))
    # the wrapper's own site becomes its parameter
    own = sites.ident(*wr.site)
    hits = [t for t in toks[wr.file] if t.kind == "ident" and t.text == own]
    if len(hits) != 1:
        return f"its lt_mutex_init call's site ({own}) is written {len(hits)} times"
    edits.setdefault(wr.file, []).append((hits[0].start, hits[0].start + len(own), PARAM))
    # its parameter list, at the definition and each declaration
    for f, line in [(wr.file, wr.line), *wr.declarations]:
        found = _calls_on(toks[f], wr.name, states[f].linemap, line)
        if len(found) != 1:
            return f"its declaration at {f}:{line} was not found"
        close = toks[f][found[0][1]].start
        edits.setdefault(f, []).append((close, close, f", int {PARAM}"))
    # each call: its caller's site as the last argument
    by_line: dict[tuple[str, int], int] = {}
    for c in wr.calls:
        by_line[(c["file"], c["line"])] = by_line.get((c["file"], c["line"]), 0) + 1
    for (f, line), n in sorted(by_line.items()):
        found = _calls_on(toks[f], wr.name, states[f].linemap, line)
        if len(found) != n:
            return f"its call at {f}:{line} was not found"
        for _open, close in found:
            at = toks[f][close].start
            edits.setdefault(f, []).append((at, at, f", {sites.ident(f, line)}"))
    return edits


def apply(states: dict, chosen: list[Wrapper]) -> list[dict]:
    """Give each chosen wrapper a site parameter and each call its caller's site: the texts
    and the states' site records change; a wrapper whose edits cannot all be made is left as
    it is, with a note (returned)."""
    notes = []
    for wr in chosen:
        edits = _edits(wr, states)
        if isinstance(edits, str):
            notes.append(
                {
                    "file": wr.file,
                    "line": wr.init_line,
                    "message": f"{wr.name}() initialises its caller's lock, but {edits}: every "
                    "lock it initialises shares this site",
                }
            )
            continue
        for f, es in edits.items():
            text = states[f].text
            for start, end, new in sorted(es, reverse=True):
                text = text[:start] + new + text[end:]
            states[f].text = text  # same lines: the line map holds
        st = states[wr.file]
        st.sites = [r for r in st.sites if (r["file"], int(r["line"])) != wr.site]
        for c in wr.calls:
            states[c["file"]].sites.append(
                {
                    "file": c["file"],
                    "line": c["line"],
                    "kind": "init",
                    "name": c.get("lock") or None,
                    "function": None,
                    "via": f"{wr.file}:{wr.init_line}",
                }
            )
    return notes
