"""What the semantic patches could not reach, finished by token.

Coccinelle skips code it cannot parse: X-macro struct bodies, functions full of unusual
macros, STAILQ_HEAD(...) fields.  A pthread name left there would not compile against the
lt_ types, or worse, would silently keep a lock on glibc.  So after the patches every file
is scanned (comments and strings excluded) and each remaining name is retargeted here:

- the renames are exact (same arguments, same POSIX results), so a token rename is exactly
  what the patch would have done;
- pthread_mutex_init gets its site argument before its closing parenthesis;
- a static initialiser gets the site of its own line;
- a name that a directive tests or removes (`#if defined(PTHREAD_MUTEX_INITIALIZER)`) is left
  as it is (clex.CONDITIONS).

Each one is reported with its file:line, so nothing happens unseen.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from locktune.rewrite import clex

RENAMES = {
    "pthread_mutex_t": "lt_mutex_t",
    "pthread_cond_t": "lt_cond_t",
    "pthread_mutex_lock": "lt_mutex_lock",
    "pthread_mutex_trylock": "lt_mutex_trylock",
    "pthread_mutex_timedlock": "lt_mutex_timedlock",
    "pthread_mutex_unlock": "lt_mutex_unlock",
    "pthread_mutex_destroy": "lt_mutex_destroy",
    "pthread_cond_init": "lt_cond_init",
    "pthread_cond_wait": "lt_cond_wait",
    "pthread_cond_timedwait": "lt_cond_timedwait",
    "pthread_cond_signal": "lt_cond_signal",
    "pthread_cond_broadcast": "lt_cond_broadcast",
    "pthread_cond_destroy": "lt_cond_destroy",
    "PTHREAD_COND_INITIALIZER": "LT_COND_INITIALIZER",
}
INITIALIZERS = {
    "PTHREAD_MUTEX_INITIALIZER": "LT_MUTEX_INITIALIZER",
    "PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP": "LT_MUTEX_INITIALIZER",
    "PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP": "LT_RECURSIVE_MUTEX_INITIALIZER_NP",
    "PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP": "LT_ERRORCHECK_MUTEX_INITIALIZER_NP",
}
INIT = "pthread_mutex_init"


@dataclass
class Fallback:
    line: int  # in the text as it was
    name: str
    replacement: str


# site(line, kind, name) -> the site identifier for a lock born on that line
SiteFn = Callable[[int, str, str], str]


def leftovers(text: str) -> list[clex.Token]:
    toks = clex.tokens(text)
    return [
        t
        for t, tested in zip(toks, clex.on_conditions(toks), strict=True)
        if t.kind == "ident"
        and not tested
        and (t.text in RENAMES or t.text in INITIALIZERS or t.text == INIT)
    ]


_ANY = re.compile(r"\bpthread_(?:mutex|cond)_\w|\bPTHREAD_\w*(?:MUTEX|COND)_INITIALIZER")


def finish(text: str, site: SiteFn) -> tuple[str, list[Fallback]]:
    """Retarget every pthread name left in `text`; returns the new text and what was done."""
    if not _ANY.search(text):
        return text, []  # nothing left (a big file is not tokenised again)
    toks = clex.tokens(text)
    edits: list[tuple[int, int, str]] = []  # (start, end, replacement), non-overlapping
    done: list[Fallback] = []
    tested = clex.on_conditions(toks)
    for i, t in enumerate(toks):
        if t.kind != "ident" or tested[i]:
            continue
        if t.text in RENAMES:
            edits.append((t.start, t.start + len(t.text), RENAMES[t.text]))
            done.append(Fallback(t.line, t.text, RENAMES[t.text]))
        elif t.text in INITIALIZERS:
            rep = f"{INITIALIZERS[t.text]}({site(t.line, 'static', '?')})"
            edits.append((t.start, t.start + len(t.text), rep))
            done.append(Fallback(t.line, t.text, rep))
        elif t.text == INIT and i + 1 < len(toks) and toks[i + 1].text == "(":
            close = clex.matching_paren(toks, i + 1)
            if close is None:
                continue
            arg = text[toks[i + 2].start : _first_comma_end(toks, i + 1, close, text)]
            ident = site(t.line, "init", _lock_name(arg))
            edits.append((t.start, t.start + len(t.text), "lt_mutex_init"))
            edits.append((toks[close].start, toks[close].start, f", {ident}"))
            done.append(Fallback(t.line, t.text, f"lt_mutex_init(..., {ident})"))
    out, at = [], 0
    for start, end, rep in sorted(edits):
        out += [text[at:start], rep]
        at = end
    return "".join(out) + text[at:], done


def _first_comma_end(toks: list[clex.Token], open_i: int, close_i: int, text: str) -> int:
    depth = 0
    for j in range(open_i, close_i):
        t = toks[j].text
        if t in "([{":
            depth += 1
        elif t in ")]}":
            depth -= 1
        elif t == "," and depth == 1:
            return toks[j].start
    return toks[close_i].start


def _lock_name(arg: str) -> str:
    e = "".join(arg.split())
    while e.startswith("&"):
        e = e[1:]
        while e.startswith("(") and e.endswith(")"):
            e = e[1:-1]
    return e
