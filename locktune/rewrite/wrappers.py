"""Lock wrapper macros a project defines around pthread calls, recognised without help.

Shapes recognised (after peeling `do { ... } while (0)`, braces, parentheses, a trailing
`;` and `(void)` casts from the body), for function-like macros only:

    #define LOCK(x)          pthread_mutex_lock(&(x))
    #define mutex_lock(m)    pthread_mutex_lock(m)
    #define THR_STATS_LOCK(c) pthread_mutex_lock(&c->thread->stats.mutex)
    #define STATS_LOCK()     do { pthread_mutex_lock(&stats_lock); } while (0)
    #define LOCK_Q(q)        mutex_lock(&(q)->lock)      (a wrapper of a wrapper)

Functions that wrap a lock (memcached's item_lock(hv), xz's mythread_mutex_lock) are found
by Clang in the whole-program listing (`functions()` below); `--lock-wrapper
NAME=lock|unlock|trylock` names others, and overrides what was found.
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


def functions(
    listing: dict | None, macros: dict[str, dict], named: dict[str, str]
) -> tuple[dict[str, dict], dict[str, str]]:
    """Lock wrapper functions found by `locktune-extract --list-functions` (its
    `lock_wrappers`, WrapperShape.h): name -> {role, file, line, static, lock}, and for the
    functions that come close, name -> "file:line: why not".

    A static function (in its file, or static inline in a header) is a wrapper in every
    translation unit that defines it: the extractor sees its body there.  A function with
    external linkage is a wrapper when every definition listed agrees on the role (an empty
    stub elsewhere, such as memcached testapp's STATS_LOCK, is not listed and is fine).
    Macros found and names given with --lock-wrapper take precedence."""
    records = (listing or {}).get("lock_wrappers", [])
    by_name: dict[str, list[dict]] = {}
    for r in records:
        if r["name"] not in macros and r["name"] not in named and r["name"] not in PTHREAD:
            by_name.setdefault(r["name"], []).append(r)
    found: dict[str, dict] = {}
    rejected: dict[str, str] = {}
    for name, recs in sorted(by_name.items()):
        recs = sorted(recs, key=lambda r: (r["file"], r["line"]))
        misses = [r for r in recs if r.get("not_wrapper")]
        roles = sorted({r["role"] for r in recs if r.get("role")})
        if misses:
            r = misses[0]
            rejected[name] = f"{r['file']}:{r['line']}: {r['not_wrapper']}"
            continue
        if len(roles) != 1:
            where = ", ".join(f"{r['file']}:{r['line']} {r['role']}s" for r in recs)
            rejected[name] = f"its definitions do not agree ({where})"
            continue
        first = recs[0]
        found[name] = {
            "role": roles[0],
            "file": first["file"],
            "line": first["line"],
            "static": all(r.get("static") for r in recs),
            "lock": first.get("lock"),
            "params": first.get("params", []),
            "definitions": [(r["file"], r["line"], r.get("lock")) for r in recs],
        }
    return found, rejected


def function_specs(found: dict[str, dict]) -> dict[str, str]:
    """What the extraction is told about the wrapper functions found with external linkage,
    as --lock-wrapper would tell it: `ROLE:LOCK` when the lock is written with the
    parameters only (`lock:&($1)->mutex`: every file can name it), else `ROLE` (an accessor
    then names it, accessors.py).  Static ones need nothing: each file that calls them sees
    their body."""
    out = {}
    for name, w in sorted(found.items()):
        if w["static"]:
            continue
        out[name] = w["role"]
        if w.get("lock") and all(d[2] == w["lock"] for d in w["definitions"]):
            tpl = w["lock"]
            for k, p in enumerate(w.get("params", []), 1):
                tpl = re.sub(rf"(?<!\.)(?<!->)\b{re.escape(p)}\b", f"(${k})", tpl)
            if _closed(tpl):
                out[name] = f"{w['role']}:{tpl}"
    return out


def _closed(template: str) -> bool:
    """True when a lock template names nothing but its arguments ($1...) and fields."""
    prev = None
    for t in clex.tokens(template):
        if t.kind == "ident" and prev not in (".", "->", "$"):
            return False
        prev = t.text
    return True
