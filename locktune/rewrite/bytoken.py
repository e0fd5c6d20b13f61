"""The retargeting of the semantic patches, done on clex's tokens in one pass over the file.

Coccinelle parses the whole file again for each of its four passes (cocci.PASSES), and its
cost grows faster than the file: a 20,000-line file takes seconds per pass, a 250,000-line
amalgamation more than five minutes.  The patches only rename and add site arguments, so
the same result can be had from the tokens, in time linear in the file.  `retarget` does
what the four passes do, with the same site rules (docs/rewrite.md, "Sites"):

    mutex_init         pthread_mutex_init(M, A)  -> lt_mutex_init(M, A, SITE)
                       (two arguments; SITE is the line of the call; `, SITE` goes right
                       after A, before any comment)
    mutex_initializer  PTHREAD_*MUTEX_INITIALIZER* -> LT_*_INITIALIZER*(SITE), SITE being
                       the line of the declarator it initialises (the enclosing one: a
                       struct or array initialiser counts for its variable)
    mutex_zeroed       `static pthread_mutex_t x;` anywhere, `pthread_mutex_t x;` at file
                       scope (not extern, not a typedef, not a struct field, any other
                       qualifier allowed), each plain declarator followed by `,` or `;`:
                       `x = LT_MUTEX_INITIALIZER(SITE)`, unless the file calls
                       pthread_mutex_init(&x, A) or lt_mutex_init(&x, A, S)
    retarget           the renames of residue.RENAMES, every token

Inside a preprocessor directive (a macro body) it does what Coccinelle and the residue
pass together do there: init calls as above, initialisers take the site of their own line
(Coccinelle leaves them to the residue pass), zeroed declarations are left alone.  The
directives that test or remove a name (`#if defined(PTHREAD_MUTEX_INITIALIZER)`, `#ifdef`,
`#undef`: clex.CONDITIONS) are left as they are.

Where it differs from Coccinelle (docs/rewrite.md, "Coccinelle or tokens"):
- an initialiser outside any declaration, `*m = (pthread_mutex_t)PTHREAD_MUTEX_INITIALIZER`,
  takes the site of its own line; Coccinelle takes the nearest declaration before it,
  whatever it declares;
- Coccinelle re-wraps a line it lengthens past 80 columns (`, SITE` on a line of its own);
  here every line stays where it was.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from locktune.rewrite import clex, residue
from locktune.rewrite import sites as sites_mod

_OPEN = {"(": ")", "[": "]", "{": "}"}
_CLOSE = {")", "]", "}"}
_SPECIFIERS = {
    "static", "extern", "typedef", "const", "volatile", "register", "auto", "__thread",
    "_Thread_local", "thread_local", "restrict", "__restrict", "__restrict__", "__volatile__",
    "__const",
}  # fmt: skip
_NOT_TYPES = {
    "return", "case", "goto", "else", "do", "sizeof", "if", "while", "for", "switch",
    "break", "continue", "default",
}  # fmt: skip
_AGGREGATES = {"struct", "union", "enum"}


@dataclass
class Result:
    text: str
    sites: list[dict]  # as the patches log them (cocci/locktune_sites.py)
    changed: int  # names and initialisers changed


# orig_line(line now) -> the line of the original source (a LineMap)
OrigLine = Callable[[int], int]


class _File:
    """The tokens of one file, split into code and directives, with the brace structure."""

    def __init__(self, text: str):
        self.text = text
        toks = clex.tokens(text)
        self.code: list[clex.Token] = []  # tokens outside directives
        self.directive: list[clex.Token] = []  # tokens inside directives
        in_dir = False
        for t, tested in zip(toks, clex.on_conditions(toks), strict=True):
            if t.bol:
                in_dir = t.text == "#"
            if not tested:  # `#if defined(NAME)`: left as it is (clex.CONDITIONS)
                (self.directive if in_dir else self.code).append(t)
        n = len(self.code)
        self.match = [-1] * n  # index of the matching bracket, both ways
        self.scope = [""] * n  # kind of the innermost brace around each token
        self.function: list[str | None] = [None] * n  # enclosing function's name
        self._structure()

    def _structure(self) -> None:
        code = self.code
        stack: list[tuple[int, str, str | None]] = []  # (index, kind, function)
        for i, t in enumerate(code):
            top = stack[-1] if stack else (-1, "", None)
            self.scope[i] = top[1]
            self.function[i] = top[2]
            s = t.text
            if t.kind != "punct":
                continue
            if s in _OPEN:
                kind, fn = top[1], top[2]
                if s == "{":
                    kind, fn = self._brace_kind(i, top[1], top[2])
                stack.append((i, kind if s == "{" else top[1], fn))
            elif s in _CLOSE and stack:
                j = stack.pop()[0]
                if _OPEN.get(code[j].text) == s:
                    self.match[i], self.match[j] = j, i

    def _brace_kind(self, i: int, outer: str, fn: str | None) -> tuple[str, str | None]:
        """What a `{` opens: fn (a function body), block, agg (struct body), init."""
        code = self.code
        prev = code[i - 1].text if i else ""
        if prev == "=" or (outer == "init" and prev in ("{", ",", "=")):
            return "init", fn
        if prev in _AGGREGATES or (
            i >= 2 and code[i - 1].kind == "ident" and code[i - 2].text in _AGGREGATES
        ):
            return "agg", fn
        if outer == "agg":
            return "agg", fn
        if outer in ("fn", "block"):
            return "block", fn
        if outer == "init":
            return "init", fn
        return "fn", self._function_name(i)

    def _function_name(self, i: int) -> str | None:
        """The name of the function whose body opens at code[i] (`f(...) {`), or None."""
        code = self.code
        j = i - 1
        while j >= 0 and code[j].text == ")":
            open_i = self.match[j]
            if open_i <= 0:
                return None
            before = code[open_i - 1]
            if before.text == "(" and open_i >= 2 and code[open_i - 2].text == "__attribute__":
                j = open_i - 3  # f(void) __attribute__((x)) {
                continue
            if before.text in ("__attribute__", "__asm__", "asm"):
                j = open_i - 2
                continue
            return before.text if before.kind == "ident" else None
        return None


def retarget(text: str, rel: str, orig_line: OrigLine) -> Result:
    """`text` with every pthread mutex and condition-variable name retargeted as the
    semantic patches do, and the sites found (see the module docstring)."""
    f = _File(text)
    edits: list[tuple[int, int, str]] = []  # (start, end, replacement)
    found: list[dict] = []

    def site(line: int, kind: str, name: str, function: str | None) -> str:
        orig = orig_line(line)
        ident = sites_mod.ident(rel, orig)
        found.append(
            {"file": rel, "line": orig, "kind": kind, "name": name, "function": function,
             "ident": ident}
        )  # fmt: skip
        return ident

    initialised = _initialised(f.code) | _initialised(f.directive)
    for toks, in_code in ((f.code, True), (f.directive, False)):
        for i, t in enumerate(toks):
            if t.kind != "ident":
                continue
            name = t.text
            if name == "pthread_mutex_t" and in_code:
                for d in _zeroed(f, i, initialised):
                    tok = f.code[d]
                    ident = site(tok.line, "static", tok.text, None)
                    edits.append((_end(tok), _end(tok), f" = LT_MUTEX_INITIALIZER({ident})"))
                edits.append((t.start, t.start + len(name), residue.RENAMES[name]))
            elif name in residue.RENAMES:
                edits.append((t.start, t.start + len(name), residue.RENAMES[name]))
            elif name in residue.INITIALIZERS:
                decl = _declarator(f, i) if in_code else None
                if decl is None:
                    ident = site(t.line, "static", "?", None)
                else:
                    d = f.code[decl]
                    array = decl + 1 < len(f.code) and f.code[decl + 1].text == "["
                    ident = site(d.line, "array" if array else "static", d.text, None)
                rep = f"{residue.INITIALIZERS[name]}({ident})"
                edits.append((t.start, t.start + len(name), rep))
            elif name == residue.INIT:
                args = _call_args(toks, i, f.match if in_code else None)
                if args is None or len(args) != 2:
                    continue
                (m_first, m_last), (_a_first, a_last) = args
                lock = residue._lock_name(text[toks[m_first].start : _end(toks[m_last])])
                ident = site(t.line, "init", lock, f.function[i] if in_code else None)
                edits.append((t.start, t.start + len(name), "lt_mutex_init"))
                edits.append((_end(toks[a_last]), _end(toks[a_last]), f", {ident}"))
    edits.sort(key=lambda e: (e[0], e[1]))
    out, at = [], 0
    for start, end, rep in edits:
        out.append(text[at:start])
        out.append(rep)
        at = end
    out.append(text[at:])
    return Result("".join(out), found, len(edits))


def _end(t: clex.Token) -> int:
    return t.start + len(t.text)


def _call_args(toks: list[clex.Token], i: int, match: list[int] | None):
    """[(first, last) token index of each argument] of the call whose name is toks[i]."""
    if i + 1 >= len(toks) or toks[i + 1].text != "(":
        return None
    close = match[i + 1] if match is not None else clex.matching_paren(toks, i + 1)
    if close is None or close < 0:
        return None
    args, depth, first = [], 0, i + 2
    for j in range(i + 2, close):
        s = toks[j].text
        if s in _OPEN:
            depth += 1
        elif s in _CLOSE:
            depth -= 1
        elif s == "," and depth == 0:
            args.append((first, j - 1))
            first = j + 1
    args.append((first, close - 1))
    return None if any(a > b for a, b in args) else args


def _initialised(toks: list[clex.Token]) -> set[str]:
    """x of every pthread_mutex_init(&x, A) and lt_mutex_init(&x, A, S) (mutex_zeroed.cocci
    leaves those locks to their call)."""
    out = set()
    for i, t in enumerate(toks):
        if t.text not in (residue.INIT, "lt_mutex_init"):
            continue
        args = _call_args(toks, i, None)
        want = 2 if t.text == residue.INIT else 3
        if args is None or len(args) != want:
            continue
        first, last = args[0]
        if last == first + 1 and toks[first].text == "&" and toks[last].kind == "ident":
            out.add(toks[last].text)
    return out


def _declarator(f: _File, i: int) -> int | None:
    """Index (in f.code) of the declarator whose initialiser holds the token f.code[i], or
    None when it is not in a declaration's initialiser."""
    code = f.code
    j = i - 1
    while j >= 0:
        t = code[j]
        s = t.text
        if s in _CLOSE:
            j = f.match[j] - 1 if f.match[j] >= 0 else -1
            continue
        if s in _OPEN:
            if s != "{":
                return None  # an argument of a call, a cast's operand...
            j -= 1  # leaving an initialiser list
            continue
        if s == ";":
            return None
        if s == "=":
            k = j - 1
            while k >= 0 and code[k].text == "]" and f.match[k] >= 0:
                k = f.match[k] - 1
            if k < 0:
                return None
            if code[k].kind != "ident" or (k >= 1 and code[k - 1].text in (".", "->")):
                if code[k].text in ("{", ","):  # [3] = ..., a designator
                    j = k
                    continue
                if code[k].kind == "ident":  # .field = ..., a designator
                    j = k - 1
                    continue
                return None
            return k if _declares(f, k) else None
        j -= 1
    return None


