"""Where each line of a rewritten file came from.

Sites are file:line of the *original* source (the key the profiler uses), but the semantic
patches run on text that extraction has already reshaped: extracted functions are inserted
above their enclosing function and sections are replaced.  A LineMap follows the lines
through each step:

- lines that a step left untouched map through exactly (difflib's equal blocks);
- lines that carry a lock's birth (pthread_mutex_init calls, static initialisers) and moved
  with an extracted section are paired, in order, with the unmatched birth lines of the
  original: extraction keeps a section's statements in their order.
"""

from __future__ import annotations

import bisect
import difflib
import re

_BIRTH = re.compile(r"\bpthread_mutex_init\b|\bPTHREAD_\w*MUTEX_INITIALIZER\w*")


class LineMap:
    """current line (1-based) -> original line."""

    def __init__(self, mapping: dict[int, int] | None = None):
        self._map = mapping  # None: identity

    def __call__(self, line: int) -> int:
        if self._map is None:
            return line
        return self._map.get(line, line)

    @property
    def identity(self) -> bool:
        return self._map is None

    def then(self, before: str, after: str) -> LineMap:
        """The map for `after`, a rewrite of `before` (whose lines this map describes)."""
        if before == after:
            return self
        step = _step(before.splitlines(), after.splitlines())
        return LineMap({new: self(old) for new, old in step.items()})

    def as_json(self) -> dict[str, int]:
        return {str(k): v for k, v in sorted((self._map or {}).items())}


def _step(old: list[str], new: list[str]) -> dict[int, int]:
    mapping: dict[int, int] = {}
    unmatched_old: list[int] = []
    unmatched_new: list[int] = []
    i = j = 0
    for a, b, size in _matching_blocks(old, new):
        unmatched_old += [k + 1 for k in range(i, a) if _BIRTH.search(old[k])]
        unmatched_new += [k + 1 for k in range(j, b) if _BIRTH.search(new[k])]
        for k in range(size):
            mapping[b + k + 1] = a + k + 1
        i, j = a + size, b + size
    # Births that moved (or whose line changed) keep their relative order.
    for n, o in zip(unmatched_new, unmatched_old, strict=False):
        mapping[n] = o
    return mapping


# Up to this many lines (both texts together), difflib alone; beyond, difflib's longest
# matches cost up to the product of the lengths (every `}` line matches every other), so
# the texts are first cut at the lines that occur once in each (patience diff), in order,
# and difflib only sees the pieces between them.
DIFFLIB_LINES = 4000


def _matching_blocks(old: list[str], new: list[str]) -> list[tuple[int, int, int]]:
    """(i, j, n): old[i:i+n] == new[j:j+n], increasing in i and j, as difflib's
    get_matching_blocks (without its final sentinel)."""
    pairs: list[tuple[int, int]] = []
    _match(old, 0, len(old), new, 0, len(new), pairs)
    blocks: list[tuple[int, int, int]] = []
    for i, j in pairs:
        if blocks and blocks[-1][0] + blocks[-1][2] == i and blocks[-1][1] + blocks[-1][2] == j:
            blocks[-1] = (blocks[-1][0], blocks[-1][1], blocks[-1][2] + 1)
        else:
            blocks.append((i, j, 1))
    return blocks


def _match(a, alo, ahi, b, blo, bhi, out: list[tuple[int, int]]) -> None:
    """Append the pairs (i, j) of lines matched between a[alo:ahi] and b[blo:bhi]."""
    if (ahi - alo) + (bhi - blo) <= DIFFLIB_LINES:
        matcher = difflib.SequenceMatcher(None, a[alo:ahi], b[blo:bhi], autojunk=False)
        for i, j, n in matcher.get_matching_blocks():
            out.extend((alo + i + k, blo + j + k) for k in range(n))
        return
    while alo < ahi and blo < bhi and a[alo] == b[blo]:
        out.append((alo, blo))
        alo, blo = alo + 1, blo + 1
    tail = []
    while alo < ahi and blo < bhi and a[ahi - 1] == b[bhi - 1]:
        ahi, bhi = ahi - 1, bhi - 1
        tail.append((ahi, bhi))
    anchors = _unique_common(a, alo, ahi, b, blo, bhi)
    if not anchors:
        if alo < ahi and blo < bhi:
            matcher = difflib.SequenceMatcher(None, a[alo:ahi], b[blo:bhi], autojunk=False)
            for i, j, n in matcher.get_matching_blocks():
                out.extend((alo + i + k, blo + j + k) for k in range(n))
    else:
        i, j = alo, blo
        for ai, bj in anchors:
            _match(a, i, ai, b, j, bj, out)
            out.append((ai, bj))
            i, j = ai + 1, bj + 1
        _match(a, i, ahi, b, j, bhi, out)
    out.extend(reversed(tail))


def _unique_common(a, alo, ahi, b, blo, bhi) -> list[tuple[int, int]]:
    """The lines that occur exactly once in a[alo:ahi] and once in b[blo:bhi], as (i, j)
    pairs, the longest subsequence of them increasing in both."""
    count: dict[str, list[int]] = {}
    for i in range(alo, ahi):
        c = count.setdefault(a[i], [0, i, 0, -1])
        c[0] += 1
    for j in range(blo, bhi):
        c = count.get(b[j])
        if c is not None:
            c[2] += 1
            c[3] = j
    pairs = sorted((c[1], c[3]) for c in count.values() if c[0] == 1 and c[2] == 1)
    # longest increasing subsequence of the j's (patience sorting)
    tops: list[int] = []  # j of the smallest tail of each length
    tails: list[int] = []  # index in pairs of that tail
    back: list[int] = [-1] * len(pairs)
    for n, (_i, j) in enumerate(pairs):
        k = bisect.bisect_left(tops, j)
        if k == len(tops):
            tops.append(j)
            tails.append(n)
        else:
            tops[k], tails[k] = j, n
        back[n] = tails[k - 1] if k else -1
    seq = []
    n = tails[-1] if tails else -1
    while n >= 0:
        seq.append(pairs[n])
        n = back[n]
    return seq[::-1]
