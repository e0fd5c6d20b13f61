"""Helpers shared by the profiler's tests: build the test programs, profile them."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

PROGRAMS = Path(__file__).resolve().parent / "programs"


def build(
    out_dir: Path,
    name: str,
    flags: list[str] | None = None,
    out: str | None = None,
    compiler: str = "cc",
) -> Path:
    exe = out_dir / (out or name)
    cmd = [compiler, "-O2", "-g", "-Wall", "-Wextra", "-Werror", "-pthread"]
    cmd += [*(flags or []), "-o", str(exe), str(PROGRAMS / f"{name}.c")]
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        raise AssertionError(f"compile failed: {' '.join(cmd)}\n{res.stderr}")
    return exe


def profile(run_locktune, out_dir: Path, exe: Path, *args: str, opts: tuple = (), **kw):
    """`locktune profile` on exe; returns (CompletedProcess, profile document or None)."""
    out = out_dir / f"{exe.name}-{abs(hash((args, opts))) % 10**8}.json"
    res = run_locktune(
        "profile",
        "-o",
        str(out),
        "--source-root",
        str(PROGRAMS),
        *opts,
        "--",
        str(exe),
        *args,
        **kw,
    )
    doc = json.loads(out.read_text()) if out.exists() else None
    return res, doc


def plain(exe: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(exe), *args], capture_output=True, text=True, timeout=120)


def markers(name: str) -> dict[str, tuple[int, int | None]]:
    """SITE:<name>[:<count>] markers of a test program: {name: (line, count)}."""
    found = {}
    for n, line in enumerate((PROGRAMS / f"{name}.c").read_text().splitlines(), 1):
        for m in re.finditer(r"SITE:(\w+)(?::(\d+))?", line):
            found[m.group(1)] = (n, int(m.group(2)) if m.group(2) else None)
    return found


def site_at(doc: dict, line: int, file: str | None = None) -> dict | None:
    for lock in doc["locks"]:
        s = lock["site"]
        if s["line"] == line and (file is None or s["file"] == file):
            return lock
    return None
