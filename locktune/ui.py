"""Terminal output shared by every subcommand: progress on a terminal, quiet when piped."""

from __future__ import annotations

import sys


def progress(message: str) -> None:
    """Show a progress line on stderr when it is a terminal; stay silent when piped."""
    if sys.stderr.isatty():
        sys.stderr.write(f"\r\033[K{message}")
        sys.stderr.flush()


def progress_done(message: str = "") -> None:
    if sys.stderr.isatty():
        sys.stderr.write(f"\r\033[K{message}{chr(10) if message else ''}")
        sys.stderr.flush()


def table(headers: list[str], rows: list[list[object]], align: str | None = None) -> str:
    """A plain-text table for people.  `align` is one char per column: 'l' or 'r'."""
    cells = [[str(h) for h in headers]] + [["" if c is None else str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    align = align or "l" * len(headers)
    out = []
    for n, r in enumerate(cells):
        parts = [
            c.rjust(w) if a == "r" else c.ljust(w) for c, w, a in zip(r, widths, align, strict=True)
        ]
        out.append("  ".join(parts).rstrip())
        if n == 0:
            out.append("  ".join("-" * w for w in widths))
    return "\n".join(out)
