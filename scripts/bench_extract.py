#!/usr/bin/env python3
"""Benchmark locktune-extract on memcached: how long it takes and what share it extracts.

    .venv/bin/python scripts/bench_extract.py [--repeat 10] [--out bench/results]

Gets memcached's original tree from the real-program runner's recipe (scripts/realprog.py:
its Debian source package fetched once with `apt-get source`, after `scripts/bootstrap
--deb-src`, and built by its own build under `bear` in a temporary folder), then runs locktune-extract over every file
memcached compiles, with those commands, --repeat times.  Writes
bench/results/extract-memcached.json (times min/median/max, the sections found, extracted
and kept with their reasons, the machine) and extract-memcached.svg.  The extraction runs in
one process over the whole tree, as `locktune rewrite` runs it; the target is well under 60 s.
"""

from __future__ import annotations

import argparse
import collections
import importlib.util
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from locktune import charts, machine, native  # noqa: E402


def memcached_tree(work: Path) -> Path:
    """memcached's original tree with its compile commands, made by the real-program runner's
    recipe (scripts/realprog.py: fetched once, built by its own build under bear): one owner
    for fetching and building it."""
    spec = importlib.util.spec_from_file_location("realprog", ROOT / "scripts" / "realprog.py")
    realprog = importlib.util.module_from_spec(spec)
    sys.modules["realprog"] = realprog  # its dataclasses look their module up
    spec.loader.exec_module(realprog)
    try:
        realprog.build_original(realprog.every_recipe()["memcached"], work)
    except realprog.Failed as e:
        sys.exit(f"bench_extract: error: {e}")
    return work / "original"


def kept_kind(reason: str) -> str:
    """Groups the kept reasons (lines, names and locks vary) for the summary."""
    r = re.sub(r"line \d+", "line N", reason)
    r = re.sub(r"'[^']*'", "'V'", r)
    r = re.sub(r"&\S+", "LOCK", r)
    r = re.sub(r"\b\w+\(\S*\)", "f()", r)
    return r.split(" (")[0].split(":")[0]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    ap.add_argument("--source", type=Path, help="an already configured memcached tree with "
                    "compile_commands.json (skips fetching and building)")  # fmt: skip
    args = ap.parse_args()

    tool = native.bin_path("locktune-extract")
    with tempfile.TemporaryDirectory(prefix="bench-extract-") as tmp:
        work = Path(tmp)
        src = args.source.resolve() if args.source else memcached_tree(work)
        db = json.loads((src / "compile_commands.json").read_text())
        files = sorted({str((Path(e["directory"]) / e["file"]).resolve()) for e in db})
        times, report = [], None
        for i in range(args.repeat):
            out = work / f"out{i}"
            t0 = time.perf_counter()
            res = subprocess.run(
                [str(tool), "-p", str(src), "--out-dir", str(out), "--source-root", str(src),
                 *files],
                capture_output=True, text=True, timeout=600,
            )  # fmt: skip
            times.append(time.perf_counter() - t0)
            if res.returncode != 0:
                sys.exit(f"bench_extract: error: locktune-extract failed: {res.stderr[-500:]}")
            report = report or json.loads(res.stdout)
            shutil.rmtree(out, ignore_errors=True)
            print(f"run {i + 1}/{args.repeat}: {times[-1]:.2f} s", file=sys.stderr)

    sections = [s for s in report["critical_sections"] if s["kind"] == "section"]
    extracted = [s for s in sections if s["status"] == "extracted"]
    kept = collections.Counter(kept_kind(s["reason"]) for s in sections if s["status"] == "kept")
    flags = collections.Counter(f for s in extracted for f in s["flags"])
    result = {
        "benchmark": "locktune-extract on memcached",
        "program": "memcached (Debian source package)",
        "files": len(files),
        "command": "locktune-extract -p SRC --out-dir OUT --source-root SRC FILE...",
        "seconds": {
            "min": min(times),
            "median": statistics.median(times),
            "max": max(times),
            "runs": times,
        },
        "target_seconds": 60,
        "sections": len(sections),
        "extracted": len(extracted),
        "kept": len(sections) - len(extracted),
        "extracted_share": len(extracted) / len(sections) if sections else None,
        "kept_reasons": dict(kept.most_common()),
        "flags": dict(flags),
        "wrapper_calls": report["summary"]["wrapper_calls"],
        "unlock_only": report["summary"]["unlock_only"],
        "files_rewritten": len(report["summary"]["files_rewritten"]),
        "machine": machine.describe(),
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "extract-memcached.json").write_text(json.dumps(result, indent=2) + "\n")
    svg = charts.bar_chart(
        f"locktune-extract on memcached ({len(files)} files, {args.repeat} runs)",
        ["min", "median", "max"],
        {"seconds": [min(times), statistics.median(times), max(times)]},
        y_label="seconds",
        reference=None,
    )
    (args.out / "extract-memcached.svg").write_text(svg)
    share = result["extracted_share"] or 0
    print(
        f"memcached: {len(files)} files in {statistics.median(times):.2f} s (median of "
        f"{args.repeat}); {len(extracted)}/{len(sections)} sections extracted ({share:.0%})"
    )
    for reason, n in kept.most_common():
        print(f"  kept {n:3d}  {reason}")
    print(f"results: {args.out / 'extract-memcached.json'}")


if __name__ == "__main__":
    os.environ.setdefault("LC_ALL", "C")
    main()
