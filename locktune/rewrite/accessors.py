"""Lock accessors for wrapper functions named with --lock-wrapper.

memcached locks an item with `item_lock(hv)`, a function of thread.c whose body is
`mutex_lock(&item_locks[hv & hashmask(item_lock_hashpower)])`, and `item_locks` is static
to thread.c.  A section that calls item_lock() in items.c cannot be extracted as
`lt_execute(&item_locks[...], ...)`: that lock is not visible there.  So for each wrapper
function the user names (without its own :EXPR) whose body is one call of a lock
function, the rewriter

1. adds, after the wrapper in its own file, a function returning the lock it takes:

       pthread_mutex_t *lt_lock_of_item_lock(uint32_t hv)
       {
           return &item_locks[hv & hashmask(item_lock_hashpower)];
       }

   (the types pass then makes it an lt_mutex_t *; wrappers taking the same lock, such as
   item_unlock, share one accessor so that their sections pair);
2. tells locktune-extract `--lock-wrapper item_lock=lock:lt_lock_of_item_lock($1)`;
3. declares the accessor in locktune_config.h, which every rewritten file includes.

Only wrappers whose parameters have basic C types (ints, pointers to them, stdint.h
types) get one: their prototype must compile in the generated header.  Static wrappers
need none (their callers are in the same file, where extraction sees the lock itself).
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
    r"^(pthread_mutex_t|lt_mutex_t)\s*\*\s*(" + PREFIX + r"\w+)\s*\(([^)]*)\)\s*\{", re.MULTILINE
)


@dataclass
class Accessor:
    name: str  # lt_lock_of_item_lock
    file: str  # where the wrapper (and the accessor) is defined
    after: str  # the wrapper the accessor follows
    params: str  # "uint32_t hv"
    lock: str  # the expression returned, in terms of the parameters
    wrappers: dict[str, str] = field(default_factory=dict)  # wrapper -> role

    def spec(self, wrapper: str) -> str:
        nargs = 0 if self.params.strip() in ("", "void") else len(self.params.split(","))
        args = ", ".join(f"${k}" for k in range(1, nargs + 1))
        return f"{self.wrappers[wrapper]}:{self.name}({args})"

    def definition(self) -> str:
        names = [f"{w}()" for w in self.wrappers]
        who = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
        flags = " ".join(f"--lock-wrapper {w}={r}" for w, r in self.wrappers.items())
        comment = (
            f"The lock that {who} {'takes' if len(names) == 1 else 'take'}: critical sections "
            f"that call {'it' if len(names) == 1 else 'them'} in other files run on it "
            f"(added by locktune rewrite for {flags})."
        )
        lines = textwrap.wrap(comment, width=92, break_long_words=False, break_on_hyphens=False)
        return (
            "\n/* " + "\n * ".join(lines) + " */\n"
            f"pthread_mutex_t *{self.name}({self.params})\n"
            f"{{\n    return {self.lock};\n}}\n"
        )


def _function(text: str, name: str, line: int):
    """(params text, body text, index of the body's closing brace token, tokens) of the
    definition of `name` that starts on `line`, or None."""
    toks = clex.tokens(text)
    for i, t in enumerate(toks):
        if t.kind != "ident" or t.text != name or abs(t.line - line) > 3:
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
        return params, body, end, toks
    return None


def _basic(params: str) -> bool:
    if params.strip() in ("", "void"):
        return True
    for p in params.split(","):
        words = re.findall(r"\w+|\*", p)
        if len(words) < 2 or not words[-1].isidentifier():
            return False
        if any(w not in _BASIC and w != "*" for w in words[:-1]):
            return False
    return True


def plan(
    candidates: list[dict], texts: dict[str, str], named: dict[str, str], macros: dict[str, dict]
) -> tuple[list[Accessor], dict[str, str]]:
    """Accessors for the wrappers named without :EXPR, from lock_wrappers.cocci's candidates.

    Returns the accessors and why each other named function gets none (name -> reason)."""
    templates = wrappers.lock_templates(macros)
    static = {(c["file"], c["name"]) for c in candidates if c["kind"] == "static"}
    by_key: dict[tuple[str, str, str], Accessor] = {}
    skipped: dict[str, str] = {}
    for c in candidates:
        name = c["name"]
        if c["kind"] != "one-call" or name not in named or ":" in named[name]:
            continue
        if (c["file"], name) in static:
            skipped[name] = "static: its callers see the lock it takes"
            continue
        fn = _function(texts[c["file"]], name, c["line"])
        if fn is None:
            skipped[name] = "its definition could not be read"
            continue
        params, body, _end, _toks = fn
        call = re.fullmatch(r"\s*(?:return\s+)?(\w+)\s*\((.*)\)\s*;\s*", body, re.DOTALL)
        tpl = templates.get(call.group(1)) if call else None
        if tpl is None:
            skipped[name] = "its body is not one call of a lock function or known macro"
            continue
        if not _basic(params):
            skipped[name] = "its parameters are not all of basic C types"
            continue
        lock = wrappers.substitute(tpl, wrappers.split_args(call.group(2)))
        if lock is None:
            skipped[name] = "its lock call has too few arguments"
            continue
        params = " ".join(params.split())
        key = (c["file"], params, lock)
        acc = by_key.get(key)
        if acc is None:
            acc = by_key[key] = Accessor(PREFIX + name, c["file"], name, params, lock)
        acc.wrappers[name] = named[name]
    # Name each accessor after a locking wrapper when the group has one (item_lock, not
    # item_unlock) and keep the definitions in a stable order.
    out = []
    for acc in by_key.values():
        lockers = [w for w, r in acc.wrappers.items() if r == "lock"]
        if lockers:
            acc.name = PREFIX + lockers[0]
        out.append(acc)
    out.sort(key=lambda a: (a.file, a.name))
    return out, skipped


def insert(text: str, acc: Accessor, line_hint: int) -> str:
    """`text` with the accessor's definition after its wrapper's (unchanged if present)."""
    if re.search(rf"\b{acc.name}\s*\([^;{{]*\)\s*\{{", text):
        return text
    fn = _function(text, acc.after, line_hint)
    if fn is None:  # the wrapper moved: look anywhere
        for t in clex.tokens(text):
            if t.kind == "ident" and t.text == acc.after:
                fn = _function(text, acc.after, t.line)
                if fn is not None:
                    break
    if fn is None:
        return text
    _params, _body, end, toks = fn
    nl = text.find("\n", toks[end].start)
    at = len(text) if nl < 0 else nl + 1
    return text[:at] + acc.definition() + text[at:]


def prototypes(texts: dict[str, str]) -> list[str]:
    """Declarations of every accessor defined in the rewritten files, for the header."""
    protos = {}
    for text in texts.values():
        for m in _DEFINITION.finditer(text):
            protos[m.group(2)] = f"lt_mutex_t *{m.group(2)}({' '.join(m.group(3).split())});"
    return [protos[k] for k in sorted(protos)]
