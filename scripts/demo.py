#!/usr/bin/env python3
"""The README's demo: locktune's pipeline on a bundled legacy-style program.

Runs every stage that exists so far and says plainly which stages have not landed yet.
All artefacts go to one output folder (default out/demo-TIMESTAMP), printed at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
APPS = ROOT / "testsuite" / "apps"


def step(n: int, text: str) -> None:
    print(f"[{n}] {text}", flush=True)


def run(cmd: list[str], out: Path | None = None, **kw) -> subprocess.CompletedProcess:
    res = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if out is not None:
        out.write_text(res.stdout)
    if res.returncode not in kw.get("ok", (0,)):
        sys.stderr.write(res.stderr)
        sys.exit(f"demo: error: {' '.join(map(str, cmd))} exited with {res.returncode}")
    return res


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument(
        "--app", default="bank", help="bundled app under testsuite/apps (default: bank)"
    )
    ap.add_argument("--out", type=Path, help="output folder (default: out/demo-TIMESTAMP)")
    args = ap.parse_args()
    app_src = APPS / args.app
    if not app_src.is_dir():
        sys.exit(f"demo: error: no bundled app '{args.app}' in {APPS}")
    out = args.out or ROOT / "out" / time.strftime("demo-%Y%m%d-%H%M%S")
    out.mkdir(parents=True, exist_ok=True)
    locktune = shutil.which("locktune") or sys.exit("demo: error: `locktune` is not on PATH")

    step(1, "what this machine offers (locktune doctor)")
    doc = run([locktune, "doctor"], out / "doctor.txt")
    print("    " + doc.stdout.replace("\n", "\n    ").rstrip())
    run([locktune, "doctor", "--json"], out / "doctor.json")

    step(2, f"build the original program ({args.app}) with its own build")
    build = out / "original"
    shutil.copytree(app_src, build, dirs_exist_ok=True)
    run(["make", "-C", str(build), "-s"])
    binary = build / args.app
    t0 = time.perf_counter()
    res = run([str(binary), "4", "200000"], out / "original.out")
    print(f"    {res.stdout.strip()}  ({time.perf_counter() - t0:.2f} s)")

    step(3, "find its lock calls with Clang (locktune-extract)")
    from locktune import native  # noqa: PLC0415 - after bootstrap made the package importable

    extract = native.bin_path("locktune-extract")
    sources = sorted(str(p) for p in build.glob("*.c"))
    res = run([str(extract), *sources, "--", "-std=gnu11"], out / "lock-calls.json")
    calls = json.loads(res.stdout)["calls"]
    for c in calls:
        print(
            f"    {Path(c['file']).name}:{c['line']}  {c['call']}({c['lock']})  in {c['function']}()"
        )

    step(4, "count its lock operations under the preloaded profiler library")
    env = dict(
        os.environ,
        LD_PRELOAD=str(native.profiler_library()),
        LOCKTUNE_PROFILE_OUT=str(out / "counts.json"),
    )
    run([str(binary), "4", "200000"], env=env)
    counts = json.loads((out / "counts.json").read_text())
    print(
        f"    {counts['acquisitions']} acquisitions, {counts['contended']} contended; "
        f"hardware counters: {'yes' if counts['pmu']['available'] else 'no'}"
    )

    step(
        5,
        "not landed yet: per-site profile and report (#5), rewrite (#6), runtime algorithms "
        "(#3, #4), side-by-side comparison (#7)",
    )
    print(f"\nartefacts: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
