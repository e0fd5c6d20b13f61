"""Lock wrapper macros a project defines around pthread calls, recognised without help.

Shapes recognised (after peeling `do { ... } while (0)`, braces, parentheses, a trailing
`;` and `(void)` casts from the body), for function-like macros only:

    #define LOCK(x)          pthread_mutex_lock(&(x))
    #define mutex_lock(m)    pthread_mutex_lock(m)
    #define THR_STATS_LOCK(c) pthread_mutex_lock(&c->thread->stats.mutex)
    #define STATS_LOCK()     do { pthread_mutex_lock(&stats_lock); } while (0)
    #define LOCK_Q(q)        mutex_lock(&(q)->lock)      (a wrapper of a wrapper)

Functions that wrap a lock (memcached's item_lock(hv)) are named by the user with
`--lock-wrapper NAME=lock|unlock|trylock`.
"""

from __future__ import annotations

import re

from locktune.rewrite import clex

ROLES = ("lock", "unlock", "trylock")
PTHREAD = {
    "pthread_mutex_lock": "lock",
    "pthread_mutex_unlock": "unlock",
    "pthread_mutex_trylock": "trylock",
    # the same calls once retargeted: a second run over rewritten code finds the same wrappers
    "lt_mutex_lock": "lock",
    "lt_mutex_unlock": "unlock",
    "lt_mutex_trylock": "trylock",
}

_DEFINE = re.compile(r"(\w+)\(([^)]*)\)\s+(.*)", re.DOTALL)
_CALL = re.compile(r"(\w+)\s*\((.*)\)", re.DOTALL)


def _peel(body: str) -> str:
    b = body.strip()
    while True:
        prev = b
        m = re.fullmatch(r"do\s*(.*?)\s*while\s*\(\s*0\s*\)\s*;?", b, re.DOTALL)
        if m:
            b = m.group(1).strip()
        if b.startswith("{") and b.endswith("}"):
            b = b[1:-1].strip()
        b = b.rstrip(";").strip()
        if b.startswith("(void)"):
            b = b[len("(void)") :].strip()
        if b.startswith("(") and b.endswith(")") and _balanced(b[1:-1]):
            b = b[1:-1].strip()
        if b == prev:
            return b


def _balanced(s: str) -> bool:
    depth = 0
    for c in s:
        depth += c == "("
        depth -= c == ")"
        if depth < 0:
            return False
    return depth == 0


def macro_definitions(text: str) -> list[tuple[str, str, int]]:
    """(name, "params) body" text, line) of every function-like #define in `text`."""
    out = []
    for first, _last, body in clex.logical_lines(text):
        d = clex.directive(body)
        if d and d[0] == "define":
            m = re.match(r"(\w+)\(", d[1])
            if m:
                out.append((m.group(1), d[1], first))
    return out


def split_args(text: str) -> list[str]:
    """The arguments of a call, as written: `a, f(b, c), d[1]` -> ['a', 'f(b, c)', 'd[1]']."""
    out, depth, start = [], 0, 0
    for t in clex.tokens(text):
        if t.text in "([{":
            depth += 1
        elif t.text in ")]}":
            depth -= 1
        elif t.text == "," and depth == 0:
            out.append(text[start : t.start].strip())
            start = t.start + 1
    last = text[start:].strip()
    return out + [last] if last or out else []


def substitute(template: str, args: list[str]) -> str | None:
    """`&($1)` with args ['x'] -> `&(x)`; None when the template needs a missing argument."""

    def arg(m: re.Match) -> str:
        k = int(m.group(1))
        if k > len(args):
            raise IndexError
        return args[k - 1]

    try:
        return re.sub(r"\$(\d+)", arg, template)
    except IndexError:
        return None


def _template(callee_template: str, args: list[str], params: list[str]) -> str | None:
    """The lock a macro takes, in terms of its own parameters ($1, $2...)."""
    lock = substitute(callee_template, args)
    if lock is None:
        return None
    for k, p in enumerate(params, 1):
        # a parameter, not a field of the same name (x.p, x->p)
        lock = re.sub(rf"(?<!\.)(?<!->)\b{re.escape(p)}\b", f"${k}", lock)
    return lock


def find(texts: dict[str, str], known: dict[str, str] | None = None) -> dict[str, dict]:
    """Wrapper macros in the files `texts` (rel -> text): name -> {role, file, line,
    template}; `template` is the lock the macro takes, with $1, $2... for its arguments
    (None when the lock is not a plain function of them)."""
    roles: dict[str, str] = dict(PTHREAD)
    roles.update(known or {})
    templates: dict[str, str | None] = {n: "$1" for n in PTHREAD}
    found: dict[str, dict] = {}
    defs = [(rel, *d) for rel, text in sorted(texts.items()) for d in macro_definitions(text)]
    changed = True
    while changed:  # a wrapper of a wrapper is found on the next round
        changed = False
        for rel, name, definition, line in defs:
            if name in roles:
                continue
            m = _DEFINE.fullmatch(definition)
            if not m:
                continue
            call = _CALL.fullmatch(_peel(m.group(3)))
            args = call.group(2) if call else ""
            if call and call.group(1) in roles and ";" not in args and _balanced(args):
                callee = call.group(1)
                roles[name] = roles[callee]
                params = [p.strip() for p in m.group(2).split(",") if p.strip()]
                tpl = templates.get(callee)
                templates[name] = _template(tpl, split_args(args), params) if tpl else None
                found[name] = {
                    "role": roles[name],
                    "file": rel,
                    "line": line,
                    "template": templates[name],
                }
                changed = True
    return found


def lock_templates(found: dict[str, dict]) -> dict[str, str]:
    """callee -> the lock it takes ($1...): the pthread and lt_ calls and the macros found."""
    out = {n: "$1" for n in PTHREAD}
    out.update({n: w["template"] for n, w in found.items() if w.get("template")})
    return out
