"""profile.json (schema locktune-profile/1, DESIGN.md "Files exchanged"): its one owner.

`analyze.build` makes the document; this module names its schema, writes it, reads it back
and checks it, for every part that uses one: `locktune report`, `locktune rewrite` (the
header's figures and algorithms), `locktune bench compare` (the recommended header).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from locktune import algorithms
from locktune.errors import LocktuneError

SCHEMA = "locktune-profile/1"


def write(doc: dict, path: Path) -> None:
    """Write atomically: a reader never sees half a profile."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(doc, indent=1) + "\n")
    tmp.replace(path)


def read(path: Path | str) -> dict:
    """The document, checked; a problem is one LocktuneError line naming the file (and the
    line of a JSON syntax error, or the lock entry at fault)."""
    try:
        text = Path(path).read_text()
    except OSError as e:
        raise LocktuneError(f"{path}: {e.strerror}") from e
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise LocktuneError(f"{path}:{e.lineno}: not JSON: {e.msg}") from e
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        found = doc.get("schema") if isinstance(doc, dict) else type(doc).__name__
        raise LocktuneError(
            f"{path}: not a locktune profile (schema {found!r}, expected {SCHEMA}); "
            "write one with `locktune profile`"
        )
    locks = doc.get("locks")
    if not isinstance(locks, list):
        raise LocktuneError(f"{path}: a profile without a `locks` list")
    known = algorithms.names()
    for n, lock in enumerate(locks):
        site = lock.get("site") if isinstance(lock, dict) else None
        if not isinstance(site, dict):
            raise LocktuneError(f"{path}: locks[{n}] has no site")
        file, line = site.get("file"), site.get("line")
        algo = (lock.get("recommendation") or {}).get("algorithm")
        if algo is not None and algo not in known:
            raise LocktuneError(
                f"{path}: locks[{n}] ({file}:{line}) recommends unknown algorithm {algo!r} "
                f"(this liblocktune has: {', '.join(known)})"
            )
    return doc


def by_site(doc: dict, path: Path | str, source_root: Path) -> dict[tuple[str, int], dict]:
    """(file relative to the source root, line) -> the lock entry: how the rewriter joins a
    profile to the sites it finds.  Every entry must have a site file and line."""
    out: dict[tuple[str, int], dict] = {}
    for n, lock in enumerate(doc["locks"]):
        file, line = lock["site"].get("file"), lock["site"].get("line")
        if not isinstance(file, str) or not isinstance(line, int):
            raise LocktuneError(f"{path}: locks[{n}] has no site file and line")
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
