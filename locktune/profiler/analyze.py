"""Raw files -> profile.json (schema ``locktune-profile/1``, DESIGN.md "Files exchanged").

A *site* is where locks come to life, as (file relative to the source root, line): the init
call, or the definition of a statically initialised lock.  Raw sites (one per distinct
backtrace or static variable in the process) that resolve to the same line are merged;
the rewriter computes the same (file, line) from source, which is how a profile's figures
land in locktune_config.h.
"""

from __future__ import annotations

import os
import platform
from collections import defaultdict
from pathlib import Path

from locktune import __version__
from locktune.machine import cpu_info
from locktune.profiler import document
from locktune.profiler import raw as rawmod
from locktune.profiler import recommend as rec
from locktune.profiler.symbols import Location, Module

# Fewer acquisitions than this on either side and the locality estimate is not given.
MIN_ESTIMATE_SAMPLES = 20


class Resolver:
    """Resolves the raw sites of one process to source locations."""

    def __init__(self, profile: rawmod.RawProfile, source_root: Path, wrappers: set[str]):
        self.raw = profile
        self.root = Path(source_root).resolve()
        self.wrappers = wrappers
        self.modules = [Module(m.path) for m in profile.modules]
        self._code: dict[int, dict[int, list[Location]]] = {}

    def prepare(self) -> None:
        """Resolve every code address at once (one addr2line run per module)."""
        want: dict[int, list[int]] = defaultdict(list)
        self.tails: dict[int, list[tuple[int, int]]] = {}
        self.notes: list[str] = []
        for s in self.raw.sites:
            self._tail_frames(s)
            for mod, vaddr in self.tails.get(s.index, []) + list(s.frames):
                if 0 <= mod < len(self.modules):
                    want[mod].append(vaddr - 1)  # a return address: the call is just before
        for mod, addrs in want.items():
            self._code[mod] = self.modules[mod].code(addrs)

    def _tail_frames(self, site: rawmod.Site) -> None:
        """An init reached through tail calls (`jmp pthread_mutex_init@plt` ending a
        function) leaves no frame of the function that holds the init call: its backtrace
        starts in that function's caller.  The jumps, found from the caller's call
        instruction, are put back as frames, so that the site is the init call's own line,
        the one the rewriter names (DESIGN.md, "Lock identity")."""
        if site.origin != "init" or not site.frames:
            return
        mod, ret = site.frames[0]
        if not 0 <= mod < len(self.modules):
            return
        jumps, why = self.modules[mod].tail_calls(ret)
        if why:
            self.notes.append(f"site at {self.modules[mod].path}+{ret:#x}: {why}")
        # (vaddr + 1: frames are return addresses, resolved at vaddr - 1)
        self.tails[site.index] = [(mod, j + 1) for j in jumps]

    def rel(self, path: str | None) -> str | None:
        if path is None:
            return None
        p = Path(path)
        try:
            return p.resolve().relative_to(self.root).as_posix()
        except (ValueError, OSError):
            return p.as_posix()

    def module_name(self, mod: int) -> str | None:
        return self.modules[mod].path if 0 <= mod < len(self.modules) else None

    def frames(self, site: rawmod.Site) -> list[dict]:
        """Logical frames (inline chains flattened), innermost first."""
        out = []
        for mod, vaddr in self.tails.get(site.index, []) + list(site.frames):
            chain = self._code.get(mod, {}).get(vaddr - 1) if mod >= 0 else None
            if not chain:
                out.append(
                    {"function": None, "file": None, "line": None, "module": self.module_name(mod)}
                )
                continue
            for loc in chain:
                out.append(
                    {
                        "function": loc.function,
                        "file": self.rel(loc.file),
                        "line": loc.line,
                        "module": self.module_name(mod),
                    }
                )
        return out

    def variable(self, mod: int, vaddr: int) -> tuple[dict | None, str | None]:
        """(definition {file, line}, "name" + detail) of the static variable at vaddr."""
        if not 0 <= mod < len(self.modules):
            return None, None
        var, detail = self.modules[mod].variable_at(vaddr)
        if var is None:
            return None, detail  # detail is then the ELF symbol name, if any
        name = var.name + (detail or "")
        return {"file": self.rel(var.file), "line": var.line}, name

    def resolve(self, site: rawmod.Site) -> dict:
        """The site's identity: {file, line, symbol, function, module, ...}."""
        if site.origin == "overflow":
            return {"file": None, "line": None, "symbol": "(site table full)", "function": None}
        if site.origin == "static" and site.addr:
            mod, vaddr = site.addr
            where, name = self.variable(mod, vaddr)
            module = self.module_name(mod)
            if where and where["file"] and where["line"]:
                return {**where, "symbol": name, "function": None, "module": module}
            sym = (
                self.modules[mod].symbol_at(vaddr, "object")
                if 0 <= mod < len(self.modules)
                else None
            )
            label = (
                f"{sym[0]}+{sym[1]:#x}" if sym else f"{os.path.basename(module or '?')}+{vaddr:#x}"
            )
            return {"file": None, "line": None, "symbol": label, "function": None, "module": module}
        frames = self.frames(site)
        chosen = next(
            (
                f
                for f in frames
                if f["function"] not in self.wrappers and (f["file"] or f["function"])
            ),
            frames[0] if frames else None,
        )
        out = {"file": None, "line": None, "symbol": None, "function": None, "module": None}
        if chosen:
            out.update(chosen)
        if site.addr:
            _, name = self.variable(*site.addr)
            if name:
                out["symbol"] = name
        out["backtrace"] = frames
        return out


