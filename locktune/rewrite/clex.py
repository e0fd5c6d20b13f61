"""A small C lexer: enough to see identifiers, punctuation and preprocessor lines while
skipping comments and string/character literals.

The rewriter uses it where it must not be fooled by text that only looks like code: checking
that no pthread name survived the semantic patches, retargeting what Coccinelle could not
parse, and placing the #include lines.  It does not preprocess.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_TOKEN = re.compile(
    r"""
    (?P<ws>[ \t\f\v\r]+|\\\n)
  | (?P<nl>\n)
  | (?P<lcomment>//(?:[^\n\\]|\\.|\\\n)*)
  | (?P<bcomment>/\*.*?(?:\*/|\Z))
  | (?P<string>(?:u8|[uUL])?"(?:[^"\\\n]|\\.|\\\n)*"?)
  | (?P<char>(?:[uUL])?'(?:[^'\\\n]|\\.|\\\n)*'?)
  | (?P<ident>[A-Za-z_]\w*)
  | (?P<number>\.?\d(?:[eEpP][+-]|[\w.])*)
  | (?P<punct>\.\.\.|<<=|>>=|->|\+\+|--|<<|>>|<=|>=|==|!=|&&|\|\||[-+*/%&|^]=|\#\#|.)
    """,
    re.VERBOSE | re.DOTALL,
)


class Token:
    """One token (a small class with slots, not a dataclass: a big file has millions)."""

    __slots__ = ("kind", "text", "start", "line", "bol")

    def __init__(self, kind: str, text: str, start: int, line: int, bol: bool):
        self.kind = kind  # ident, number, string, char, punct
        self.text = text
        self.start = start  # offset in the text
        self.line = line  # 1-based
        self.bol = bol  # first token of its line (a '#' there starts a directive)

    def _key(self) -> tuple:
        return (self.kind, self.text, self.start, self.line, self.bol)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Token) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return f"Token{self._key()!r}"


def tokens(text: str) -> list[Token]:
    """Every token outside comments, in order."""
    out: list[Token] = []
    append = out.append
    line = 1
    bol = True
    for m in _TOKEN.finditer(text):
        kind = m.lastgroup
        if kind == "nl":
            line += 1
            bol = True
            continue
        s = m.group()
        if kind == "ws" or kind == "lcomment" or kind == "bcomment":
            if "\n" in s:
                line += s.count("\n")
            continue
        append(Token(kind, s, m.start(), line, bol))
        if "\n" in s:
            line += s.count("\n")
        bol = False
    return out


# Directives that test or remove a name rather than use it.  `#if
# defined(PTHREAD_MUTEX_INITIALIZER)` asks whether glibc's macro exists (libmicrohttpd's
# mhd_locks.h does): retargeted, it would not even parse, and the answer is the same for the
# rewritten program, which still includes pthread.h.
CONDITIONS = frozenset({"if", "ifdef", "ifndef", "elif", "elifdef", "elifndef", "undef"})


def on_conditions(toks: list[Token]) -> list[bool]:
    """For each token, whether it lies on a CONDITIONS directive (continuation lines
    included): the rewriter leaves those tokens as they are."""
    out: list[bool] = []
    cond = False
    for i, t in enumerate(toks):
        if t.bol:
            nxt = toks[i + 1] if i + 1 < len(toks) else None
            cond = t.text == "#" and nxt is not None and not nxt.bol and nxt.text in CONDITIONS
        out.append(cond)
    return out


def matching_paren(toks: list[Token], i: int) -> int | None:
    """Index of the ')' closing the '(' at toks[i], or None."""
    depth = 0
    for j in range(i, len(toks)):
        t = toks[j].text
        if t == "(":
            depth += 1
        elif t == ")":
            depth -= 1
            if depth == 0:
                return j
    return None


def line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


@dataclass
class Directive:
    """One preprocessor directive: its first and last physical line (1-based)."""

    name: str  # include, define, ifndef, if, ifdef, elif, else, endif, pragma, ...
    rest: str  # the text after the name, comments removed, continuations joined
    first: int
    last: int


def logical_lines(text: str) -> list[tuple[int, int, str]]:
    """(first line, last line, text without comments) for every logical line that holds
    something other than whitespace and comments."""
    out: list[tuple[int, int, str]] = []
    buf: list[str] = []
    first = None
    line = 1
    for m in _TOKEN.finditer(text):
        kind = m.lastgroup
        s = m.group()
        if kind == "nl":
            if buf:
                out.append((first, line, "".join(buf).strip()))
            buf, first = [], None
            line += 1
            continue
        if kind in ("lcomment", "bcomment", "ws"):
            if buf:
                buf.append(" ")
            line += s.count("\n")
            continue
        if first is None:
            first = line
        buf.append(s)
        line += s.count("\n")
    if buf:
        out.append((first, line, "".join(buf).strip()))
    return out


_DIRECTIVE = re.compile(r"#\s*(\w+)\s*(.*)", re.DOTALL)


def directive(logical: str) -> tuple[str, str] | None:
    m = _DIRECTIVE.fullmatch(logical)
    return (m.group(1), m.group(2).strip()) if m else None
