#!/usr/bin/env python3
"""How an RCL client should wait for its request: the policies of LOCKTUNE_RCL_WAIT, side by
side, on locktune-lockbench in execute mode (docs/delegation.md, "Waiting clients").

    .venv/bin/python scripts/bench_rcl_wait.py --repeats 7 --out bench/results/rcl-wait

The server runs on the last usable CPU (LOCKTUNE_SERVERS); the clients are confined to the
others (--cpus), so with N clients on a 2-CPU machine they are N to one CPU:

  clients     1, 4 and 16 (1 has its CPU to itself; 4 and 16 are oversubscribed: a client that
              spins keeps the CPU from the clients that would post the next requests)
  delay       100 cycles (the paper's high contention) and 10^4 (each client waits less
              often, and for less)
  lines       1, and 20 at delay 100 (long sections: clients wait longer than a round trip)

Policies: spin (the paper's clients), yield, park, yield-park; and glibc's pthread_mutex with
the same number of threads on every usable CPU, for scale.  Every round runs every (point,
policy) in a shuffled order; each policy's throughput is compared with spin's and with glibc's
in the same round, and reported as min / median / max over the rounds, with the CPU time the
run used per operation (spinning shows there).  Writes OUT.json and OUT.svg, prints a table.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from locktune import charts, machine, ui  # noqa: E402
from locktune.bench import lockbench  # noqa: E402
from locktune.errors import LocktuneError  # noqa: E402

POLICIES = ("spin", "yield", "park", "yield-park")
POINTS = [  # (clients, lines, delay)
    (1, 1, 100),
    (4, 1, 100),
    (16, 1, 100),
    (1, 1, 10000),
    (4, 1, 10000),
    (16, 1, 10000),
    (4, 20, 100),
    (16, 20, 100),
]


def fail(msg: str) -> None:
    sys.exit(f"bench_rcl_wait: error: {msg}")


def one_run(point, policy: str, cpus: list[int], duration: float) -> dict:
    clients, lines, delay = point
    common = ["--lines", str(lines), "--delay", str(delay), "--duration", f"{duration:g}"]
    if policy == "glibc":
        args = ["--mode", "lock", "--lock", "pthread", "--threads", str(clients), *common]
        env = {}
    else:
        client_cpus = ",".join(map(str, cpus[:-1]))
        args = ["--mode", "execute", "--lock", "lt", "--threads", str(clients)]
        args += ["--cpus", client_cpus, "--pin", "none", *common]
        env = {
            "LOCKTUNE_ALGO": "default=rcl",
            "LOCKTUNE_SERVERS": str(cpus[-1]),
            "LOCKTUNE_RCL_WAIT": policy,
        }
    doc = lockbench.run(args, env=env, timeout=duration + 120)
    run = doc["run"]
    cpu = doc.get("cpu", {}).get("utilisation")
    ops = run["throughput_ops_s"] or 0.0
    return {
        "throughput_ops_s": ops,
        "cpu_utilisation": cpu,
        "cpu_ns_per_op": (cpu / ops * 1e9) if cpu and ops else None,
        "rt_ns": lockbench.round_trip_ns(doc),
    }


def summary(values: list[float]) -> dict | None:
    vs = [v for v in values if v is not None]
    if not vs:
        return None
    return {"min": min(vs), "median": statistics.median(vs), "max": max(vs), "n": len(vs)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=7, help="rounds (default 7)")
    ap.add_argument("--duration", type=float, default=1.0, help="seconds per run (default 1)")
    ap.add_argument("--quick", action="store_true", help="2 rounds of 0.1 s runs (a smoke test)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", default=None, help="OUT.json and OUT.svg (default: print only)")
    a = ap.parse_args()
    if a.quick:
        a.repeats, a.duration = 2, 0.1
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        fail("needs 2 CPUs: one for the server, one for the clients")
    rng = random.Random(a.seed)
    units = [(p, pol) for p in POINTS for pol in (*POLICIES, "glibc")]
    rounds: list[dict] = []
    total, done = a.repeats * len(units), 0
    for _ in range(a.repeats):
        rng.shuffle(units)
        results = {}
        for point, pol in units:
            ui.progress(f"run {done + 1}/{total}: {pol}, {point[0]} clients")
            try:
                results[(point, pol)] = one_run(point, pol, cpus, a.duration)
            except LocktuneError as e:
                fail(f"{pol} at {point}: {e}")
            done += 1
        rounds.append(results)
    ui.progress_done()

    out = {
        "schema": "locktune-bench-rcl-wait/1",
        "machine": machine.describe(),
        "command": " ".join(sys.argv),
        "settings": {
            "repeats": a.repeats,
            "duration_s": a.duration,
            "seed": a.seed,
            "server_cpu": cpus[-1],
            "client_cpus": cpus[:-1],
        },
        "points": [],
    }
    rows = []
    for point in POINTS:
        clients, lines, delay = point
        entry = {"clients": clients, "lines": lines, "delay_cycles": delay, "policies": {}}
        for pol in (*POLICIES, "glibc"):
            runs = [rd[(point, pol)] for rd in rounds]
            spin = [rd[(point, "spin")]["throughput_ops_s"] for rd in rounds]
            glibc = [rd[(point, "glibc")]["throughput_ops_s"] for rd in rounds]
            thr = [x["throughput_ops_s"] for x in runs]
            entry["policies"][pol] = {
                "throughput_ops_s": summary(thr),
                "vs_spin": summary([t / s if s else None for t, s in zip(thr, spin, strict=True)]),
                "vs_glibc": summary(
                    [t / g if g else None for t, g in zip(thr, glibc, strict=True)]
                ),
                "cpu_ns_per_op": summary([x["cpu_ns_per_op"] for x in runs]),
                "rt_ns": summary([x["rt_ns"] for x in runs]),
            }
            e = entry["policies"][pol]
            rows.append(
                [
                    str(clients),
                    str(lines),
                    str(delay),
                    pol,
                    f"{e['throughput_ops_s']['median'] / 1e6:.3f}",
                    "-"
                    if pol == "glibc"
                    else "{min:.2f} / {median:.2f} / {max:.2f}".format(**e["vs_spin"]),
                    "{median:.2f}".format(**e["vs_glibc"]),
                    "-" if not e["cpu_ns_per_op"] else f"{e['cpu_ns_per_op']['median']:.0f}",
                ]
            )
        out["points"].append(entry)
    print(
        ui.table(
            [
                "clients",
                "lines",
                "delay",
                "policy",
                "M ops/s",
                "vs spin min/med/max",
                "vs glibc",
                "CPU ns/op",
            ],
            rows,
            align="rrrlrrrr",
        )
    )
    if a.out:
        base = Path(a.out)
        base.parent.mkdir(parents=True, exist_ok=True)
        base.with_suffix(".json").write_text(json.dumps(out, indent=1) + "\n")
        groups = [f"{c}c {ln}l d{d}" for c, ln, d in POINTS]
        series = {
            pol: [(p["policies"][pol]["vs_spin"] or {}).get("median") for p in out["points"]]
            for pol in POLICIES
        }
        base.with_suffix(".svg").write_text(
            charts.bar_chart(
                "RCL client wait policies: throughput relative to spinning (median)",
                groups,
                series,
                y_label="throughput / spin",
                x_label="clients, shared lines, delay (cycles)",
                reference=1.0,
            )
        )
        print(f"wrote {base.with_suffix('.json')} and {base.with_suffix('.svg')}")


if __name__ == "__main__":
    main()
