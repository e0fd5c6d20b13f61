"""The run behind this folder: spin, fc and oyama before and after their bounded bypass
(impatient.h), beside glibc.

    python run.py OLD_LIB_DIR NEW_LIB_DIR

Each LIB_DIR holds a liblocktune.so.0 (the build of one commit); locktune-lockbench (from this
checkout's package) loads it through LD_LIBRARY_PATH (its RUNPATH yields to it).  7 shuffled,
interleaved rounds per thread count; writes results.json and ratios.svg here.
"""

from __future__ import annotations

import json
import os
import platform
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2]))

from locktune import native  # noqa: E402
from locktune.charts import bar_chart  # noqa: E402

ROUNDS = 5
POINTS = ((1, 0), (2, 100), (4, 100), (16, 100))  # (threads, delay cycles)


def run_once(bench: Path, lib: str | None, args: list[str], threads: int, delay: int) -> dict:
    env = dict(os.environ)
    if lib:
        env["LD_LIBRARY_PATH"] = lib
    cmd = [str(bench), *args, "--threads", str(threads), "--delay", str(delay)]
    cmd += ["--duration", "0.3", "--no-probe", "--json"]
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True).stdout
    return json.loads(out)["run"]


def main() -> int:
    old, new = sys.argv[1:3]
    bench = native.native_dir() / "bin" / "locktune-lockbench"
    locks = [
        ("glibc", None, ["--lock", "pthread"]),
        ("spin-old", old, ["--lock", "lt", "--algo", "spin"]),
        ("spin-new", new, ["--lock", "lt", "--algo", "spin"]),
        ("fc-old", old, ["--lock", "lt", "--algo", "fc"]),
        ("fc-new", new, ["--lock", "lt", "--algo", "fc"]),
        ("oyama-old", old, ["--lock", "lt", "--algo", "oyama"]),
        ("oyama-new", new, ["--lock", "lt", "--algo", "oyama"]),
    ]
    res: dict[tuple[int, str], list[float]] = {}
    for threads, delay in POINTS:
        for _ in range(ROUNDS):
            random.shuffle(locks)
            for name, lib, args in locks:
                r = run_once(bench, lib, args, threads, delay)
                value = r["ns_per_op"] if threads == 1 else r["throughput_ops_s"] / 1e6
                res.setdefault((threads, name), []).append(value)
    cpu = [ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo") if ln.startswith("model")]
    doc = {
        "schema": "locktune-bypass-bound/1",
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": {
            "cpu_model": cpu[0] if cpu else None,
            "cpus": os.cpu_count(),
            "kernel": platform.release(),
            "load_average_end": os.getloadavg(),
        },
        "command": "locktune-lockbench --threads T --delay D --duration 0.3 --no-probe --json, "
        f"{ROUNDS} shuffled interleaved rounds; *-old: the old library, *-new: the new one, "
        "swapped with LD_LIBRARY_PATH",
        "runs": [
            {
                "threads": t,
                "lock": name,
                "values": v,
                "unit": "ns per pair" if t == 1 else "M ops/s",
            }
            for (t, name), v in sorted(res.items())
        ],
    }
    (HERE / "results.json").write_text(json.dumps(doc, indent=1))
    series = {}
    for name in ("spin-old", "spin-new", "fc-old", "fc-new", "oyama-old", "oyama-new"):
        ratios = []
        for t, _ in POINTS:
            g, x = statistics.median(res[t, "glibc"]), statistics.median(res[t, name])
            ratios.append(round(g / x if t == 1 else x / g, 3))  # speed: higher is better
        series[name] = ratios
    groups = ["1 thread (pair cost)", "2 threads", "4 threads", "16 threads"]
    title = (
        f"spin, fc, oyama beside glibc: speed ratio (median of {ROUNDS} rounds; higher is better)"
    )
    (HERE / "ratios.svg").write_text(
        bar_chart(title, groups, series, y_label="x glibc", reference=1.0)
    )
    for (t, name), v in sorted(res.items()):
        unit = "ns/op" if t == 1 else "M ops/s"
        print(f"{t} {name:8} median {statistics.median(v):.2f} {unit}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
