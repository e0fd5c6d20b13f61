"""profile.json (schema locktune-profile/1, DESIGN.md "Files exchanged"): its one owner.

`analyze.build_run` makes the document; this module names its schema, writes it, reads it
back and checks it, for every part that uses one: `locktune report`, `locktune rewrite` (the
header's figures and algorithms), `locktune bench compare` (the recommended header).

The contract's schema name stays: fields are only ever added, never renamed, so a reader
ignores what it does not know and a document without a later field is still read.  Added
since the first documents (each optional when reading):
  - `processes[]`: every process of the run (a forked child, an exec'd program), each with
    its own meta (pid, parent_pid, started_by, command line), totals, locks and condition
    variables ("one profile per process", DESIGN.md).  Without it, the document is one
    process's and its `locks` are that process's.
  - the top-level `locks` are then the sites of all processes merged by site (file:line),
    each with its `processes`;
  - `condition_variables[]` (waits, timed waits, timeouts, wait time, signals and
    broadcasts, those that found no waiter), and `owner_changes` per lock site.
  - per lock, `callsites[]` (DESIGN.md): the places it is acquired, by critical-section
    time: `file`, `line`, `function` of the caller of lock, trylock, timedlock (or of a
    condition wait, whose return starts a section), `acquisitions`, `contended`, `hold_ns`,
    `wait_ns`, and added `cs_ns`, `cs_percent`, `timed_acquisitions`, `module`, `symbol`
    (no debug information); callers past the profiler's table are one entry with
    `other_callers`: true and no file.  `section_times` joins them to the rewriter's
    critical sections.
"""

from __future__ import annotations

import os
from pathlib import Path

from locktune import algorithms, jsondoc
from locktune.errors import LocktuneError

SCHEMA = "locktune-profile/1"


def write(doc: dict, path: Path) -> None:
    """Write atomically: a reader never sees half a profile."""
    jsondoc.write(doc, path)


def read(path: Path | str) -> dict:
    """The document, checked; a problem is one LocktuneError line naming the file (and the
    line of a JSON syntax error, or the lock entry at fault)."""
    doc = jsondoc.read(path, SCHEMA, "a locktune profile", "write one with `locktune profile`")
    locks = doc.get("locks")
    if not isinstance(locks, list):
        raise LocktuneError(f"{path}: a profile without a `locks` list")
    procs = doc.get("processes", [])
    if not isinstance(procs, list) or not all(
        isinstance(p, dict) and isinstance(p.get("locks", []), list) for p in procs
    ):
        raise LocktuneError(f"{path}: `processes` is not a list of processes with `locks`")
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
    profile to the sites it finds.  The entries are the sites of every process of the run,
    summed (every process's), so the workers of a program count.  Every entry of the launched
    program's executable must have a site file and line; one used only by other programs
    the run started (a helper without debug information) is left out."""
    out: dict[tuple[str, int], dict] = {}
    launched = _launched_images(doc)
    for n, lock in enumerate(doc["locks"]):
        file, line = lock["site"].get("file"), lock["site"].get("line")
        if not isinstance(file, str) or not isinstance(line, int):
            if not _used_by(lock, launched):
                continue  # only another program of the run (a helper it ran) had it
            site = lock["site"]
            name = site.get("symbol") or site.get("function") or "?"
            raise LocktuneError(
                f"{path}: locks[{n}] ({name}) has no site file and line: its program was "
                "profiled without debug information; rebuild it with -g, or name the folder "
                "of its debug files in $LOCKTUNE_DEBUG_DIRS, and profile it again"
            )
        calls = lock.get("callsites")
        if isinstance(calls, list):  # callsite files as the rewriter names them, like sites
            lock = dict(lock)
            lock["callsites"] = [
                {**c, "file": _relative(c["file"], source_root)}
                if isinstance(c, dict) and isinstance(c.get("file"), str)
                else c
                for c in calls
            ]
        out[(_relative(file, source_root), line)] = lock
    return out


def section_times(lock: dict, sections: list[dict]) -> list[dict]:
    """Where a lock entry of `by_site` spends its critical-section time, joined to the
    rewriter's critical sections of its site (`sections`: dicts with `file`, `line` of the
    lock call, `status`, `function`): a callsite is the section whose lock call is on its
    line.  One dict per callsite with time, by time: {file, line, function, cs_ns,
    share_percent (of the lock's critical-section time), acquisitions, contended,
    other_callers, section (the matching section or None)}."""
    total = lock.get("cs_ns") or 0
    by_line: dict[tuple, dict] = {}
    for sec in sections:
        by_line.setdefault((sec.get("file"), sec.get("line")), sec)
    out = []
    for c in lock.get("callsites") or []:
        if not isinstance(c, dict) or not (c.get("cs_ns") or c.get("acquisitions")):
            continue
        cs = c.get("cs_ns") or 0
        out.append(
            {
                "file": c.get("file"),
                "line": c.get("line"),
                "function": c.get("function"),
                "cs_ns": cs,
                "share_percent": 100.0 * cs / total if total else 0.0,
                "acquisitions": c.get("acquisitions") or 0,
                "contended": c.get("contended") or 0,
                "other_callers": bool(c.get("other_callers")),
                "section": by_line.get((c.get("file"), c.get("line"))),
            }
        )
    out.sort(key=lambda x: -x["cs_ns"])
    return out


def _launched_images(doc: dict) -> set[tuple[int, int]] | None:
    """(pid, image) of every process of the run that ran the launched program's executable;
    None for a document without processes (every site is then the program's)."""
    procs = doc.get("processes")
    if not procs:
        return None
    exe = (doc.get("meta") or {}).get("executable")
    return {
        (p["meta"].get("pid"), p["meta"].get("image"))
        for p in procs
        if p.get("meta", {}).get("executable") == exe
    }


def _used_by(lock: dict, images: set[tuple[int, int]] | None) -> bool:
    where = lock.get("processes")
    if images is None or not where:
        return True
    return any((q.get("pid"), q.get("image")) in images for q in where)


def _relative(file: str, root: Path) -> str:
    p = Path(file)
    if p.is_absolute():
        try:
            return str(p.resolve().relative_to(root.resolve()))
        except ValueError:
            return file
    return os.path.normpath(file)


def processes(doc: dict) -> list[dict]:
    """The document's processes, each {meta, totals, locks, condition_variables}: a
    version-1 document (or one written without them) is its one process."""
    procs = doc.get("processes")
    if procs:
        return procs
    meta = doc.get("meta") or {}
    return [
        {
            "meta": {**meta, "started_by": "launch", "busiest": bool(doc.get("locks"))},
            "totals": doc.get("totals") or {},
            "locks": doc.get("locks") or [],
            "condition_variables": doc.get("condition_variables") or [],
        }
    ]
