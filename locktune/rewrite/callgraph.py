"""The whole-program pass before extraction: what a section's calls into other files do.

`locktune-extract --list-functions` says, per function defined in each file, whether it
depends on its thread (thread-local variables, pthread_getspecific...) or may wait on a
condition variable, following calls within its file, and which of the program's functions it
calls.  Here that is closed over the whole call graph, and the result goes back to the
extraction as `--callee-facts`: a section that calls a function of another file which, some
calls later, reads a thread-specific value runs on its caller (LT_EXEC_ON_CALLER), never on
an RCL server (memcached: a store section reaches items.c's eviction, which logs through
pthread_getspecific; shipped to a server thread, it crashed).

A name resolves to the static function of the caller's own file when there is one, else to
every non-static function of that name (a program built twice from the same files defines
them twice: the union is the conservative answer).

A call through a file-scope function pointer (`hash(key, n)`: memcached's hash function) is a
call to "*hash", which here calls every function some file assigns to `hash` (each name
resolved in the file that assigns it).  A pointer assigned anything but a named function, or
whose address is taken, depends on its thread as far as anyone can tell; so does one no file
assigns.  `resolved` lists the pointers followed: a call through any other one is on-caller
(ThreadIdentity.cpp).
"""

from __future__ import annotations

from collections import defaultdict, deque

KINDS = {"on_caller": "depends on its thread", "wait": "may wait on a condition variable"}


def close(functions: list[dict], pointers: list[dict] | None = None) -> dict:
    """{"on_caller": {name: why}, "wait": {name: why}, "resolved": ["*NAME"...]} for every
    function (and pointer, "*NAME") that reaches such code; `why` is worded to follow "which"
    (e.g. "depends on its thread: f() -> g() (items.c: calls pthread_getspecific() (line
    1693))").  `pointers`: --list-functions' "pointers" (name, file, targets, unknown)."""
    functions = list(functions) + _pointer_nodes(pointers or [])
    statics: dict[tuple[str, str], list[int]] = defaultdict(list)
    globals_: dict[str, list[int]] = defaultdict(list)
    for i, f in enumerate(functions):
        (statics[(f["file"], f["name"])] if f.get("static") else globals_[f["name"]]).append(i)

    callers: dict[int, set[int]] = defaultdict(set)  # callee -> its callers
    for i, f in enumerate(functions):
        for name in f.get("calls", []):
            for j in statics.get((f["file"], name)) or globals_.get(name, []):
                if j != i:
                    callers[j].add(i)

    out: dict[str, dict[str, str]] = {}
    for kind, words in KINDS.items():
        # breadth first from the functions that do it themselves: each reached function
        # records the callee it reaches it through (the shortest chain to a reason)
        via: dict[int, int | None] = {}
        queue = deque()
        for i, f in enumerate(functions):
            if f.get(kind):
                via[i] = None
                queue.append(i)
        while queue:
            j = queue.popleft()
            for i in sorted(callers[j]):
                if i not in via:
                    via[i] = j
                    queue.append(i)
        facts: dict[str, str] = {}
        for i in sorted(via):
            chain, k = [], i
            while via[k] is not None:
                chain.append(_called(functions[k]["name"]))
                k = via[k]
            origin = functions[k]
            chain.append(f"{_called(origin['name'])} ({origin['file']}: {origin[kind]})")
            facts.setdefault(functions[i]["name"], f"{words}: " + " -> ".join(chain))
        out[kind] = facts
    out["resolved"] = sorted({f["name"] for f in functions if f["name"].startswith("*")})
    return out


def _called(name: str) -> str:
    """A function or a pointer ("*hash") as a chain shows it: f(), (*hash)()."""
    return f"({name})()" if name.startswith("*") else f"{name}()"


def _pointer_nodes(pointers: list[dict]) -> list[dict]:
    """One node per pointer and assigning file: "*NAME" calling what that file assigns."""
    return [
        {
            "name": "*" + p["name"],
            "file": p["file"],
            "static": False,
            "calls": list(p.get("targets", [])),
            "on_caller": p.get("unknown") or "",
            "wait": "",
        }
        for p in pointers
    ]
