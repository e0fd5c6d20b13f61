"""Run the sweeps interleaved and shuffled, repeated; summarise with ratios taken in a round.

The machine's cross-core latency drifts 3-10x on its own (notes/memcached-and-baselines.md),
so no two configurations are compared across time:

    for each round (--repeats):
        for each point of every sweep, in a shuffled order:
            glibc, the algorithms (and the sweep's extra locks), in a shuffled order,
            each run with a round-trip probe just before and after it
    ratio(lock, point, round) = lock's figure / glibc's figure at that point in that round

and every figure is then reported as min / median / max over the rounds.
"""

from __future__ import annotations

import random
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

from locktune import algorithms
from locktune.bench import lockbench
from locktune.bench.lockbench import GLIBC, Lock, RunFailed
from locktune.bench.sweeps import Point, Sweep

NEAR_FAR_NS = 200  # round-trip regimes: near below, far at or above (notes: 60-160 vs 300-440)


@dataclass
class Settings:
    repeats: int = 5
    duration: float = 1.0
    warmup: float | None = None
    mode: str | None = None  # lock | execute; None: execute for delegating algorithms
    seed: int = 1
    tsc_hz: float | None = None
    usable_cpus: tuple[int, ...] = (0,)


def mode_for(lock: Lock, settings: Settings) -> str:
    if lock.kind == "sequential":
        return "sequential"
    if settings.mode:
        return settings.mode
    return "execute" if _base(lock.algorithm) in algorithms.delegating() else "lock"


def _base(algorithm: str | None) -> str | None:
    """The algorithm of NAME:POLICY (a waiting policy, docs/config.md)."""
    return algorithm.partition(":")[0] if algorithm else algorithm


def command(point: Point, lock: Lock, settings: Settings) -> tuple[list[str], dict[str, str]]:
    """The program's arguments and environment for one run."""
    cpus = list(settings.usable_cpus)
    env: dict[str, str] = {}
    args = ["--mode", mode_for(lock, settings), "--lines", str(point.lines)]
    if lock.kind == "sequential":
        args += ["--delay", "0"]  # the section alone: delegation's ceiling
    else:
        args += ["--lock", lock.kind, "--delay", str(point.delay), "--pin", point.pin]
        threads = point.threads
        if lock.kind == "lt":
            env["LOCKTUNE_ALGO"] = f"default={lock.algorithm}"
        if _base(lock.algorithm) in algorithms.server_based() and len(cpus) >= 2:
            env["LOCKTUNE_SERVERS"] = str(cpus[-1])  # the server's CPU; clients keep off it
            cpus = cpus[:-1]
            args += ["--cpus", ",".join(map(str, cpus))]
        args += ["--threads", str(threads if threads is not None else len(cpus))]
    args += ["--duration", f"{settings.duration:g}", "--seed", str(settings.seed)]
    if settings.warmup is not None:
        args += ["--warmup", f"{settings.warmup:g}"]
    if settings.tsc_hz:
        args += ["--tsc-hz", f"{settings.tsc_hz:.0f}"]
    return args, env


def plan(
    sweeps: list[Sweep], algorithms: list[str], settings: Settings
) -> list[tuple[int, Sweep, int, Lock]]:
    """(round, sweep, point index, lock) in the order they run."""
    rng = random.Random(settings.seed)
    lts = [Lock("lt", a) for a in algorithms]
    order = []
    for r in range(settings.repeats):
        units = [(s, i) for s in sweeps for i in range(len(s.points))]
        rng.shuffle(units)
        for sweep, i in units:
            locks = [GLIBC, *sweep.extra, *lts]
            rng.shuffle(locks)
            order += [(r, sweep, i, lock) for lock in locks]
    return order