def scaled(slots: dict) -> dict:
    """Slot sums with the untimed uncontended acquisitions estimated from the random samples
    (layout.h, "Timing"): hold and cs grow by (acquisitions - timed) x the samples' mean.
    The samples exclude preempted ones, so the estimate is of the sections' time on a CPU:
    preemption inside an untimed uncontended section (which no thread waited on) is not
    counted; waits are always measured.  Counts stay exact."""
    out = dict(slots)
    out["timed_hold"] = slots["hold"]
    untimed = slots["acquisitions"] - slots["timed"]
    for k in ("hold", "cs"):
        out[k] = slots[k] + _estimate(
            untimed, slots[f"{k}_free"], slots["timed_free"], slots[k], slots["timed"]
        )
    return out


def preemption(p: rawmod.RawProfile) -> dict:
    """The threads' time runnable but waiting for a CPU, per unit of time on one (schedstat,
    read as each thread exited and at the end): how busy the machine was."""
    reads = sum(r.sched_reads for r in p.records)
    cpu = sum(r.cpu_ns for r in p.records)
    delay = sum(r.run_delay_ns for r in p.records)
    if reads == 0 or cpu == 0:
        return {"ratio": None, "threads_read": 0}
    return {"ratio": delay / cpu, "threads_read": reads}


def timing_of(slots: dict, period: int) -> str:
    if slots["acquisitions"] == slots["timed"] or period <= 1:
        return "exact"
    if slots["long_cs"]:
        return "exact: long sections (after the first ones)"
    return f"sampled: 1 in {period} uncontended sections timed"


def _estimate(missing: int, rsum: float, rcount: int, tsum: float, tcount: int) -> float:
    """Total of `missing` untimed values: from the random sample's mean, or (tiny counts,
    no random sample yet) from all timed values."""
    if missing <= 0:
        return 0.0
    if rcount:
        return missing * rsum / rcount
    return missing * tsum / tcount if tcount else 0.0


def _ns(ticks: float, hz: float | None) -> float:
    return ticks * 1e9 / hz if hz else float(ticks)


def clock_hz(p: rawmod.RawProfile, clock: dict | None) -> tuple[float | None, str]:
    """Ticks per second of the raw file's clock, and where the figure came from."""
    h = p.header
    if h["clock"] == rawmod.CLOCK_MONO:
        return 1e9, "CLOCK_MONOTONIC"
    span = h["end_mono_ns"] - h["start_mono_ns"]
    if p.finished and span >= 20_000_000 and h["end_ticks"] > h["start_ticks"]:
        return (h["end_ticks"] - h["start_ticks"]) * 1e9 / span, "measured over the run"
    if clock and clock.get("tsc_hz"):
        return float(clock["tsc_hz"]), "locktune-probe --clock"
    return None, "unknown"


