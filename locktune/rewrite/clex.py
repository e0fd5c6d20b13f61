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


@dataclass(frozen=True)
class Token:
    kind: str  # ident, number, string, char, punct
    text: str
    start: int  # offset in the text
    line: int  # 1-based
    bol: bool  # first token of its line (a '#' there starts a directive)


def tokens(text: str) -> list[Token]:
    """Every token outside comments, in order."""
    out: list[Token] = []
    line = 1
    bol = True
    for m in _TOKEN.finditer(text):
        kind = m.lastgroup
        s = m.group()
        if kind == "nl":
            line += 1
            bol = True
            continue
        if kind in ("ws", "lcomment", "bcomment"):
            line += s.count("\n")
            continue
        out.append(Token(kind, s, m.start(), line, bol))
        line += s.count("\n")
        bol = False
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