def _record(r: int, sweep: Sweep, i: int, lock: Lock, settings: Settings) -> dict:
    point = sweep.points[i]
    args, env = command(point, lock, settings)
    rec = {
        "sweep": sweep.name,
        "point": i,
        "round": r,
        "lock": lock.label,
        "kind": lock.kind,
        "algorithm": lock.algorithm,
        "mode": mode_for(lock, settings),
        "args": args,
        "env": env,
        "started": time.strftime("%H:%M:%S"),
        "ok": False,
        "error": None,
    }
    warmup = settings.warmup if settings.warmup is not None else min(0.2, settings.duration / 5)
    try:
        doc = lockbench.run(args, env=env, timeout=warmup + settings.duration + 120)
    except RunFailed as e:
        rec["error"] = str(e)
        return rec
    run, fair, handover = doc["run"], doc["fairness"], doc["handover"]
    rec.update(
        ok=True,
        threads=doc["config"]["threads"],
        throughput_ops_s=run["throughput_ops_s"],
        ns_per_op=run["ns_per_op"],
        cs_latency_cycles=run["cs_latency_cycles"],
        per_thread_ops=run["per_thread_ops"],
        rsd=fair["rsd"],
        gini=fair["gini"],
        min_max_ratio=fair["min_max_ratio"],
        fairness_factor=fair["fairness_factor"],
        distinct_threads=doc["distinct_threads"].get("mean"),
        handover_ns=handover["ns"].get("median"),
        same_thread_fraction=handover["same_thread_fraction"],
        cpu_utilisation=doc["cpu"]["utilisation"],
        voluntary_switches=doc["cpu"]["voluntary_switches"],
        rt_ns=lockbench.round_trip_ns(doc),
        probe=doc["probe"],
    )
    return rec


def run_all(
    sweeps: list[Sweep],
    algorithms: list[str],
    settings: Settings,
    progress: Callable[[int, int, dict], None] | None = None,
) -> list[dict]:
    """Every run of the plan, in order; failures are recorded, not raised."""
    order = plan(sweeps, algorithms, settings)
    runs = []
    for n, (r, sweep, i, lock) in enumerate(order):
        if progress:
            progress(n, len(order), {"round": r, "sweep": sweep, "point": i, "lock": lock})
        rec = _record(r, sweep, i, lock, settings)
        rec["order"] = n
        runs.append(rec)
    return runs


# ---- summaries ---------------------------------------------------------------------------


def stat(values: list[float | None]) -> dict | None:
    vs = [v for v in values if v is not None]
    if not vs:
        return None
    return {"min": min(vs), "median": statistics.median(vs), "max": max(vs), "n": len(vs)}


def regime(rt_ns: float | None) -> str | None:
    if rt_ns is None:
        return None
    return "near" if rt_ns < NEAR_FAR_NS else "far"


def _minus(a: float | None, b: float | None) -> float | None:
    return a - b if a is not None and b is not None else None


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def summarise(sweeps: list[Sweep], runs: list[dict]) -> list[dict]:
    """Per sweep, per point, per lock: min/median/max of each figure and of the ratios to
    glibc (and to the bare ticket lock, and to the sequential rate) taken within a round."""
    by_key: dict[tuple, dict] = {}
    for rec in runs:
        by_key[(rec["sweep"], rec["point"], rec["round"], rec["lock"])] = rec
    out = []
    for sweep in sweeps:
        points = []
        for i, point in enumerate(sweep.points):
            labels = []
            for rec in runs:
                if rec["sweep"] == sweep.name and rec["point"] == i and rec["lock"] not in labels:
                    labels.append(rec["lock"])
            locks = {}
            for label in labels:
                mine = [
                    r
                    for r in runs
                    if r["sweep"] == sweep.name and r["point"] == i and r["lock"] == label
                ]
                locks[label] = _summarise_lock(sweep, i, mine, by_key)
            here = [r for r in runs if r["sweep"] == sweep.name and r["point"] == i and r["ok"]]
            points.append(
                {
                    "round_trip_ns": stat([r["rt_ns"] for r in here]),
                    "threads": point.threads,
                    "lines": point.lines,
                    "delay_cycles": point.delay,
                    "pin": point.pin,
                    "x": sweep.x(point),
                    "locks": locks,
                }
            )
        out.append(
            {
                "name": sweep.name,
                "title": sweep.title,
                "axis": sweep.axis,
                "metric": sweep.metric,
                "goal": sweep.goal,
                "points": points,
            }
        )
    return out


