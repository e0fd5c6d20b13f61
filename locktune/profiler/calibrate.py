"""`locktune calibrate`: derive this machine's report thresholds (the RCL paper's method).

The paper (digest-rcl.md §5.4) runs its lock microbenchmark with the POSIX lock under the
profiler, sweeping the delay between critical sections, and reads two points off the curve:

- lower threshold: the %-of-time-in-critical-sections at the delay where the POSIX lock
  *collapses*: here, the longest delay at which waiting for the lock takes COLLAPSE_WAIT
  percent or more of the critical-section time (acquire + hold + release), i.e. acquiring
  costs more than the section itself, and at least COLLAPSE_CONTENDED percent of the
  acquisitions wait (a few long waits behind a preempted holder are not a collapse).  The
  mean section length alone is no signal: at long delays the section runs with cold caches.
  When it never collapses in the sweep, the hottest point's share;
- upper threshold: the % at the longest delay where RCL beats the POSIX lock (throughput of
  `--lock lt --algo rcl --mode execute` >= that of `--lock pthread`, both unprofiled, RCL
  with one thread fewer since its server takes a core).  When RCL never wins on this machine
  the upper threshold is "none" and the report never recommends RCL for heat alone.

The locality threshold follows the benchmark's core-to-core round trip: poor locality is
`misses_poor` cache lines, each costing half a round trip, extra per section.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import time
from collections.abc import Callable
from pathlib import Path

from locktune import machine, native
from locktune.errors import LocktuneError
from locktune.profiler import analyze, raw
from locktune.profiler import recommend as rec
from locktune.profiler import run as runner

COLLAPSE_WAIT = 50.0
COLLAPSE_CONTENDED = 10.0
DELAYS = [100, 300, 1000, 3000, 10000, 30000, 100000, 300000, 1000000]
QUICK_DELAYS = [100, 3000, 100000, 1000000]


def lockbench() -> Path:
    try:
        return native.bin_path("locktune-lockbench")
    except LocktuneError as e:
        raise LocktuneError(
            "locktune-lockbench is not installed (the lock benchmark, issue #3), so there is "
            "nothing to calibrate with; `locktune report` uses the documented default "
            f"thresholds meanwhile ({e})"
        ) from e


def _throughput(doc: dict, where: str) -> float:
    for path in (("run", "throughput_ops_s"), ("throughput_ops_s",), ("throughput",)):
        v = doc
        for k in path:
            v = v.get(k) if isinstance(v, dict) else None
        if isinstance(v, int | float):
            return float(v)
    raise LocktuneError(f"{where}: locktune-lockbench printed no throughput (run.throughput_ops_s)")


def _round_trip_ns(doc: dict) -> float | None:
    probe = doc.get("probe") or {}
    vals = [
        (probe.get(k) or {}).get("ns_median")
        for k in ("before", "after")
        if (probe.get(k) or {}).get("ok")
    ]
    vals = [v for v in vals if isinstance(v, int | float)]
    return statistics.median(vals) if vals else None


def _bench(cmd: list[str], env: dict | None = None, timeout: float = 120) -> dict:
    import subprocess

    res = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
    if res.returncode != 0:
        msg = (res.stderr.strip().splitlines() or ["no message"])[-1]
        raise LocktuneError(f"{' '.join(cmd)}: exited {res.returncode}: {msg}")
    try:
        return json.loads(res.stdout)
    except json.JSONDecodeError as e:
        raise LocktuneError(f"{' '.join(cmd)}: output is not JSON: {e.msg}") from e


def _profiled(cmd: list[str], clock: dict, limits: dict, timeout: float) -> tuple[dict, dict]:
    result = runner.run(cmd, capture=True, timeout=timeout)
    try:
        if result.returncode != 0:
            raise LocktuneError(f"{' '.join(cmd)}: exited {result.returncode} under the profiler")
        profiles = raw.read_dir(result.raw_dir)
        if not profiles:
            raise LocktuneError(f"{' '.join(cmd)}: the profiler recorded nothing")
        main, _ = analyze.choose(profiles, result.pid)
        prof = analyze.build(
            main, source_root=Path.cwd(), clock=clock, thresholds=limits, program=cmd
        )
    finally:
        shutil.rmtree(result.raw_dir, ignore_errors=True)
    try:
        doc = json.loads(result.stdout or "")
    except json.JSONDecodeError as e:
        raise LocktuneError(f"{' '.join(cmd)}: output is not JSON: {e.msg}") from e
    return doc, prof


def _percent_at(points: list[dict], delay: float) -> float:
    return next(p["cs_percent"] for p in points if p["delay"] == delay)


def derive(points: list[dict], round_trip_ns: float | None) -> dict:
    """Thresholds from the sweep (points sorted by delay, ascending)."""
    values = dict(rec.DEFAULTS)
    why = {}
    collapsed = [
        p
        for p in points
        if p["wait_percent"] >= COLLAPSE_WAIT and p["contention_percent"] >= COLLAPSE_CONTENDED
    ]
    if collapsed:
        at = max(p["delay"] for p in collapsed)
        values["lower_cs_percent"] = round(_percent_at(points, at), 1)
        why["lower_cs_percent"] = (
            f"the POSIX mutex collapses at a delay of {at} cycles (waiting takes "
            f"{COLLAPSE_WAIT:g}% or more of the critical-section time, and "
            f"{COLLAPSE_CONTENDED:g}% or more of the acquisitions wait)"
        )
    else:
        values["lower_cs_percent"] = round(points[0]["cs_percent"], 1)
        why["lower_cs_percent"] = "the POSIX mutex never collapsed in the sweep: the hottest point"
    wins = [p for p in points if p.get("rcl_ratio") is not None and p["rcl_ratio"] >= 1.0]
    if wins:
        at = max(p["delay"] for p in wins)
        values["upper_cs_percent"] = round(_percent_at(points, at), 1)
        why["upper_cs_percent"] = f"RCL beats the POSIX mutex up to a delay of {at} cycles"
    else:
        values["upper_cs_percent"] = None
        tried = any(p.get("rcl_ratio") is not None for p in points)
        why["upper_cs_percent"] = (
            "RCL never beat the POSIX mutex on this machine"
            if tried
            else "RCL could not be run (see rcl_error)"
        )
    if round_trip_ns:
        values["locality_poor_ns"] = round(values["misses_poor"] * round_trip_ns / 2, 1)
        why["locality_poor_ns"] = (
            f"{values['misses_poor']:g} cache lines at half the measured core-to-core round "
            f"trip ({round_trip_ns:.0f} ns)"
        )
    return {"values": values, "why": why}


def run(
    sweep: list[int],
    threads: int | None,
    duration: float,
    lines: int,
    no_rcl: bool,
    progress: Callable[[str], None],
) -> dict:
    """The sweep, profiled, and the thresholds derived from it: the thresholds document
    (schema locktune-thresholds/1) `locktune report` reads."""
    bench = lockbench()
    cpus = len(os.sched_getaffinity(0))
    threads = threads or max(2, cpus)
    clock = runner.clock_info()
    limits = rec.load()
    timeout = 60 + 10 * duration

    points, rts, rcl_error = [], [], None
    for i, delay in enumerate(sweep, 1):
        progress(f"locktune calibrate: delay {delay} cycles ({i}/{len(sweep)})")
        base = [str(bench), "--duration", str(duration), "--lines", str(lines)]
        base += ["--delay", str(delay), "--json"]
        prof_cmd = [*base, "--threads", str(threads), "--lock", "pthread", "--no-probe"]
        _, prof = _profiled(prof_cmd, clock, limits, timeout)
        hottest = next((s for s in prof["locks"] if s["kind"] == "mutex"), None)
        if hottest is None or not hottest["acquisitions"]:
            raise LocktuneError(f"{' '.join(prof_cmd)}: the profiler saw no mutex acquisitions")
        plain = _bench([*base, "--threads", str(threads), "--lock", "pthread"], timeout=timeout)
        rt = _round_trip_ns(plain)
        if rt:
            rts.append(rt)
        point = {
            "delay": delay,
            "cs_percent": hottest["cs_percent"],
            "cs_ns_per_acquisition": hottest["cs_ns"] / hottest["acquisitions"],
            "contention_percent": hottest["contention_percent"],
            "wait_percent": hottest["wait_percent"],
            "pthread_ops_s": _throughput(plain, "pthread run"),
            "rcl_ops_s": None,
            "rcl_ratio": None,
        }
        if not no_rcl and rcl_error is None:
            rcl_cmd = [*base, "--threads", str(max(1, threads - 1)), "--lock", "lt"]
            rcl_cmd += ["--algo", "rcl", "--mode", "execute", "--no-probe"]
            try:
                point["rcl_ops_s"] = _throughput(_bench(rcl_cmd, timeout=timeout), "rcl run")
                point["rcl_ratio"] = round(point["rcl_ops_s"] / point["pthread_ops_s"], 3)
            except LocktuneError as e:
                rcl_error = str(e)
        points.append(point)

    rt = statistics.median(rts) if rts else None
    derived = derive(points, rt)
    doc = {
        "schema": rec.SCHEMA,
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "machine": machine.describe(),
        "thresholds": derived["values"],
        "calibration": {
            "method": "RCL paper §5.4: lock benchmark with the POSIX mutex under the profiler",
            "threads": threads,
            "lines": lines,
            "duration_s": duration,
            "collapse_wait_percent": COLLAPSE_WAIT,
            "collapse_contended_percent": COLLAPSE_CONTENDED,
            "round_trip_ns": rt,
            "why": derived["why"],
            "rcl_error": rcl_error,
            "sweep": points,
        },
    }
    return doc