def end_ticks(p: rawmod.RawProfile) -> int:
    h = p.header
    if p.finished:
        return h["end_ticks"]
    return max([r.last_ticks for r in p.records] + [h["start_ticks"]])


def locality(acq: int, hold: float, racq: int, rhold: float) -> dict:
    local = acq - racq
    est = {
        "extra_ns_per_cs": None,
        "remote_fraction": round(racq / acq, 4) if acq else None,
        "remote_hold_ns": round(rhold / racq, 1) if racq else None,
        "local_hold_ns": round((hold - rhold) / local, 1) if local > 0 else None,
        "label": "estimate",
        "method": "mean hold time when the lock came from another thread minus mean hold "
        "time when the same thread took it again",
        "reason": None,
    }
    if racq < MIN_ESTIMATE_SAMPLES or local < MIN_ESTIMATE_SAMPLES:
        est["reason"] = (
            f"too few acquisitions to compare ({racq} from another thread, {local} from the "
            f"same thread; at least {MIN_ESTIMATE_SAMPLES} each)"
        )
    else:
        est["extra_ns_per_cs"] = round(est["remote_hold_ns"] - est["local_hold_ns"], 1)
    return est


def build(
    profile: rawmod.RawProfile,
    *,
    source_root: Path,
    wrappers: set[str] | None = None,
    clock: dict | None = None,
    thresholds: dict | None = None,
    program: list[str] | None = None,
    wall_ns: int | None = None,
    exit_info: dict | None = None,
    other_processes: list[dict] | None = None,
) -> dict:
    thresholds = thresholds or rec.load()
    h = profile.header
    hz, hz_source = clock_hz(profile, clock)
    end = end_ticks(profile)
    thread_ticks = 0
    cs_outer = 0.0
    noise = foreign = overflow = 0
    threads_seen = 0
    preempted = preemption(profile)
    for r in profile.records:
        thread_ticks += r.time
        if r.serial and r.start_ticks:
            thread_ticks += max(0, end - r.start_ticks)
        # Outermost sections not timed (layout.h, "Timing"): estimated from the random ones.
        cs_outer += r.cs_outer + _estimate(
            r.outer_sections - r.outer_timed,
            r.cs_outer_random,
            r.outer_random,
            r.cs_outer,
            r.outer_timed,
        )
        noise += r.clock_noise
        foreign += r.foreign_unlocks
        overflow += r.held_overflow
        threads_seen += r.occupants
    thread_ns = _ns(thread_ticks, hz)

    resolver = Resolver(profile, source_root, set(wrappers or ()))
    resolver.prepare()
    debug = {m.path: resolver.modules[m.index].has_debug_info for m in profile.modules}

    groups: dict[tuple, dict] = {}
    for s in profile.sites:
        active = s.slots.get("acquisitions", 0) or s.slots.get("trylock_failures", 0)
        if not active and not s.created:
            continue
        ident = resolver.resolve(s)
        if ident["file"] and ident["line"]:
            key = (ident["file"], ident["line"], s.kind)
        else:
            key = (
                ident.get("module"),
                ident.get("symbol") or ident.get("function"),
                s.kind,
                s.index,
            )
        g = groups.get(key)
        if g is None:
            g = groups[key] = {
                "ident": ident,
                "kind": s.kind,
                "origin": s.origin,
                "attrs": set(),
                "slots": dict.fromkeys(rawmod.SLOT_FIELDS[1:], 0),
                "max_live": 0,
                "created": 0,
                "live": 0,
                "raw": 0,
            }
        g["raw"] += 1
        g["attrs"].update(s.attrs)
        g["max_live"] += max(s.max_live, 0)
        g["created"] += s.created
        g["live"] += max(s.live, 0)
        for k, v in s.slots.items():
            g["slots"][k] = max(g["slots"][k], v) if k == "max_hold" else g["slots"][k] + v

    counting = bool(h["flags"] & rawmod.FLAG_PMU_COUNTING)
    cpu = cpu_info()
    machine = {"usable_cpus": cpu["usable"], "max_threads": h["threads_max_live"]}
    locks = []
    for g in groups.values():
        sl = scaled(g["slots"])
        acq = sl["acquisitions"]
        cs_ns = _ns(sl["cs"], hz)
        ident = g["ident"]
        site = {
            "file": ident.get("file"),
            "line": ident.get("line"),
            "symbol": ident.get("symbol"),
            "function": ident.get("function"),
            "module": ident.get("module"),
        }
        entry = {
            "site": site,
            "kind": g["kind"],
            "origin": g["origin"],
            "attributes": sorted(g["attrs"]),
            "instances": g["max_live"],
            "created": g["created"],
            "live_at_end": g["live"],
            "threads": sl["threads"],
            "acquisitions": acq,
            "contended": sl["contended"],
            "contention_percent": round(100.0 * sl["contended"] / acq, 3) if acq else 0.0,
            "trylock_failures": sl["trylock_failures"],
            "timeouts": sl["timeouts"],
            "read_acquisitions": sl["read_acquisitions"],
            "wait_ns": round(_ns(sl["wait"], hz)),
            "wait_percent": round(100.0 * sl["wait"] / sl["cs"], 3) if sl["cs"] else 0.0,
            "hold_ns": round(_ns(sl["hold"], hz)),
            "cs_ns": round(cs_ns),
            "cs_percent": round(100.0 * cs_ns / thread_ns, 3) if thread_ns else 0.0,
            "max_hold_ns": round(_ns(sl["max_hold"], hz)),
            "avg_wait_ns": round(_ns(sl["wait"], hz) / acq, 1) if acq else None,
            "avg_hold_ns": round(_ns(sl["hold"], hz) / acq, 1) if acq else None,
            "cond_waits": sl["cond_waits"],
            "cond_wait_ns": round(_ns(sl["cond_wait"], hz)),
            "misses_per_cs": round(sl["misses"] / sl["timed"], 2)
            if counting and sl["timed"]
            else None,
            "timed_acquisitions": sl["timed"],
            "timing": timing_of(sl, h["sample_period"]),
            "locality_estimate": locality(
                sl["timed"],
                _ns(sl["timed_hold"], hz),
                sl["remote_acquisitions"],
                _ns(sl["remote_hold"], hz),
            ),
            "raw_sites": g["raw"],
        }
        if ident.get("backtrace"):
            entry["backtrace"] = ident["backtrace"]
        entry["recommendation"] = rec.recommend(entry, machine, thresholds["values"])
        locks.append(entry)
    locks.sort(key=lambda e: (-e["cs_percent"], -e["acquisitions"], e["site"]["file"] or ""))
    for i, e in enumerate(locks, 1):
        e["id"] = i

    boundary_ns = None
    if clock and clock.get("ordo_boundary_cycles") and hz and h["clock"] == rawmod.CLOCK_TSC:
        boundary_ns = round(clock["ordo_boundary_cycles"] * 1e9 / hz, 1)
    notes = list(resolver.notes)
    exe_debug = Module(profile.exe).has_debug_info
    debug.setdefault(profile.exe, exe_debug)
    if not exe_debug and any(e["site"]["file"] is None for e in locks):
        notes.append(
            f"{profile.exe} has no debug information: its sites are shown as symbol+offset; "
            "rebuild it with -g for file:line"
        )
    if h["locks_untracked"]:
        notes.append(f"{h['locks_untracked']} lock operations untracked (lock table full)")
    if h["sites_overflow"]:
        notes.append(f"{h['sites_overflow']} sites beyond the site table's capacity were merged")
    busy = preempted["ratio"]
    if busy is not None and busy >= 0.25:
        notes.append(
            f"the machine was busy: threads waited {busy:.2f} s for a CPU per second they ran "
            "(scheduler delays are inside the times"
            + (
                "; untimed short sections count their time on a CPU only)"
                if any(e["timing"].startswith("sampled") for e in locks)
                else ")"
            )
        )
    if h["threads_untracked"]:
        notes.append(f"{h['threads_untracked']} threads untracked (arena full)")
    if not profile.finished:
        notes.append(
            "the process ended without running its exit handlers (_exit, a signal): figures "
            "are as of each thread's last lock operation"
        )

    pmu = {
        "available": bool(h["pmu_available"]) and counting,
        "event": profile.pmu_event or None,
        "reason": None if counting else (profile.pmu_reason or "not probed"),
    }
    meta = {
        "program": (program or profile.cmdline or [profile.exe])[0],
        "arguments": (program or profile.cmdline)[1:] if (program or profile.cmdline) else [],
        "executable": profile.exe,
        "pid": profile.pid,
        "forked_child": profile.forked_child,
        "exit": exit_info,
        "ended_normally": profile.finished,
        "wall_ns": wall_ns if wall_ns is not None else round(_ns(end - h["start_ticks"], hz)),
        "threads": threads_seen,
        "threads_created": h["threads_created"],
        "max_live_threads": h["threads_max_live"],
        "cpu": {"model": cpu["model"], "count": cpu["count"], "usable": cpu["usable"]},
        "kernel": platform.release(),
        "pmu": pmu,
        "timing": {
            "sample_period": h["sample_period"],
            "exact_first": 256,
            "method": "every section that waited, the first 256 of each site in each thread, "
            "all of a site with long sections, then 1 in sample_period of the uncontended ones "
            "at random, the others estimated from those (their time on a CPU); counts are exact"
            if h["sample_period"] > 1
            else "every critical section timed",
            "waited_for_cpu_per_cpu_second": None
            if preempted["ratio"] is None
            else round(preempted["ratio"], 4),
        },
        "clock": {
            "source": "tsc" if h["clock"] == rawmod.CLOCK_TSC else "monotonic",
            "hz": round(hz) if hz else None,
            "hz_source": hz_source,
            "ordo_boundary_ns": boundary_ns,
            "negative_differences": noise,
        },
        "source_root": str(Path(source_root).resolve()),
        "wrappers": sorted(wrappers or ()),
        "debug_info": debug,
        "thresholds": {"source": thresholds["source"], **thresholds["values"]},
        "untracked": {
            "lock_operations": h["locks_untracked"],
            "threads": h["threads_untracked"],
            "unlocks_not_held": foreign,
            "nesting_overflow": overflow,
        },
        "notes": notes,
        "locktune": __version__,
    }
    if other_processes:
        meta["other_processes"] = other_processes
    return {
        "schema": document.SCHEMA,
        "meta": meta,
        "totals": {
            "thread_ns": round(thread_ns),
            "cs_ns": round(_ns(cs_outer, hz)),
            "cs_percent": round(100.0 * _ns(cs_outer, hz) / thread_ns, 3) if thread_ns else 0.0,
            "acquisitions": sum(e["acquisitions"] for e in locks),
            "sites": len(locks),
        },
        "locks": locks,
    }


def choose(profiles: list[rawmod.RawProfile], main_pid: int) -> tuple[rawmod.RawProfile, list]:
    """The raw profile of the launched program (its last image, if it exec'd), or, when it
    took no lock at all (a shell script that runs the real program), the busiest process."""
    if not profiles:
        raise ValueError("no raw profiles")
    mine = [p for p in profiles if p.pid == main_pid]
    main = mine[-1] if mine else None
    if main is None or main.acquisitions() == 0:
        busiest = max(profiles, key=lambda p: p.acquisitions())
        if busiest.acquisitions() > 0:
            main = busiest
    main = main or profiles[-1]
    others = [
        {
            "pid": p.pid,
            "executable": p.exe,
            "forked_child": p.forked_child,
            "acquisitions": p.acquisitions(),
        }
        for p in profiles
        if p is not main
    ]
    return main, others
