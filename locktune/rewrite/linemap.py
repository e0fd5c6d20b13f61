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
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    unmatched_old: list[int] = []
    unmatched_new: list[int] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            for k in range(i2 - i1):
                mapping[j1 + k + 1] = i1 + k + 1
            continue
        unmatched_old += [i + 1 for i in range(i1, i2) if _BIRTH.search(old[i])]
        unmatched_new += [j + 1 for j in range(j1, j2) if _BIRTH.search(new[j])]
    # Births that moved (or whose line changed) keep their relative order.
    unmatched_old.sort()
    unmatched_new.sort()
    for n, o in zip(unmatched_new, unmatched_old, strict=False):
        mapping[n] = o
    return mapping