def _summarise_lock(sweep: Sweep, i: int, mine: list[dict], by_key: dict) -> dict:
    ok = [r for r in mine if r["ok"]]
    ratios, same_regime, vs_ticket, seq_fraction, cost_rt = [], [], [], [], []
    net, net_ratios, net_vs_ticket, vs_peer = [], [], [], []
    not_a_lock = {"sequential", "none"}
    for r in ok:
        base = by_key.get((sweep.name, i, r["round"], "glibc"))
        ticket = by_key.get((sweep.name, i, r["round"], "bare-ticket"))
        peer_lock = lockbench.PEERS.get(r.get("algorithm")) if r.get("kind") == "lt" else None
        peer = by_key.get((sweep.name, i, r["round"], peer_lock.label)) if peer_lock else None
        if peer and peer["ok"]:
            # ours against CK's, within the round: > 1 means ours is better
            vs_peer.append(
                _ratio(peer["ns_per_op"], r["ns_per_op"])
                if sweep.metric == "cost"
                else _ratio(r["throughput_ops_s"], peer["throughput_ops_s"])
            )
        seq = by_key.get((sweep.name, i, r["round"], "sequential"))
        bare = by_key.get((sweep.name, i, r["round"], "no-lock"))
        if sweep.metric == "cost" and bare and bare["ok"] and r["kind"] not in not_a_lock:
            # The lock's own cost: less the same loop and section without a lock, same round.
            mine_net = _minus(r["ns_per_op"], bare["ns_per_op"])
            net.append(mine_net)
            if base and base["ok"]:
                net_ratios.append(_ratio(mine_net, _minus(base["ns_per_op"], bare["ns_per_op"])))
            if ticket and ticket["ok"]:
                net_vs_ticket.append(
                    _ratio(mine_net, _minus(ticket["ns_per_op"], bare["ns_per_op"]))
                )
        if base and base["ok"] and r["kind"] not in not_a_lock:
            if sweep.metric == "cost":
                ratio = _ratio(r["ns_per_op"], base["ns_per_op"])
            else:
                ratio = _ratio(r["throughput_ops_s"], base["throughput_ops_s"])
            ratios.append(ratio)
            if regime(r["rt_ns"]) is not None and regime(r["rt_ns"]) == regime(base["rt_ns"]):
                same_regime.append(ratio)
        if ticket and ticket["ok"] and r["kind"] not in not_a_lock:
            vs_ticket.append(_ratio(r["ns_per_op"], ticket["ns_per_op"]))
        if seq and seq["ok"] and r["kind"] != "sequential":
            seq_fraction.append(_ratio(r["throughput_ops_s"], seq["throughput_ops_s"]))
        cost_rt.append(_ratio(r["ns_per_op"], r["rt_ns"]))
    regimes = {"near": 0, "far": 0, "unknown": 0}
    for r in ok:
        regimes[regime(r["rt_ns"]) or "unknown"] += 1
    return {
        "runs": len(ok),
        "failed": len(mine) - len(ok),
        "errors": sorted({r["error"] for r in mine if not r["ok"]}),
        "ratio": stat(ratios),
        "ratio_same_regime": stat(same_regime),
        "vs_bare_ticket": stat(vs_ticket) if sweep.metric == "cost" else None,
        # its Concurrency Kit peer's figure over ours (cost) or ours over CK's (throughput):
        # the speed of ours relative to CK's, > 1 is faster
        "vs_peer": stat(vs_peer) if vs_peer else None,
        "net_ns_per_op": stat(net) if net else None,
        "net_ratio": stat(net_ratios) if net_ratios else None,
        "net_vs_bare_ticket": stat(net_vs_ticket) if net_vs_ticket else None,
        "sequential_fraction": stat(seq_fraction) if seq_fraction else None,
        "cost_in_round_trips": stat(cost_rt),
        "throughput_ops_s": stat([r["throughput_ops_s"] for r in ok]),
        "ns_per_op": stat([r["ns_per_op"] for r in ok]),
        "cs_latency_cycles": stat([r["cs_latency_cycles"] for r in ok]),
        "rsd": stat([r["rsd"] for r in ok]),
        "gini": stat([r["gini"] for r in ok]),
        "min_max_ratio": stat([r["min_max_ratio"] for r in ok]),
        "distinct_threads": stat([r["distinct_threads"] for r in ok]),
        "handover_ns": stat([r["handover_ns"] for r in ok]),
        "same_thread_fraction": stat([r["same_thread_fraction"] for r in ok]),
        "cpu_utilisation": stat([r["cpu_utilisation"] for r in ok]),
        "rt_ns": stat([r["rt_ns"] for r in ok]),
        "regimes": regimes,
    }


