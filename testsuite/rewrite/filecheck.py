"""A small FileCheck for rewritten C: the expected shape of the output, written as comments
in the input program.

    // CHECK: text          the next line (after the previous match) containing text
    // CHECK-NEXT: text     the line right after the previous match contains text
    // CHECK-NOT: text      no line between the previous match and the next one contains it
    // CHECK-FILE: name     the following checks apply to that file of the rewritten tree

`text` is literal except {{regex}} parts; runs of blanks match any blanks.  Lines of the
output that carry a directive themselves (the comments survive rewriting) are ignored.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

DIRECTIVE = re.compile(r"//\s*(CHECK(?:-NEXT|-NOT|-FILE)?):\s?(.*)$")


@dataclass
class Check:
    kind: str
    pattern: str
    line: int  # in the check file, for messages


def parse(text: str) -> list[Check]:
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        m = DIRECTIVE.search(line)
        if m:
            out.append(Check(m.group(1), m.group(2).rstrip(), n))
    return out


def _regex(pattern: str) -> re.Pattern:
    parts = re.split(r"\{\{(.*?)\}\}", pattern.strip())
    rx = ""
    for i, part in enumerate(parts):
        if i % 2:
            rx += f"(?:{part})"
        else:
            words = part.split()
            if words:
                lead = r"\s*" if part[:1].isspace() and i else ""
                trail = r"\s*" if part[-1:].isspace() and i < len(parts) - 1 else ""
                rx += lead + r"\s+".join(re.escape(w) for w in words) + trail
    return re.compile(rx)


def run(checks: list[Check], files: dict[str, str], default: str) -> list[str]:
    """Failures, as messages; an empty list means every check passed."""
    failures = []
    groups: dict[str, list[Check]] = {}
    current = default
    for c in checks:
        if c.kind == "CHECK-FILE":
            current = c.pattern.strip()
            continue
        groups.setdefault(current, []).append(c)
    for name, group in groups.items():
        if name not in files:
            failures.append(f"CHECK-FILE {name}: no such file in the output")
            continue
        lines = [ln for ln in files[name].splitlines() if not DIRECTIVE.search(ln)]
        pos = 0  # index of the first line after the previous match
        last = -1
        nots: list[Check] = []
        for c in group:
            rx = _regex(c.pattern)
            if c.kind == "CHECK-NOT":
                nots.append(c)
                continue
            if c.kind == "CHECK-NEXT":
                found = last + 1 if last + 1 < len(lines) and rx.search(lines[last + 1]) else None
            else:
                found = next((i for i in range(pos, len(lines)) if rx.search(lines[i])), None)
            if found is None:
                where = f"after line {last + 1}" if last >= 0 else "anywhere"
                failures.append(
                    f"{name}: {c.kind} (check line {c.line}) not found {where}: {c.pattern}"
                )
                break
            failures += _nots(nots, lines, pos, found, name)
            nots = []
            pos, last = found + 1, found
        else:
            failures += _nots(nots, lines, pos, len(lines), name)
    return failures


def _nots(nots: list[Check], lines: list[str], start: int, end: int, name: str) -> list[str]:
    out = []
    for c in nots:
        rx = _regex(c.pattern)
        for i in range(start, end):
            if rx.search(lines[i]):
                out.append(
                    f"{name}:{i + 1}: CHECK-NOT (check line {c.line}) matched: {lines[i].strip()}"
                )
                break
    return out
