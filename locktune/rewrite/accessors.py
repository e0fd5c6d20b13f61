"""Lock accessors for wrapper functions named with --lock-wrapper.

memcached locks an item with `item_lock(hv)`, a function of thread.c whose body is
`mutex_lock(&item_locks[hv & hashmask(item_lock_hashpower)])`, and `item_locks` is static
to thread.c.  A section that calls item_lock() in items.c cannot be extracted as
`lt_execute(&item_locks[...], ...)`: that lock is not visible there.  So for each wrapper
function the user names (without its own :EXPR) the rewriter

1. adds, beside every definition of the wrapper, a function returning the lock that
   definition takes:

       lt_mutex_t *lt_lock_of_item_lock(uint32_t hv)
       {
           return &item_locks[hv & hashmask(item_lock_hashpower)];
       }

   Each program links the accessor of the definition it links (memcached's testapp has
   its own, empty, STATS_LOCK(): its accessor returns a lock of its own, which its
   callers' sections then run on).  Wrappers that take the same lock in every file
   (item_lock and item_unlock) share one accessor, so that their sections pair;
2. tells locktune-extract `--lock-wrapper item_lock=lock:lt_lock_of_item_lock($1)`;
3. declares the accessor in locktune_config.h, which every rewritten file includes.

A wrapper gets no accessor (and its sections in other files stay kept, with the
extractor's reason) when one of its definitions is neither one call of a lock function
nor empty, when it is static (its callers are in its own file, where the extractor sees
the lock), or when its parameters are not of basic C types (the prototype must compile in
the generated header).
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass, field

from locktune.rewrite import clex, wrappers

PREFIX = "lt_lock_of_"
_BASIC = {
    "void", "char", "short", "int", "long", "unsigned", "signed", "float", "double", "_Bool",
    "const", "volatile", "size_t", "ssize_t", "ptrdiff_t", "intptr_t", "uintptr_t",
    "int8_t", "int16_t", "int32_t", "int64_t", "uint8_t", "uint16_t", "uint32_t", "uint64_t",
}  # fmt: skip
_DEFINITION = re.compile(
    r"^lt_mutex_t\s*\*\s*(" + PREFIX + r"\w+)\s*\(([^)]*)\)\s*\{", re.MULTILINE
)


@dataclass
class Definition:
    """One definition of a wrapper: the lock it takes (None: an empty stub)."""

    wrapper: str
    file: str
    line: int
    params: str
    lock: str | None


@dataclass
class Accessor:
    name: str  # lt_lock_of_item_lock
    wrappers: dict[str, str] = field(default_factory=dict)  # wrapper -> role
    definitions: list[Definition] = field(default_factory=list)  # one per file

    @property
    def params(self) -> str:
        return self.definitions[0].params

    def spec(self, wrapper: str) -> str:
        nargs = 0 if self.params in ("", "void") else len(self.params.split(","))
        args = ", ".join(f"${k}" for k in range(1, nargs + 1))
        return f"{self.wrappers[wrapper]}:{self.name}({args})"

    def text(self, d: Definition) -> str:
        """The accessor's definition beside wrapper definition `d`."""
        names = [f"{w}()" for w in self.wrappers]
        who = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
        one = len(names) == 1
        flags = f"the lock wrapper{'' if one else 's'} {who}"
        if d.lock is None:
            own = f"{self.name}_here"
            comment = (
                f"{who} {'locks' if one else 'lock'} nothing in this file: critical sections "
                f"that call {'it' if one else 'them'} run on this one (added by locktune "
                f"rewrite for {flags})."
            )
            body = (
                f"static lt_mutex_t {own} = LT_MUTEX_INITIALIZER(LT_SITE_UNKNOWN);\n"
                f"lt_mutex_t *{self.name}({d.params})\n{{\n    return &{own};\n}}\n"
            )
        else:
            comment = (
                f"The lock that {who} {'acts' if one else 'act'} on: critical sections that "
                f"call {'it' if one else 'them'} in other files run on it (added by locktune "
                f"rewrite for {flags})."
            )
            body = f"lt_mutex_t *{self.name}({d.params})\n{{\n    return {d.lock};\n}}\n"
        lines = textwrap.wrap(comment, width=92, break_long_words=False, break_on_hyphens=False)
        return "\n/* " + "\n * ".join(lines) + " */\n" + body


def _function(text: str, name: str, line: int):
    """(params text, body text, end token index, tokens) of the definition of `name` that
    starts near `line` (any line when 0), or None."""
    toks = clex.tokens(text)
    for i, t in enumerate(toks):
        if t.kind != "ident" or t.text != name or (line and abs(t.line - line) > 3):
            continue
        if i + 1 >= len(toks) or toks[i + 1].text != "(":
            continue
        close = clex.matching_paren(toks, i + 1)
        if close is None or close + 1 >= len(toks) or toks[close + 1].text != "{":
            continue
        depth, end = 0, None
        for j in range(close + 1, len(toks)):
            depth += toks[j].text == "{"
            depth -= toks[j].text == "}"
            if depth == 0:
                end = j
                break
        if end is None:
            return None
        params = text[toks[i + 1].start + 1 : toks[close].start]
        body = text[toks[close + 1].start + 1 : toks[end].start]
        return " ".join(params.split()), body, end, toks
    return None


