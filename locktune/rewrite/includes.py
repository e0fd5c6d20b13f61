"""Placing `#include "locktune.h"` (and the generated locktune_config.h) in a file.

The include goes after the file's leading block of preprocessor lines: after its
feature-test macros (_GNU_SOURCE and friends must precede every system header, and
locktune.h includes <pthread.h>) and after the includes that may define them (config.h),
but before the first line of code.  Conditional blocks are kept whole: the include never
lands inside an #if; a header guard (#ifndef X / #define X) does not count as one.
"""

from __future__ import annotations

import re

from locktune.rewrite import clex

_FEATURE = re.compile(r"_[A-Z0-9_]*SOURCE\w*|_FILE_OFFSET_BITS|_TIME_BITS|_REENTRANT|_THREAD_SAFE")


def has_include(text: str, name: str) -> bool:
    pat = re.compile(r'^\s*#\s*include\s*[<"](?:[^">]*/)?' + re.escape(name) + r'[">]', re.M)
    return bool(pat.search(text))


def insertion_line(text: str) -> int:
    """The 0-based index of the line before which the includes go."""
    logical = clex.logical_lines(text)
    depth = 0
    guard: str | None = None
    after = 0  # insert before this line index (0 = top of file)
    block_has_include = False
    for n, (_first, last, body) in enumerate(logical):
        d = clex.directive(body)
        if d is None:
            break  # first line of code
        name, rest = d
        if n == 0 and name == "ifndef" and len(logical) > 1:
            nxt = clex.directive(logical[1][2])
            if nxt and nxt[0] == "define" and nxt[1].split()[:1] == rest.split()[:1]:
                guard = rest.split()[0]
                continue
        if guard and n == 1:
            after = last
            continue
        if name in ("if", "ifdef", "ifndef"):
            depth += 1
        elif name == "endif":
            depth -= 1
            if depth == 0 and block_has_include:
                after = last
                block_has_include = False
            if depth < 0:  # the guard's #endif: the end of the file
                break
        elif name == "include":
            if depth == 0:
                after = last
            else:
                block_has_include = True
        elif (
            name == "define" and depth == 0 and _FEATURE.fullmatch(rest.split()[0] if rest else "")
        ):
            after = max(after, last)
        elif name == "pragma" and rest.startswith("once") and depth == 0:
            after = max(after, last)
    return after


def add_includes(text: str, lines_to_add: list[str]) -> str:
    """Insert each `#include ...` line that the file does not already have."""
    missing = [
        inc
        for inc in lines_to_add
        if not has_include(text, re.search(r'[<"]([^">]+)[">]', inc).group(1).split("/")[-1])
    ]
    if not missing:
        return text
    lines = text.splitlines(keepends=True)
    at = insertion_line(text)
    block = "".join(f"{inc}\n" for inc in missing)
    if at < len(lines) and at > 0 and lines[at - 1].strip() and not lines[at - 1].endswith("\n"):
        block = "\n" + block
    return "".join(lines[:at]) + block + "".join(lines[at:])
