#!/usr/bin/env python3
"""memcached's clock-tick race under each RCL mode (issue 12, item 6; docs/delegation.md,
"Bounded mode").

memcached's own t/binary.t sets a key to expire in 1 s and reads it back at once with `gat`; the
read misses when memcached's clock ticks between the two commands.  How often that happens
depends on how long the pair takes.  This runs the pair PAIRS times (2 ms apart, as a test
driver does between commands) against the rewritten memcached of a work tree made by
scripts/memcached.py, under glibc's lock (posix) and RCL in each mode, with BUSY busy processes
beside it, ROUNDS times each (rotating through the configurations), and writes the misses and
the pair's round-trip percentiles as JSON plus a chart.

    scripts/bench_rcl_latency.py [-w WORK] [--busy 0,2] [--rounds 3] [--pairs 2000] [--results DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(ROOT))

import realprog  # noqa: E402

from locktune import charts  # noqa: E402

CONFIGS = {
    "posix": {"LOCKTUNE_ALGO": "default=posix"},
    "rcl bounded": {"LOCKTUNE_ALGO": "default=rcl", "LOCKTUNE_RCL_MODE": "bounded"},
    "rcl degraded": {"LOCKTUNE_ALGO": "default=rcl", "LOCKTUNE_RCL_MODE": "degraded"},
}


def cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.machine()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def connect(port: int, deadline: float) -> socket.socket:
    while True:
        try:
            return socket.create_connection(("127.0.0.1", port), timeout=10)
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.02)


def one_round(binary: Path, env: dict, pairs: int) -> dict:
    """PAIRS of (set k, 1 s) then (gat 10 k), 2 ms apart: misses, round trips (ms)."""
    port = free_port()
    proc = subprocess.Popen(
        [str(binary), "-u", "root", "-U", "0", "-l", "127.0.0.1", "-p", str(port)],
        env={**os.environ, **env},
    )
    try:
        sock = connect(port, time.monotonic() + 10)
        f = sock.makefile("rb", buffering=0)
        trips, misses = [], 0
        for _ in range(pairs):
            t = time.monotonic()
            sock.sendall(b"set k 0 1 5\r\ntoast\r\n")
            if f.readline() != b"STORED\r\n":
                raise RuntimeError("set: no STORED")
            sock.sendall(b"gat 10 k\r\n")
            line = f.readline()
            if line.startswith(b"VALUE"):
                f.readline()
                f.readline()
            elif line == b"END\r\n":
                misses += 1
            else:
                raise RuntimeError(f"gat: {line!r}")
            trips.append((time.monotonic() - t) * 1e3)
            time.sleep(0.002)
        sock.close()
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    trips.sort()
    q = lambda p: trips[int(p * (len(trips) - 1))]  # noqa: E731
    return {
        "pairs": pairs,
        "misses": misses,
        "median_ms": round(q(0.5), 4),
        "p90_ms": round(q(0.9), 4),
        "p99_ms": round(q(0.99), 4),
        "max_ms": round(trips[-1], 4),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("-w", "--work", type=Path, default=realprog.default_work("memcached"))
    ap.add_argument("--busy", default="0,2", help="busy processes beside it, per series (0,2)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--pairs", type=int, default=2000)
    ap.add_argument("--results", type=Path, default=ROOT / "bench/results/rcl-bounded-2cpu")
    args = ap.parse_args()
    binary = args.work.resolve() / "rewritten" / "memcached"
    if not binary.exists():
        print(f"bench_rcl_latency: error: {binary}: no rewritten memcached (scripts/memcached.py "
              "fetch, build-original, rewrite, build-rewritten)", file=sys.stderr)  # fmt: skip
        return 1
    results = []
    for busy in [int(b) for b in args.busy.split(",")]:
        loops = [subprocess.Popen(["sh", "-c", "while :; do :; done"]) for _ in range(busy)]
        try:
            runs: dict[str, list[dict]] = {name: [] for name in CONFIGS}
            for r in range(args.rounds):
                for name, env in CONFIGS.items():
                    res = one_round(binary, env, args.pairs)
                    runs[name].append(res)
                    print(f"busy {busy} round {r + 1} {name}: {res}", flush=True)
        finally:
            for p in loops:
                p.kill()
                p.wait()
        for name, rs in runs.items():
            results.append(
                {
                    "config": name,
                    "busy": busy,
                    "rounds": rs,
                    "misses": sum(x["misses"] for x in rs),
                    "pairs": sum(x["pairs"] for x in rs),
                    "median_ms": statistics.median(x["median_ms"] for x in rs),
                }
            )
    doc = {
        "schema": "locktune-rcl-latency/1",
        "what": "memcached: set k (expires in 1 s) then gat 10 k, 2 ms apart; a miss is a clock "
        "tick between the two (memcached's own race, t/binary.t); round trip of the pair",
        "machine": {
            "cpus": len(os.sched_getaffinity(0)),
            "processor": cpu_model(),
            "kernel": platform.release(),
            "load_at_start": os.getloadavg()[0],
        },
        "date": time.strftime("%Y-%m-%d"),
        "results": results,
    }
    args.results.mkdir(parents=True, exist_ok=True)
    (args.results / "results.json").write_text(json.dumps(doc, indent=1) + "\n")
    groups = [f"{b} busy" for b in dict.fromkeys(r["busy"] for r in results)]
    series = {
        name: [next(r["median_ms"] for r in results if r["config"] == name and f"{r['busy']} busy" == g)
               for g in groups]
        for name in CONFIGS
    }  # fmt: skip
    svg = charts.bar_chart(
        "memcached set + gat round trip (median of rounds' medians)",
        groups,
        series,
        y_label="ms",
        log=True,
    )
    (args.results / "latency.svg").write_text(svg)
    for r in results:
        print(f"{r['config']:>13} busy {r['busy']}: {r['misses']}/{r['pairs']} missed, "
              f"median {r['median_ms']:.3f} ms")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
