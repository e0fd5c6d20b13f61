"""Thresholds and the per-site recommendation rules (docs/profiler.md, "Recommendations").

The thresholds come from `locktune calibrate` (the RCL paper's method: the lock benchmark
run under the profiler on this machine, digest-rcl.md §5.4) or, until it has run, from the
documented defaults below.  Where they are looked for, first match wins:

    --thresholds FILE,  $LOCKTUNE_THRESHOLDS,  $XDG_CONFIG_HOME/locktune/thresholds.json
    (~/.config/locktune/thresholds.json),  the defaults
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from locktune import algorithms
from locktune.errors import LocktuneError

SCHEMA = "locktune-thresholds/1"


DEFAULTS = {
    # % of thread time in a site's critical sections (acquire + hold + release).  The RCL
    # paper's x86 figures with every hardware thread busy: POSIX collapses above 15%, RCL
    # beats every other lock above 60% (digest-rcl.md §5.4, Fig. 7).
    "lower_cs_percent": 15.0,
    "upper_cs_percent": 60.0,
    # Below this contention (share of acquisitions that waited, or of the critical-section
    # time spent waiting, whichever is larger) a hot lock is held, not fought over.
    "min_contention_percent": 5.0,
    # Poor locality: hardware misses per critical section (paper §5.4.4: below ~5, RCL rarely
    # reduces misses), or, without counters, the software estimate of the extra hold time a
    # section pays when the lock arrives from another thread (about two cross-core cache-line
    # transfers on a machine with ~150 ns one-way latency).
    "misses_poor": 5.0,
    "locality_poor_ns": 300.0,
    # RCL dedicates a core to its server: not worth it below this many usable CPUs.
    "rcl_min_cpus": 4,
    # Contention above which oversubscribed waiters are culled (Malthusian lock, mcscr)
    # rather than merely parked (blocking ShflLock).  None: never, the default, because on
    # the development VM (2 vCPUs, oversubscribed) the runtime's mcscr ran at 0.2-0.5x glibc
    # in `locktune bench locks --sweep oversubscribed` where shfl-block held 0.7-1.1x, and the
    # bundled apps' mcscr headers at 0.1-0.7x the original (`locktune bench compare`).  A
    # thresholds file may set it where mcscr measures better.
    "cull_contention_percent": None,
}


def config_path() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "locktune" / "thresholds.json"


def load(path: str | None = None) -> dict:
    """{"values": {...}, "source": "defaults" | path, "calibration": {...} | None}."""
    candidates = []
    if path:
        candidates.append((Path(path), True))
    elif os.environ.get("LOCKTUNE_THRESHOLDS"):
        candidates.append((Path(os.environ["LOCKTUNE_THRESHOLDS"]), True))
    else:
        candidates.append((config_path(), False))
    for p, required in candidates:
        if not p.exists():
            if required:
                raise LocktuneError(f"{p}: no such thresholds file")
            continue
        try:
            doc = json.loads(p.read_text())
        except (OSError, json.JSONDecodeError) as e:
            raise LocktuneError(f"{p}: not a thresholds file: {e}") from e
        if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
            raise LocktuneError(f"{p}: not a thresholds file (schema is not {SCHEMA})")
        values = dict(DEFAULTS)
        for k, v in (doc.get("thresholds") or {}).items():
            if k in DEFAULTS and (v is None or isinstance(v, int | float)):
                values[k] = v
        return {"values": values, "source": str(p), "calibration": doc.get("calibration")}
    return {"values": dict(DEFAULTS), "source": "defaults", "calibration": None}


def _pct(v: float) -> str:
    return f"{v:.1f}%"


def measure_contention(site: dict) -> tuple[float, str]:
    """A site's contention, and its words: the larger of its two measures, named apart - the
    share of acquisitions that waited ("contended", the table's column), and the share of its
    critical-section time spent waiting ("waiting").  The larger, because a few long waits
    behind a preempted holder are contention too (0.4% of acquisitions waited, but 79% of the
    time was waiting: the report once called both "contention")."""
    acq = site.get("contention_percent") or 0.0
    wait = site.get("wait_percent") or 0.0
    if wait > acq:
        return wait, f"{_pct(wait)} of its critical-section time waiting"
    return acq, f"{_pct(acq)} of acquisitions contended"


def _limits(algorithm: str, threads: int, cpus: int) -> str:
    """For which thread counts the recommendation was measured, and where it stops holding
    (issue 14: a recommendation that knows its limits)."""
    where = f"; measured with {threads} thread{'s' if threads != 1 else ''} on {cpus} CPUs"
    if threads > cpus and algorithm in {"shfl-block", "mcscr"}:
        return (
            where + ": chosen because threads outnumber CPUs; with no more threads than CPUs "
            "a barging lock may do better, and `auto` switches between the two at run time"
        )
    a = algorithms.get(algorithm)
    # The runtime says which algorithms do not hold up with more threads than CPUs.
    if threads <= cpus and a is not None and not a.oversub_safe:
        return where + f": with more threads than CPUs {algorithm} collapses; use `auto` then"
    return where


def recommend(site: dict, machine: dict, t: dict) -> dict:
    """The algorithm for one site of a profile, with the reason, from its figures.

    `machine`: {"usable_cpus": int, "max_threads": int}; `t`: threshold values."""
    cs = site.get("cs_percent") or 0.0
    contention, contention_words = measure_contention(site)
    cpus = machine.get("usable_cpus") or 1
    # Threads that compete for this lock: those that used it, at most those alive at once.
    threads = min(site.get("threads") or 1, machine.get("max_threads") or 1)
    attrs = set(site.get("attributes") or [])

    def out(algorithm: str, reason: str) -> dict:
        assert algorithm in algorithms.names(), algorithm
        return {
            "algorithm": algorithm,
            "reason": reason + _limits(algorithm, threads, cpus),
            "measured_at": {"threads": threads, "cpus": cpus},
        }

    if site.get("kind") == "rwlock":
        return out("posix", "reader-writer lock: locktune's runtime replaces mutexes; keep it")
    if site.get("kind") == "spinlock":
        return out("posix", "pthread spinlock: locktune's runtime replaces mutexes; keep it")
    if attrs & {"process-shared", "robust"}:
        which = " and ".join(sorted(attrs & {"process-shared", "robust"}))
        return out("posix", f"{which} mutex: only the POSIX mutex works across processes")
    if cs < t["lower_cs_percent"]:
        return out(
            "posix",
            f"cold: {_pct(cs)} of thread time in its critical sections "
            f"(below {_pct(t['lower_cs_percent'])})",
        )
    if contention < t["min_contention_percent"]:
        return out(
            "posix",
            f"{_pct(cs)} of thread time but little contention ({contention_words}): the time "
            "is spent holding it, and a faster lock would not shorten that",
        )

    misses = site.get("misses_per_cs")
    est = (site.get("locality_estimate") or {}).get("extra_ns_per_cs")
    if misses is not None:
        poor = misses >= t["misses_poor"]
        locality = f"{misses:.1f} misses per section"
    elif est is not None:
        poor = est >= t["locality_poor_ns"]
        locality = f"about {est:.0f} ns more per section when the lock comes from another thread (estimate)"
    else:
        poor, locality = False, "locality unknown"
    upper = t["upper_cs_percent"]
    very_hot = upper is not None and cs >= upper
    rcl_ok = cpus >= t["rcl_min_cpus"]
    cond = (site.get("cond_waits") or 0) > 0

    if threads > cpus:
        cull = t["cull_contention_percent"]
        if cull is not None and contention >= cull:
            return out(
                "mcscr",
                f"{threads} threads on {cpus} CPUs and contention ({contention_words}): a "
                "Malthusian lock parks the surplus waiters and hands off within a small "
                "active set",
            )
        return out(
            "shfl-block",
            f"{threads} threads on {cpus} CPUs: waiters must sleep, not spin; a blocking "
            f"ShflLock ({_pct(cs)} of thread time; {contention_words})",
        )
    if very_hot or poor:
        why = (
            f"hot: {_pct(cs)} of thread time (above {_pct(upper)})"
            if very_hot
            else f"{_pct(cs)} of thread time with poor locality ({locality})"
        )
        if rcl_ok:
            note = ""
            if (site.get("trylock_failures") or 0) > 0:
                note = "; note: under RCL a trylock that succeeds may still wait"
            return out("rcl", f"{why}: Remote Core Locking keeps the data on a server core{note}")
        if not cond:
            return out(
                "ccsynch",
                f"{why}: combining (CC-Synch) keeps the data in one cache; RCL would take one "
                f"of only {cpus} CPUs",
            )
        return out(
            "shfl",
            f"{why}, but it is used with condition variables, which combining locks do not "
            f"serve, and RCL would take one of only {cpus} CPUs: ShflLock",
        )
    return out(
        "shfl",
        f"contended ({_pct(cs)} of thread time; {contention_words}) with "
        f"{'good' if est is not None or misses is not None else 'unmeasured'} locality: "
        "ShflLock (queue lock with a fast path)",
    )
