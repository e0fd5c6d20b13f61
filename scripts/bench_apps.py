#!/usr/bin/env python3
"""How lock-bound the bundled apps are: each app's throughput over a thread sweep, original
build (glibc pthread_mutex), and its hot lock's share of the time from a -DAPP_LOCKSTATS build.

    .venv/bin/python scripts/bench_apps.py --repeats 7 --out bench/results/apps-scaling

Every (app, threads) run is repeated; the runs are interleaved and shuffled (this machine's
cross-core latency drifts by phases, see the notes), and the figure reported per point is
min / median / max over the repeats.  The ratio is each thread count's median over the same
app's one-thread median, measured in the same run.  Writes OUT.json (with the machine
description) and OUT.svg (speed-up over one thread), and prints a table.  Every run's result
line must equal the one-thread run's: a mismatch fails the benchmark.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
APPS_DIR = ROOT / "testsuite" / "apps"
sys.path.insert(0, str(ROOT))

from locktune import charts, machine, ui  # noqa: E402

# name -> (op, hot lock, default arguments, --quick arguments)
APPS = {
    "raytrace": ("ray", "ridlock", [], ["-s", "192", "-r", "2"]),
    "wordcount": ("word", "table_locks", [], ["-n", "500000"]),
    "kvcache": ("request", "cache_lock", [], ["-n", "200000"]),
}
THROUGHPUT = re.compile(r"^throughput: ([0-9]+) ops/s$", re.M)
RESULT = re.compile(r"^result: (.+)$", re.M)
LOCKSTATS = re.compile(r"^lockstats: (.+)$", re.M)


def build(work: Path, name: str, cppflags: str = "") -> Path:
    src = work / f"{name}{'-lockstats' if cppflags else ''}"
    shutil.copytree(APPS_DIR / name, src)
    res = subprocess.run(
        ["make", "-C", str(src), f"CPPFLAGS={cppflags}"], capture_output=True, text=True
    )
    if res.returncode != 0:
        sys.exit(f"bench_apps: error: building {name} failed:\n{res.stderr}")
    return src / name


def run(exe: Path, args: list[str], timeout: float) -> subprocess.CompletedProcess:
    res = subprocess.run([str(exe), *args], capture_output=True, text=True, timeout=timeout)
    if res.returncode != 0:
        sys.exit(
            f"bench_apps: error: {exe.name} {' '.join(args)} exited with {res.returncode}: "
            f"{res.stderr.strip()}"
        )
    return res


def hot_lock_share(stderr: str, hot: str) -> dict:
    for line in LOCKSTATS.findall(stderr):
        f = dict(kv.split("=", 1) for kv in line.split())
        if f["name"] == hot:
            acq = int(f["acquisitions"])
            return {
                "held": float(f["held"]),
                "cs": float(f["cs"]),
                "contended_share": int(f["contended"]) / acq if acq else 0.0,
            }
    sys.exit(f"bench_apps: error: no lockstats line for {hot}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--apps", default=",".join(APPS), help="comma-separated (default: all)")
    ap.add_argument("--threads", default="1,2,4,8,32", help="thread counts (default 1,2,4,8,32)")
    ap.add_argument("--repeats", type=int, default=5, help="runs per point (default 5)")
    ap.add_argument("--quick", action="store_true", help="small workloads (a smoke test)")
    ap.add_argument("--timeout", type=float, default=300, help="seconds per run (default 300)")
    ap.add_argument(
        "--out",
        type=Path,
        default=ROOT / "bench" / "results" / "apps-scaling",
        help="output path without extension (default bench/results/apps-scaling)",
    )
    args = ap.parse_args()
    names = [a for a in args.apps.split(",") if a]
    unknown = [a for a in names if a not in APPS]
    if unknown:
        sys.exit(f"bench_apps: error: unknown app {', '.join(unknown)} (known: {', '.join(APPS)})")
    try:
        threads = sorted({int(t) for t in args.threads.split(",")})
    except ValueError:
        sys.exit(f"bench_apps: error: --threads must be integers, not '{args.threads}'")
    if 1 not in threads or min(threads) < 1 or args.repeats < 1:
        sys.exit("bench_apps: error: --threads must include 1 and --repeats must be at least 1")

    work = Path(tempfile.mkdtemp(prefix="bench-apps-"))
    try:
        plain, counted = {}, {}
        for name in names:
            ui.progress(f"building {name}")
            plain[name] = build(work, name)
            counted[name] = build(work, name, "-DAPP_LOCKSTATS")
        workload = {n: APPS[n][3] if args.quick else APPS[n][2] for n in names}

        samples = {(n, t): [] for n in names for t in threads}
        results = {}
        order = [(n, t) for n in names for t in threads]
        for r in range(args.repeats):
            random.shuffle(order)
            for i, (n, t) in enumerate(order):
                ui.progress(f"repeat {r + 1}/{args.repeats}: {n} -t {t} ({i + 1}/{len(order)})")
                res = run(plain[n], ["-t", str(t), *workload[n]], args.timeout)
                samples[n, t].append(float(THROUGHPUT.search(res.stdout).group(1)))
                result = RESULT.search(res.stdout).group(1)
                if results.setdefault(n, result) != result:
                    sys.exit(f"bench_apps: error: {n} -t {t}: result differs: {result}")

        shares = {}
        for n in names:
            for t in threads:
                ui.progress(f"lock share: {n} -t {t}")
                res = run(counted[n], ["-t", str(t), *workload[n]], args.timeout)
                shares[n, t] = hot_lock_share(res.stderr, APPS[n][1])
        ui.progress_done()
    finally:
        shutil.rmtree(work, ignore_errors=True)

    out = {
        "schema": "locktune-apps-scaling/1",
        "what": "throughput of the original apps (glibc pthread_mutex) over thread counts; "
        "ratio = median / same app's one-thread median, same run, interleaved",
        "command": [sys.argv[0], *sys.argv[1:]],
        "machine": machine.describe(),
        "repeats": args.repeats,
        "apps": {},
    }
    rows = []
    for n in names:
        base = statistics.median(samples[n, 1])
        points = {}
        for t in threads:
            s = samples[n, t]
            med = statistics.median(s)
            points[str(t)] = {
                "ops_per_s": {"min": min(s), "median": med, "max": max(s), "runs": s},
                "ratio_to_1_thread": med / base if base else None,
                "hot_lock": shares[n, t],
            }
            rows.append(
                [
                    n,
                    t,
                    f"{min(s):,.0f}",
                    f"{med:,.0f}",
                    f"{max(s):,.0f}",
                    f"{med / base:.2f}" if base else "-",
                    f"{100 * shares[n, t]['held']:.0f}%",
                    f"{100 * shares[n, t]['cs']:.0f}%",
                ]
            )
        out["apps"][n] = {
            "op": APPS[n][0],
            "hot_lock": APPS[n][1],
            "arguments": workload[n],
            "result": results[n],
            "threads": points,
        }

    args.out.parent.mkdir(parents=True, exist_ok=True)
    json_path, svg_path = args.out.with_suffix(".json"), args.out.with_suffix(".svg")
    json_path.write_text(json.dumps(out, indent=2) + "\n")
    svg_path.write_text(
        charts.line_chart(
            "Bundled apps, original build: throughput over one thread (median)",
            [float(t) for t in threads],
            {
                n: [out["apps"][n]["threads"][str(t)]["ratio_to_1_thread"] for t in threads]
                for n in names
            },
            y_label="ratio to one thread",
            x_label="threads",
            reference=1.0,
            log_x=True,
        )
    )
    print(
        ui.table(
            ["app", "threads", "min ops/s", "median", "max", "ratio", "hot held", "hot cs"],
            rows,
            "lrrrrrrr",
        )
    )
    print(f"\n{json_path}\n{svg_path}  ({time.strftime('%H:%M:%S')})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