def definitions_of(text: str, name: str) -> list[int]:
    """Lines of every definition of function `name` in `text` (by tokens, at file scope)."""
    toks = clex.tokens(text)
    out, depth = [], 0
    for i, t in enumerate(toks):
        if t.text == "{":
            depth += 1
        elif t.text == "}":
            depth -= 1
        elif depth == 0 and t.kind == "ident" and t.text == name and i + 1 < len(toks):
            if toks[i + 1].text == "(":
                close = clex.matching_paren(toks, i + 1)
                if close is not None and close + 1 < len(toks) and toks[close + 1].text == "{":
                    out.append(t.line)
    return out


def _basic(params: str) -> bool:
    if params in ("", "void"):
        return True
    for p in params.split(","):
        words = re.findall(r"\w+|\*", p)
        if len(words) < 2 or not words[-1].isidentifier():
            return False
        if any(w not in _BASIC and w != "*" for w in words[:-1]):
            return False
    return True


def plan(
    candidates: list[dict],
    texts: dict[str, str],
    named: dict[str, str],
    macros: dict[str, dict],
    listed: dict[tuple[str, str], str] | None = None,
) -> tuple[list[Accessor], dict[str, str]]:
    """Accessors for the wrappers named without :EXPR, from lock_wrappers.cocci's records
    (`candidates`) over the files `texts`, and the locks the Clang listing found wrapper
    functions to take ((file, name) -> lock as written: `listed`, for bodies that check or
    assert around their lock call).  Returns them and, for each other named function, why
    it gets none."""
    templates = wrappers.lock_templates(macros)
    static = {(c["file"], c["name"]) for c in candidates if c["kind"] == "static"}
    wanted = [n for n, spec in named.items() if ":" not in spec and n not in macros]
    skipped: dict[str, str] = {}
    defs: dict[str, list[Definition]] = {}
    for name in wanted:
        found = []
        for rel in sorted(texts):
            if not rel.endswith(".c"):
                continue
            for line in definitions_of(texts[rel], name):
                rec = next(
                    (
                        c
                        for c in candidates
                        if c["name"] == name and c["file"] == rel and abs(c["line"] - line) <= 3
                        and c["kind"] in ("one-call", "empty")
                    ),
                    None,
                )  # fmt: skip
                found.append((rel, line, rec))
        why = _check(name, found, static, texts, templates, listed or {})
        if isinstance(why, str):
            skipped[name] = why
        else:
            defs[name] = why
    # Wrappers taking the same locks in the same files share an accessor.
    groups: dict[tuple, Accessor] = {}
    for name in sorted(defs, key=lambda n: (named[n].split(":")[0] != "lock", n)):
        sig = tuple((d.file, d.params, d.lock) for d in defs[name])
        acc = groups.get(sig)
        if acc is None:
            acc = groups[sig] = Accessor(PREFIX + name, definitions=defs[name])
        acc.wrappers[name] = named[name]
    return sorted(groups.values(), key=lambda a: a.name), skipped


def _check(name, found, static, texts, templates, listed):
    """The definitions of wrapper `name`, or why it gets no accessor."""
    if not found:
        return "not defined as a function in the files rewritten"
    out = []
    for rel, line, rec in found:
        if (rel, name) in static:
            return f"static in {rel}: its callers there see the lock it takes"
        if rec is None and listed.get((rel, name)):
            params, _body, _end, _toks = _function(texts[rel], name, line)
            if not _basic(params):
                return f"its parameters ({params}) are not all of basic C types"
            out.append(Definition(name, rel, line, params, " ".join(listed[(rel, name)].split())))
            continue
        if rec is None:
            return f"its definition in {rel}:{line} is not one call of a lock function"
        params, body, _end, _toks = _function(texts[rel], name, line)
        if not _basic(params):
            return f"its parameters ({params}) are not all of basic C types"
        if rec["kind"] == "empty":
            out.append(Definition(name, rel, line, params, None))
            continue
        call = re.fullmatch(r"\s*(?:return\s+)?(\w+)\s*\((.*)\)\s*;\s*", body, re.DOTALL)
        tpl = templates.get(call.group(1)) if call else None
        lock = wrappers.substitute(tpl, wrappers.split_args(call.group(2))) if tpl else None
        if lock is None:
            return f"its definition in {rel}:{line} is not one call of a lock function"
        out.append(Definition(name, rel, line, params, " ".join(lock.split())))
    return out


def insert(text: str, rel: str, accs: list[Accessor]) -> str:
    """`text` (file `rel`) with each accessor defined after its wrapper's definition."""
    for acc in accs:
        if re.search(rf"\b{acc.name}\s*\([^;{{]*\)\s*\{{", text):
            continue  # already there (a second run)
        for d in acc.definitions:
            if d.file != rel:
                continue
            fn = _function(text, d.wrapper, d.line) or _function(text, d.wrapper, 0)
            if fn is None:
                continue
            _params, _body, end, toks = fn
            nl = text.find("\n", toks[end].start)
            at = len(text) if nl < 0 else nl + 1
            text = text[:at] + acc.text(d) + text[at:]
            break
    return text


def prototypes(texts: dict[str, str]) -> list[str]:
    """Declarations of every accessor defined in the rewritten files, for the header."""
    protos = {}
    for text in texts.values():
        for m in _DEFINITION.finditer(text):
            protos[m.group(1)] = f"lt_mutex_t *{m.group(1)}({' '.join(m.group(2).split())});"
    return [protos[k] for k in sorted(protos)]
