"""Site naming for the semantic patches that give locks their site (mutex_*.cocci).

Imported by their `@ script:python @` rules (spatch embeds the system Python: stdlib only).
A *site* is where a lock comes to life, as a path relative to the source root plus a line
of the original source; its identifier in rewritten code is ``LT_SITE_<PATH>_<LINE>``.

`locktune rewrite` runs spatch on files that earlier passes may have shifted, so it says
where each line came from through two environment variables:

    LOCKTUNE_SITE_MAP  JSON file {"<path as given to spatch>": {"rel": "dir/file.c",
                       "lines": {"<line now>": <original line>, ...}}}
    LOCKTUNE_SITE_LOG  file to which each site found is appended as one JSON line

Without them (a patch run on its own) a position's file and line are the site.
"""

from __future__ import annotations

import json
import os
import re

_MAP: dict | None = None


def _site_map() -> dict:
    global _MAP
    if _MAP is None:
        path = os.environ.get("LOCKTUNE_SITE_MAP")
        _MAP = {}
        if path:
            with open(path) as f:
                _MAP = json.load(f)
    return _MAP


def site_of(pos) -> tuple[str, int]:
    """(path relative to the source root, original line) of a Coccinelle position."""
    entry = _site_map().get(pos.file)
    if entry is None:
        return pos.file, int(pos.line)
    return entry["rel"], int(entry["lines"].get(str(pos.line), pos.line))


def site_ident_text(rel: str, line: int) -> str:
    """LT_SITE_THREAD_C_45 for thread.c:45 (the enum name locktune_config.h defines)."""
    return f"LT_SITE_{re.sub(r'[^A-Za-z0-9]', '_', rel).upper()}_{line}"


def site(pos, kind: str, name: str) -> str:
    """The site identifier for a lock born at `pos`; logs the site for the header."""
    rel, line = site_of(pos)
    ident = site_ident_text(rel, line)
    log = os.environ.get("LOCKTUNE_SITE_LOG")
    if log:
        record = {
            "file": rel,
            "line": line,
            "kind": kind,
            "name": name,
            # the enclosing function (Coccinelle's current element is the variable itself
            # for a declaration at file scope)
            "function": pos.current_element if kind == "init" else None,
            "ident": ident,
        }
        with open(log, "a") as f:
            f.write(json.dumps(record) + "\n")
    return ident


def lock_name(expr: str) -> str:
    """The lock as written, for people: `& e -> pages [ i ] . mutex` -> `e->pages[i].mutex`."""
    e = re.sub(r"\s+", "", expr)
    while e.startswith("&"):
        e = e[1:]
        while e.startswith("(") and e.endswith(")"):
            e = e[1:-1]
    return e


# Declarations seen by mutex_initializer.cocci, per file, so that an initialiser finds the
# variable it initialises (the one whose declarator most closely precedes it).
_DECLARATIONS: dict[str, list[tuple[int, int, str, str]]] = {}


def remember_declaration(pos, name: str, type_text: str) -> None:
    _DECLARATIONS.setdefault(pos.file, []).append((int(pos.line), int(pos.column), name, type_text))


def declaration_of(pos):
    """(line, column, name, type) of the declaration an initialiser at `pos` belongs to."""
    here = (int(pos.line), int(pos.column))
    best = None
    for d in _DECLARATIONS.get(pos.file, []):
        if d[:2] <= here and (best is None or d[:2] > best[:2]):
            best = d
    return best


# Variables a file brings to life with pthread_mutex_init (mutex_zeroed.cocci leaves them).
_INITIALISED: dict[str, set[str]] = {}


def remember_initialised(pos, name: str) -> None:
    _INITIALISED.setdefault(pos.file, set()).add(name)


def is_initialised(pos, name: str) -> bool:
    return name in _INITIALISED.get(pos.file, set())


def _log(var: str, record: dict) -> None:
    path = os.environ.get(var)
    if path:
        with open(path, "a") as f:
            f.write(json.dumps(record) + "\n")
    else:
        print(json.dumps(record))


def log_wrapper(pos, name: str, callee: str | None) -> None:
    """A function whose body is one call, or empty (callee None) (lock_wrappers.cocci)."""
    rel, line = site_of(pos)
    kind = "one-call" if callee else "empty"
    _log("LOCKTUNE_WRAPPER_LOG", {"kind": kind, "name": name, "callee": callee,
                                  "file": rel, "line": line})  # fmt: skip


def log_static(pos, name: str) -> None:
    rel, line = site_of(pos)
    _log("LOCKTUNE_WRAPPER_LOG", {"kind": "static", "name": name, "file": rel, "line": line})


class _At:
    """A position-like object for a declarator (file, line, enclosing element)."""

    def __init__(self, pos, line: int):
        self.file, self.line, self.current_element = pos.file, line, pos.current_element


def initializer_site(pos, macro: str) -> tuple[str, str]:
    """(replacement macro, site identifier) for a PTHREAD_*MUTEX_INITIALIZER* at `pos`."""
    decl = declaration_of(pos)
    if decl is None:  # an initialiser outside any declaration: the lock is born here
        return INITIALIZERS.get(macro, "LT_MUTEX_INITIALIZER"), site(pos, "static", "?")
    line, _col, name, type_text = decl
    kind = "array" if "[" in type_text else "static"
    return INITIALIZERS.get(macro, "LT_MUTEX_INITIALIZER"), site(_At(pos, line), kind, name)


# glibc's static initialisers and what replaces them.  The adaptive mutex behaves as a
# normal one; recursive and error-checking mutexes keep their type.
INITIALIZERS = {
    "PTHREAD_MUTEX_INITIALIZER": "LT_MUTEX_INITIALIZER",
    "PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP": "LT_MUTEX_INITIALIZER",
    "PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP": "LT_RECURSIVE_MUTEX_INITIALIZER_NP",
    "PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP": "LT_ERRORCHECK_MUTEX_INITIALIZER_NP",
}