def _declares(f: _File, k: int) -> bool:
    """Whether the identifier f.code[k] followed by `=` is a declarator (not an assignment)."""
    code = f.code
    j = k - 1
    while j >= 0 and code[j].text in ("*", "const", "volatile", "restrict", "__restrict"):
        j -= 1
    if j < 0:
        return False
    t = code[j]
    if t.kind == "ident":
        return t.text not in _NOT_TYPES
    if t.text == ",":
        return True  # int a = 1, b = ...
    return t.text == "}" and _agg_close(f, j)  # struct s { ... } x = ...


def _agg_close(f: _File, j: int) -> bool:
    """Whether the `}` at f.code[j] closes a struct, union or enum body."""
    open_i = f.match[j]
    return open_i >= 0 and open_i + 1 < len(f.code) and f.scope[open_i + 1] == "agg"


def _zeroed(f: _File, i: int, initialised: set[str]) -> list[int]:
    """The declarators of the declaration whose type is f.code[i] (`pthread_mutex_t`) that
    mutex_zeroed.cocci gives an initialiser: indexes in f.code."""
    code = f.code
    scope = f.scope[i]
    if scope in ("agg", "init"):
        return []
    j = i - 1
    specifiers = set()
    while j >= 0 and code[j].kind == "ident" and code[j].text in _SPECIFIERS:
        specifiers.add(code[j].text)
        j -= 1
    if j >= 0 and code[j].text not in (";", "{", "}"):
        return []  # a parameter, a cast, sizeof, a type after another word
    if "extern" in specifiers or "typedef" in specifiers:
        return []
    if scope in ("fn", "block") and "static" not in specifiers:
        return []  # automatic: pthread_mutex_init brings it to life
    out = []
    depth = 0
    start = i + 1
    for j in range(i + 1, len(code)):
        s = code[j].text
        if s in _OPEN:
            if s == "{" and depth == 0 and code[j - 1].text != "=":
                return out  # a function's body: not a declaration of variables
            depth += 1
        elif s in _CLOSE:
            depth -= 1
            if depth < 0:
                return out
        elif depth == 0 and s in (",", ";"):
            if (
                j == start + 1
                and code[start].kind == "ident"
                and code[start].text not in (initialised)
            ):
                out.append(start)
            if s == ";":
                return out
            start = j + 1
    return out