def measure(
    chosen: list[Sweep],
    wanted: list[str],
    settings: Settings,
    *,
    command: str,
    quick: bool,
    progress: Callable[[str], None],
    warn: Callable[[str], None],
) -> dict:
    """One `locktune bench locks`: the machine described, the algorithms this liblocktune has
    asked for, every run made (run_all), summarised; the results document (report.SCHEMA),
    which the caller writes and prints."""
    from locktune import machine
    from locktune.bench import report

    progress("describing the machine")
    desc = machine.describe()
    load = desc["load_average"][0]
    if load > 0.25 * (desc["usable_cpus"] or 1) and not quick:
        warn(
            f"load average {load:.2f} on {desc['usable_cpus']} CPUs: this machine is busy, so "
            "these figures measure the other work too"
        )
    info = lockbench.machine_info()
    settings.tsc_hz = info["tsc"]["hz"]
    settings.usable_cpus = tuple(info["info"]["usable_cpus"])
    progress("asking liblocktune which algorithms it has")
    avail = lockbench.available(wanted, len(settings.usable_cpus))
    runnable = [a for a in wanted if a in avail.available]
    for sweep in chosen:
        for lock in [x for x in sweep.extra if x.kind.startswith("ck-")]:
            if lock.label not in avail.unavailable:
                why = lockbench.peer_available(lock)
                if why:
                    avail.unavailable[lock.label] = why
            if lock.label in avail.unavailable:
                sweep.extra.remove(lock)

    started = time.time()

    def each(n: int, total: int, what: dict) -> None:
        elapsed = time.time() - started
        eta = f", about {elapsed / n * (total - n):.0f} s left" if n else ""
        p = what["sweep"].points[what["point"]]
        progress(
            f"[{n + 1}/{total}] round {what['round'] + 1}/{settings.repeats} "
            f"{what['sweep'].name}: {p.threads or 'cpus'} threads, {p.lines} lines, "
            f"delay {p.delay}: {what['lock'].label}{eta}"
        )

    runs = run_all(chosen, runnable, settings, each)
    return {
        "schema": report.SCHEMA,
        "command": command,
        "machine": desc,
        "lockbench": {
            "tsc_hz": settings.tsc_hz,
            "usable_cpus": list(settings.usable_cpus),
            "lt_mutex_bytes": info["info"]["lt_mutex_bytes"],
            "pthread_mutex_bytes": info["info"]["pthread_mutex_bytes"],
        },
        "settings": {
            "sweeps": [s.name for s in chosen],
            "repeats": settings.repeats,
            "duration_s": settings.duration,
            "warmup_s": settings.warmup,
            "mode": settings.mode or "auto",
            "seed": settings.seed,
            "quick": quick,
            "regime_threshold_ns": NEAR_FAR_NS,
        },
        "algorithms": {"requested": wanted, "ran": runnable, "unavailable": avail.unavailable},
        "sweeps": summarise(chosen, runs),
        "runs": runs,
        "wall_s": time.time() - started,
    }
