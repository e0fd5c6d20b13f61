"""Reading profile.json (schema locktune-profile/1, DESIGN.md) for the generated header."""

from __future__ import annotations

import json
import os
from pathlib import Path

from locktune.errors import LocktuneError

SCHEMA = "locktune-profile/1"
ALGORITHMS = {
    "posix", "spin", "ticket", "twa", "mcs", "clh", "mcstp", "mcscr", "shfl", "shfl-block",
    "fc", "ccsynch", "dsmsynch", "oyama", "rcl", "lc",
}  # fmt: skip


def load(path: Path, source_root: Path) -> dict[tuple[str, int], dict]:
    """(file relative to the source root, line) -> the profile's lock entry."""
    try:
        doc = json.loads(path.read_text())
    except OSError as e:
        raise LocktuneError(f"{path}: {e.strerror}") from e
    except json.JSONDecodeError as e:
        raise LocktuneError(f"{path}:{e.lineno}: not JSON: {e.msg}") from e
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        found = doc.get("schema") if isinstance(doc, dict) else type(doc).__name__
        raise LocktuneError(f"{path}: not a locktune profile (schema {found!r}, expected {SCHEMA})")
    out: dict[tuple[str, int], dict] = {}
    for n, lock in enumerate(doc.get("locks", [])):
        site = lock.get("site") or {}
        file, line = site.get("file"), site.get("line")
        if not isinstance(file, str) or not isinstance(line, int):
            raise LocktuneError(f"{path}: locks[{n}] has no site file and line")
        algo = (lock.get("recommendation") or {}).get("algorithm")
        if algo is not None and algo not in ALGORITHMS:
            raise LocktuneError(
                f"{path}: locks[{n}] ({file}:{line}) recommends unknown algorithm {algo!r}"
            )
        out[(_relative(file, source_root), line)] = lock
    return out


def _relative(file: str, root: Path) -> str:
    p = Path(file)
    if p.is_absolute():
        try:
            return str(p.resolve().relative_to(root.resolve()))
        except ValueError:
            return file
    return os.path.normpath(file)
