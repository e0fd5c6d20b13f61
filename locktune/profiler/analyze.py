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

    def __init__(
        self,
        profile: rawmod.RawProfile,
        source_root: Path,
        wrappers: set[str],
        modules: dict[str, Module] | None = None,
        code: dict[str, dict[int, list[Location]]] | None = None,
    ):
        """`modules`: Module objects by path, and `code`: the addresses resolved so far in
        each, shared by the processes of one run (a forked child has its parent's modules
        and sites: their symbols, DWARF and addresses are read once)."""
        self.raw = profile
        self.root = Path(source_root).resolve()
        self.wrappers = wrappers
        cache = {} if modules is None else modules
        self.modules = [cache.setdefault(m.path, Module(m.path)) for m in profile.modules]
        self._known = {} if code is None else code
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
            for key in s.callsites:  # callers of lock, trylock, timedlock: return addresses
                if key is not None and 0 <= key[0] < len(self.modules):
                    want[key[0]].append(key[1] - 1)
        for mod, addrs in want.items():
            known = self._known.setdefault(self.modules[mod].path, {})
            missing = [a for a in addrs if a not in known]
            if missing:
                known.update(self.modules[mod].code(missing))
            self._code[mod] = known

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
            if not chain or (chain[0].function is None and chain[0].file is None):
                # no symbol holds it: module+offset, never a neighbour's name
                out.append(
                    {
                        "function": None,
                        "file": None,
                        "line": None,
                        "module": self.module_name(mod),
                        "symbol": self.modules[mod].anonymous(vaddr - 1)
                        if 0 <= mod < len(self.modules)
                        else f"{vaddr - 1:#x} (unknown module)",
                    }
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

    def callsite(self, key: tuple[int, int] | None) -> dict:
        """Where a lock is taken: the caller of the lock call, from its return address (the
        innermost frame of an inline chain: the line of the lock call itself)."""
        if key is None:
            return {"file": None, "line": None, "function": None, "module": None, "other": True}
        mod, vaddr = key
        module = self.module_name(mod)
        chain = self._code.get(mod, {}).get(vaddr - 1) if mod >= 0 else None
        if chain:
            loc = chain[0]
            return {
                "file": self.rel(loc.file),
                "line": loc.line,
                "function": loc.function,
                "module": module,
            }
        sym = (
            self.modules[mod].symbol_at(vaddr - 1, "func") if 0 <= mod < len(self.modules) else None
        )
        label = f"{os.path.basename(module or '?')}+{vaddr - 1:#x}"
        if sym:
            label = f"{sym[0]}+{sym[1]:#x}"
        return {"file": None, "line": None, "function": None, "module": module, "symbol": label}

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
            if sym:
                label = f"{sym[0]}+{sym[1]:#x}"
            elif 0 <= mod < len(self.modules):
                label = self.modules[mod].anonymous(vaddr)
            else:
                label = f"{os.path.basename(module or '?')}+{vaddr:#x}"
            return {"file": None, "line": None, "symbol": label, "function": None, "module": module}
        frames = self.frames(site)
        # The innermost frame that is not a --wrapper: one without a name is named by its
        # module and offset (frames()), never after its caller, so that distinct sites
        # keep distinct names.
        chosen = next(
            (f for f in frames if f["function"] not in self.wrappers),
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


def scaled(slots: dict, outside: float = 0.0) -> dict:
    """Slot sums with the untimed uncontended acquisitions estimated from the random samples
    (layout.h, "Timing"): hold and cs grow by (acquisitions - timed) x the samples' mean.
    The samples exclude preempted ones, so the estimate is of the sections' time on a CPU:
    preemption inside an untimed uncontended section (which no thread waited on) is not
    counted; waits are always measured.  Counts stay exact.  `outside`: what each timed
    section's cs lacks of its lock call's entry and release call's return (the wrappers' own
    instructions outside its window: timed_outside)."""
    out = dict(slots)
    out["timed_hold"] = slots["hold"]
    untimed = slots["acquisitions"] - slots["timed"]
    for k in ("hold", "cs"):
        out[k] = slots[k] + _estimate(
            untimed, slots[f"{k}_free"], slots["timed_free"], slots[k], slots["timed"]
        )
    out["cs"] += slots["timed"] * outside
    return out


def timed_outside(header: dict) -> float:
    """Ticks a timed section's own window leaves out of the pair of calls it is, measured at
    start-up (interpose.c, ltp_sample_calibrate: timed_bias, a negative difference): the
    site lookup and sampling decision before its first reading, the bookkeeping after its
    last.  The program waits for them all the same, as it does in the untimed pairs that the
    random samples stand for (sample_bias)."""
    return float(max(0, -header.get("timed_bias", 0)))


def scaled_callsite(c: dict, site: dict, outside: float = 0.0) -> dict:
    """A callsite's sums (raw.CALLSITE_FIELDS) with its untimed acquisitions estimated as
    the site's are (scaled): from this caller's own random samples (callers of one lock run
    sections of different lengths), or, before it has any, from the site's."""
    out = dict(c)
    untimed = c["acquisitions"] - c["timed"]
    for k in ("hold", "cs"):
        if c["timed_free"]:
            add = _estimate(untimed, c[f"{k}_free"], c["timed_free"], c[k], c["timed"])
        else:
            add = _estimate(untimed, site[f"{k}_free"], site["timed_free"], c[k], c["timed"])
        out[k] = c[k] + add
    out["cs"] += c["timed"] * outside
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
    if slots["long_cs"] == 2:  # raw.py: in some thread, frequent long random samples
        return "exact: frequent long samples (after the first ones)"
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


# Slot sums that are times: converted from the raw file's ticks to nanoseconds per process,
# so that the figures of several processes add up.
TIME_FIELDS = (
    "hold",
    "cs",
    "wait",
    "timed_hold",
    "remote_hold",
    "max_hold",
    "cond_wait",
    "max_cond_wait",
)


def _active(s: rawmod.Site) -> bool:
    sl = s.slots
    if s.kind == "cond":
        return bool(sl.get("cond_waits") or sl.get("signals") or sl.get("broadcasts"))
    return bool(sl.get("acquisitions") or sl.get("trylock_failures"))


class Process:
    """One raw file resolved: a process, or one image of it (an exec starts a new file under
    the same pid).  Its sites are grouped by identity (file:line, or module and symbol
    without debug information), their figures in nanoseconds, so that the groups of several
    processes merge by adding."""

    def __init__(
        self,
        profile: rawmod.RawProfile,
        *,
        source_root: Path,
        wrappers: set[str],
        clock: dict | None,
        modules: dict[str, Module],
        code: dict[str, dict[int, list[Location]]],
    ):
        self.raw = profile
        h = profile.header
        self.hz, self.hz_source = clock_hz(profile, clock)
        self.outside = timed_outside(h)
        self.end = end_ticks(profile)
        thread_ticks = 0
        cs_outer = 0.0
        self.noise = self.foreign = self.overflow = self.threads_seen = 0
        self.preempted = preemption(profile)
        for r in profile.records:
            thread_ticks += r.time
            if r.serial and r.start_ticks:
                thread_ticks += max(0, self.end - r.start_ticks)
            # Outermost sections not timed (layout.h, "Timing"): estimated from the random ones.
            cs_outer += (
                r.cs_outer
                + r.outer_timed * self.outside
                + _estimate(
                    r.outer_sections - r.outer_timed,
                    r.cs_outer_random,
                    r.outer_random,
                    r.cs_outer,
                    r.outer_timed,
                )
            )
            self.noise += r.clock_noise
            self.foreign += r.foreign_unlocks
            self.overflow += r.held_overflow
            self.threads_seen += r.occupants
        self.thread_ns = _ns(thread_ticks, self.hz)
        self.cs_ns = _ns(cs_outer, self.hz)
        self.counting = bool(h["flags"] & rawmod.FLAG_PMU_COUNTING)

        active = [s for s in profile.sites if _active(s) or s.created]
        self.resolver = Resolver(profile, source_root, wrappers, modules, code)
        if active:  # an idle process (a shell, a fork about to exec) costs no addr2line
            self.resolver.prepare()
        else:
            self.resolver.tails, self.resolver.notes = {}, []
        self.debug = {}
        if active:
            self.debug = {
                m.path: self.resolver.modules[m.index].has_debug_info for m in profile.modules
            }
        self.groups: dict[tuple, dict] = {}
        for s in active:
            ident = self.resolver.resolve(s)
            name = ident.get("symbol") or ident.get("function")
            if ident["file"] and ident["line"]:
                key = (ident["file"], ident["line"], s.kind)
            elif name:  # symbol+offset or module+offset: one place, as a file:line is
                key = (ident.get("module"), name, s.kind)
            else:
                key = (ident.get("module"), None, s.kind, s.index)
            g = self.groups.get(key)
            if g is None:
                g = self.groups[key] = {
                    "ident": ident,
                    "kind": s.kind,
                    "origin": s.origin,
                    "attrs": set(),
                    "slots": dict.fromkeys(rawmod.SLOT_FIELDS[1:], 0),
                    "max_live": 0,
                    "created": 0,
                    "live": 0,
                    "raw": 0,
                    "callsites": {},
                }
            g["raw"] += 1
            for key, c in s.callsites.items():
                where = self.resolver.callsite(key)
                ckey = (where["file"], where["line"], where["function"], where.get("symbol"))
                if where.get("other"):
                    ckey = None
                into = g["callsites"].setdefault(
                    ckey, {"where": where, "raw": dict.fromkeys(c, 0), "site_slots": []}
                )
                for k, v in c.items():
                    into["raw"][k] += v
                into["site_slots"].append(s.slots)
            g["attrs"].update(s.attrs)
            g["max_live"] += max(s.max_live, 0)
            g["created"] += s.created
            g["live"] += max(s.live, 0)
            for k, v in s.slots.items():
                g["slots"][k] = (
                    max(g["slots"][k], v) if k in rawmod.MAX_FIELDS else g["slots"][k] + v
                )
        for g in self.groups.values():
            slots = g.pop("slots")
            sums = scaled(slots, self.outside)
            for k in TIME_FIELDS:
                sums[k] = _ns(sums[k], self.hz)
            g["sums"] = sums
            for c in g["callsites"].values():
                cs = scaled_callsite(c.pop("raw"), slots, self.outside)
                c.pop("site_slots")
                for k in ("wait", "hold", "cs"):
                    cs[k] = _ns(cs[k], self.hz)
                c["sums"] = cs
        self.acquisitions = sum(
            g["sums"]["acquisitions"] for g in self.groups.values() if g["kind"] != "cond"
        )
        self.site_cs_ns = sum(g["sums"]["cs"] for g in self.groups.values() if g["kind"] != "cond")

    @property
    def pid(self) -> int:
        return self.raw.pid

    @property
    def image(self) -> int:
        return self.raw.image

    def notes(self) -> list[str]:
        h = self.raw.header
        notes = list(self.resolver.notes)
        if any(g["ident"].get("file") is None for g in self.groups.values()):
            if not Module(self.raw.exe).has_debug_info:
                notes.append(
                    f"{self.raw.exe} has no debug information: its sites are shown as "
                    "symbol+offset (module+offset where no symbol holds them); rebuild it "
                    "with -g for file:line, or name the folder of its debug files in "
                    "$LOCKTUNE_DEBUG_DIRS"
                )
        if h["locks_untracked"]:
            notes.append(f"{h['locks_untracked']} lock operations untracked (lock table full)")
        if h["sites_overflow"]:
            notes.append(
                f"{h['sites_overflow']} sites beyond the site table's capacity were merged"
            )
        busy = self.preempted["ratio"]
        if busy is not None and busy >= 0.25:
            sampled = any(
                timing_of(g["sums"], h["sample_period"]).startswith("sampled")
                for g in self.groups.values()
                if g["kind"] != "cond"
            )
            notes.append(
                f"the machine was busy: threads waited {busy:.2f} s for a CPU per second they "
                "ran (scheduler delays are inside the times"
                + ("; untimed short sections count their time on a CPU only)" if sampled else ")")
            )
        if h["threads_untracked"]:
            notes.append(f"{h['threads_untracked']} threads untracked (arena full)")
        if not self.raw.finished and self.groups:
            notes.append(
                "the process ended without running its exit handlers (_exit, a signal): "
                "figures are as of each thread's last lock operation"
            )
        return notes


def _merge(groups: list[dict]) -> dict:
    """One site's groups from several processes, as one."""
    first = groups[0]
    out = {
        "ident": first["ident"],
        "kind": first["kind"],
        "origin": first["origin"],
        "attrs": set(),
        "sums": dict.fromkeys(first["sums"], 0),
        "max_live": 0,
        "created": 0,
        "live": 0,
        "raw": 0,
        "callsites": {},
    }
    for g in groups:
        out["attrs"] |= g["attrs"]
        for key, c in g["callsites"].items():
            into = out["callsites"].setdefault(
                key, {"where": c["where"], "sums": dict.fromkeys(c["sums"], 0)}
            )
            for k, v in c["sums"].items():
                into["sums"][k] += v
        for k in ("max_live", "created", "live", "raw"):
            out[k] += g[k]
        for k, v in g["sums"].items():
            out["sums"][k] = (
                max(out["sums"][k], v) if k in rawmod.MAX_FIELDS else out["sums"][k] + v
            )
        if out["ident"].get("backtrace") is None and g["ident"].get("backtrace"):
            out["ident"] = g["ident"]
    return out


def _site(ident: dict) -> dict:
    return {
        "file": ident.get("file"),
        "line": ident.get("line"),
        "symbol": ident.get("symbol"),
        "function": ident.get("function"),
        "module": ident.get("module"),
    }


def _lock_entry(
    g: dict,
    thread_ns: float,
    *,
    counting: bool,
    period: int,
    machine: dict,
    thresholds: dict,
) -> dict:
    sl = g["sums"]
    acq = sl["acquisitions"]
    exclusive = acq - sl["read_acquisitions"]
    ident = g["ident"]
    entry = {
        "site": _site(ident),
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
        "owner_changes": sl["owner_changes"],
        "owner_change_percent": round(100.0 * sl["owner_changes"] / exclusive, 3)
        if exclusive > 0
        else 0.0,
        # sections whose thread lost its CPU inside (preempted, migrated, signalled), seen
        # where meta.timing.lost_cpu_seen (profiler/src/tripwire.h)
        "lost_cpu_sections": sl["lost_cpu"],
        # timed sections of LTP_OUTLIER_TICKS or more that kept their CPU (track.h)
        "outlier_sections": sl["outliers"],
        "wait_ns": round(sl["wait"]),
        "wait_percent": round(100.0 * sl["wait"] / sl["cs"], 3) if sl["cs"] else 0.0,
        "hold_ns": round(sl["hold"]),
        "cs_ns": round(sl["cs"]),
        "cs_percent": round(100.0 * sl["cs"] / thread_ns, 3) if thread_ns else 0.0,
        "max_hold_ns": round(sl["max_hold"]),
        "avg_wait_ns": round(sl["wait"] / acq, 1) if acq else None,
        "avg_hold_ns": round(sl["hold"] / acq, 1) if acq else None,
        "cond_waits": sl["cond_waits"],
        "cond_wait_ns": round(sl["cond_wait"]),
        "misses_per_cs": round(sl["misses"] / sl["timed"], 2) if counting and sl["timed"] else None,
        "timed_acquisitions": sl["timed"],
        "timing": timing_of(sl, period),
        "locality_estimate": locality(
            sl["timed"], sl["timed_hold"], sl["remote_acquisitions"], sl["remote_hold"]
        ),
        "raw_sites": g["raw"],
        "callsites": _callsites(g.get("callsites", {}), thread_ns),
    }
    entry["recommendation"] = rec.recommend(entry, machine, thresholds["values"])
    return entry


def _callsites(callsites: dict, thread_ns: float) -> list[dict]:
    """profile.json's callsites[] of one lock: the places it is acquired, by critical-section
    time.  The "other callers" bucket (callers past the profiler's per-thread table,
    layout.h LTP_CALLSITES) is an entry with `other_callers`: true and no file."""
    out = []
    for key, c in callsites.items():
        w, sl = c["where"], c["sums"]
        acq = sl["acquisitions"]
        if not acq and not sl["cs"]:
            continue
        e = {
            "file": w["file"],
            "line": w["line"],
            "function": w["function"],
            "module": w["module"],
            "acquisitions": acq,
            "contended": sl["contended"],
            "hold_ns": round(sl["hold"]),
            "wait_ns": round(sl["wait"]),
            "cs_ns": round(sl["cs"]),
            "cs_percent": round(100.0 * sl["cs"] / thread_ns, 3) if thread_ns else 0.0,
            "timed_acquisitions": sl["timed"],
        }
        if w.get("symbol"):
            e["symbol"] = w["symbol"]
        if key is None:
            e["other_callers"] = True
        out.append(e)
    out.sort(key=lambda e: (-e["cs_ns"], -e["acquisitions"], str(e["file"]), e["line"] or 0))
    return out


def _cond_entry(g: dict) -> dict:
    sl = g["sums"]
    waits = sl["cond_waits"]
    return {
        "site": _site(g["ident"]),
        "origin": g["origin"],
        "attributes": sorted(g["attrs"]),
        "instances": g["max_live"],
        "created": g["created"],
        "live_at_end": g["live"],
        "threads": sl["threads"],
        "waits": waits,
        "timed_waits": sl["timed_waits"],
        "timeouts": sl["timeouts"],
        "wait_ns": round(sl["cond_wait"]),
        "avg_wait_ns": round(sl["cond_wait"] / waits, 1) if waits else None,
        "max_wait_ns": round(sl["max_cond_wait"]),
        "signals": sl["signals"],
        "signals_without_waiter": sl["signals_unwaited"],
        "broadcasts": sl["broadcasts"],
        "broadcasts_without_waiter": sl["broadcasts_unwaited"],
        "raw_sites": g["raw"],
    }


def _rank_locks(locks: list[dict]) -> list[dict]:
    locks.sort(key=lambda e: (-e["cs_percent"], -e["acquisitions"], e["site"]["file"] or ""))
    for i, e in enumerate(locks, 1):
        e["id"] = i
    return locks


def _rank_conds(conds: list[dict]) -> list[dict]:
    conds.sort(
        key=lambda e: (
            -e["wait_ns"],
            -(e["waits"] + e["signals"] + e["broadcasts"]),
            e["site"]["file"] or "",
        )
    )
    for i, e in enumerate(conds, 1):
        e["id"] = i
    return conds


def _part(p: Process, sums: dict, kind: str) -> dict:
    """A merged entry's share from one process."""
    if kind == "cond":
        return {"pid": p.pid, "image": p.image, "waits": sums["cond_waits"]}
    return {
        "pid": p.pid,
        "image": p.image,
        "acquisitions": sums["acquisitions"],
        "cs_ns": round(sums["cs"]),
    }


def _entries(
    groups: list[dict],
    thread_ns: float,
    *,
    counting: bool,
    period: int,
    machine: dict,
    thresholds: dict,
    per_process: bool,
) -> tuple[list[dict], list[dict]]:
    locks, conds = [], []
    for g in groups:
        if g["kind"] == "cond":
            e = _cond_entry(g)
        else:
            e = _lock_entry(
                g,
                thread_ns,
                counting=counting,
                period=period,
                machine=machine,
                thresholds=thresholds,
            )
        if not per_process:
            if g["ident"].get("backtrace"):
                e["backtrace"] = g["ident"]["backtrace"]
            e["processes"] = [_part(p, pg["sums"], g["kind"]) for p, pg in g["parts"]]
        (conds if g["kind"] == "cond" else locks).append(e)
    return _rank_locks(locks), _rank_conds(conds)


def _started_by(p: Process, profiles: list[Process], main_pid: int) -> str:
    """How the process (image) began: `launch` (the program locktune ran), `fork` (a fork of
    a profiled process), `exec` (a new program: in a process seen before, or in a child the
    profiler saw no fork of, such as posix_spawn)."""
    if any(q.pid == p.pid and q.image < p.image for q in profiles):
        return "exec"
    if p.raw.forked_child:
        return "fork"
    return "launch" if p.pid == main_pid else "exec"


def _process_meta(p: Process, started_by: str, exit_info: dict | None) -> dict:
    h = p.raw.header
    cmd = p.raw.cmdline or [p.raw.exe]
    return {
        "pid": p.pid,
        "image": p.image,
        "parent_pid": h["ppid"],
        "started_by": started_by,
        "program": cmd[0],
        "arguments": cmd[1:],
        "executable": p.raw.exe,
        "forked_child": p.raw.forked_child,
        "exit": exit_info,
        "ended_normally": p.raw.finished,
        "wall_ns": round(_ns(p.end - h["start_ticks"], p.hz)),
        "threads": p.threads_seen,
        "threads_created": h["threads_created"],
        "max_live_threads": h["threads_max_live"],
        "timing": {"sample_period": h["sample_period"]},
        "untracked": {
            "lock_operations": h["locks_untracked"],
            "threads": h["threads_untracked"],
            "unlocks_not_held": p.foreign,
            "nesting_overflow": p.overflow,
        },
        "notes": p.notes(),
    }


def _totals(thread_ns: float, cs_ns: float, locks: list[dict], conds: list[dict]) -> dict:
    return {
        "thread_ns": round(thread_ns),
        "cs_ns": round(cs_ns),
        "cs_percent": round(100.0 * cs_ns / thread_ns, 3) if thread_ns else 0.0,
        "acquisitions": sum(e["acquisitions"] for e in locks),
        "sites": len(locks),
        "condition_variables": len(conds),
    }


def build_run(
    profiles: list[rawmod.RawProfile],
    main_pid: int,
    *,
    source_root: Path,
    wrappers: set[str] | None = None,
    clock: dict | None = None,
    thresholds: dict | None = None,
    program: list[str] | None = None,
    wall_ns: int | None = None,
    exit_info: dict | None = None,
) -> dict:
    """profile.json for a run: every process (forked children, exec'd programs), each with
    its own meta, totals, sites and condition variables in `processes[]`; at the top, the
    sites of all processes merged by identity (file:line: the rewriter's join key), ranked
    by their share of the thread time of all processes, so that no process's work is
    hidden.  `meta` describes the launched program (its last image; or, when it took no
    lock, the busiest process) with thread counts over all processes."""
    thresholds = thresholds or rec.load()
    wrappers = set(wrappers or ())
    main, _others = choose(profiles, main_pid)
    modules: dict[str, Module] = {}
    code: dict[str, dict] = {}
    procs = [
        Process(
            p, source_root=source_root, wrappers=wrappers, clock=clock, modules=modules, code=code
        )
        for p in profiles
    ]
    pmain = procs[profiles.index(main)]
    launched = [p for p in procs if p.pid == main_pid]
    launched_last = launched[-1] if launched else None
    cpu = cpu_info()
    period = main.header["sample_period"]

    proc_docs = []
    by_key: dict[tuple, list] = {}
    for p in procs:
        for key, g in p.groups.items():
            g["parts"] = [(p, g)]
            by_key.setdefault(key, []).append(g)
        machine = {"usable_cpus": cpu["usable"], "max_threads": p.raw.header["threads_max_live"]}
        locks, conds = _entries(
            list(p.groups.values()),
            p.thread_ns,
            counting=p.counting,
            period=period,
            machine=machine,
            thresholds=thresholds,
            per_process=True,
        )
        started = _started_by(p, procs, main_pid)
        proc_docs.append(
            {
                "meta": _process_meta(p, started, exit_info if p is launched_last else None),
                "totals": _totals(p.thread_ns, p.cs_ns, locks, conds),
                "locks": locks,
                "condition_variables": conds,
            }
        )

    # Which process did the work: the most time in critical sections, then acquisitions.
    busiest = max(range(len(procs)), key=lambda i: (procs[i].site_cs_ns, procs[i].acquisitions))
    all_cs = sum(p.site_cs_ns for p in procs)
    all_acq = sum(p.acquisitions for p in procs)
    for i, (p, d) in enumerate(zip(procs, proc_docs, strict=True)):
        d["meta"]["busiest"] = i == busiest and all_acq > 0
        d["meta"]["share"] = {
            "cs_percent": round(100.0 * p.site_cs_ns / all_cs, 2) if all_cs else 0.0,
            "acquisitions_percent": round(100.0 * p.acquisitions / all_acq, 2) if all_acq else 0.0,
        }

    merged = []
    for groups in by_key.values():
        m = _merge(groups)
        m["parts"] = [pg for g in groups for pg in g["parts"]]
        merged.append(m)
    thread_ns = sum(p.thread_ns for p in procs)
    cs_ns = sum(p.cs_ns for p in procs)
    max_live = max(p.raw.header["threads_max_live"] for p in procs)
    machine = {"usable_cpus": cpu["usable"], "max_threads": max_live}
    locks, conds = _entries(
        merged,
        thread_ns,
        counting=pmain.counting,
        period=period,
        machine=machine,
        thresholds=thresholds,
        per_process=False,
    )

    h = main.header
    boundary_ns = None
    if clock and clock.get("ordo_boundary_cycles") and pmain.hz and h["clock"] == rawmod.CLOCK_TSC:
        boundary_ns = round(clock["ordo_boundary_cycles"] * 1e9 / pmain.hz, 1)
    notes = list(proc_docs[procs.index(pmain)]["meta"]["notes"])
    # The other processes' notes, each text once with its pids (a note about machine load
    # is the launched process's alone: the others' say the same with other numbers).
    theirs: dict[str, list[int]] = {}
    for p, d in zip(procs, proc_docs, strict=True):
        if p is not pmain:
            for n in d["meta"]["notes"]:
                if not n.startswith("the machine was busy"):
                    theirs.setdefault(n, []).append(p.pid)
    for n, pids in list(theirs.items())[:10]:
        who = ", ".join(map(str, pids[:5])) + (
            f" and {len(pids) - 5} more" if len(pids) > 5 else ""
        )
        notes.append(f"pid{'s' if len(pids) > 1 else ''} {who}: {n}")
    if len(theirs) > 10:
        notes.append(f"{len(theirs) - 10} more notes in processes[].meta.notes")
    debug: dict[str, bool] = {}
    for p in procs:
        debug.update(p.debug)
    debug.setdefault(main.exe, Module(main.exe).has_debug_info)
    debug_files = {  # separate debug files used (docs/profiler.md, "Sites")
        path: m.debug_file for path, m in sorted(modules.items()) if path in debug and m.debug_file
    }
    preempted = pmain.preempted
    pmu = {
        "available": bool(h["pmu_available"]) and pmain.counting,
        "event": main.pmu_event or None,
        "reason": None if pmain.counting else (main.pmu_reason or "not probed"),
    }
    cmd = program or main.cmdline or [main.exe]
    meta = {
        "program": cmd[0],
        "arguments": cmd[1:],
        "executable": main.exe,
        "pid": main.pid,
        "forked_child": main.forked_child,
        "exit": exit_info,
        "ended_normally": main.finished,
        "wall_ns": wall_ns
        if wall_ns is not None
        else round(_ns(pmain.end - h["start_ticks"], pmain.hz)),
        "threads": sum(p.threads_seen for p in procs),
        "threads_created": sum(p.raw.header["threads_created"] for p in procs),
        "max_live_threads": max_live,
        "processes": len(procs),
        "busiest_pid": procs[busiest].pid if all_acq else None,
        "cpu": {"model": cpu["model"], "count": cpu["count"], "usable": cpu["usable"]},
        "kernel": platform.release(),
        "pmu": pmu,
        "timing": {
            "sample_period": period,
            "exact_first": main.header["exact_first"],
            "sample_bias_ns": round(_ns(main.header["sample_bias"], pmain.hz), 1),
            "sample_bias_hold_ns": round(_ns(main.header["sample_bias_hold"], pmain.hz), 1),
            # rounds of the start-up calibration undisturbed (0: the machine never let one
            # run through, and samples are taken as they are)
            "sample_bias_rounds": main.header["sample_bias_rounds"],
            # added to each timed section: its calls' instructions outside its own window
            "timed_outside_ns": round(_ns(pmain.outside, pmain.hz), 1),
            # sections that lost their CPU (preempted, migrated, signalled) are seen, timed,
            # and never stand for the untimed ones (profiler/src/tripwire.h)
            "lost_cpu_seen": bool(main.header["tripwire"]),
            "lost_cpu_unseen_why": None if main.header["tripwire"] else main.tripwire_reason,
            "method": "every section that waited, the first "
            f"{main.header['exact_first']} of each site in each thread, "
            "all of a site with long sections, then 1 in sample_period of the uncontended ones "
            "at random, the others estimated from those (their time on a CPU, less "
            "sample_bias_ns each: what a sample costs beyond an untimed pair, measured at start-up); "
            "each timed section with timed_outside_ns added (its calls' own instructions outside "
            "its clock readings, measured at start-up); counts are exact"
            if period > 1
            else "every critical section timed, with timed_outside_ns added to each (its calls' "
            "own instructions outside its clock readings, measured at start-up)",
            "waited_for_cpu_per_cpu_second": None
            if preempted["ratio"] is None
            else round(preempted["ratio"], 4),
        },
        "clock": {
            "source": "tsc" if h["clock"] == rawmod.CLOCK_TSC else "monotonic",
            "hz": round(pmain.hz) if pmain.hz else None,
            "hz_source": pmain.hz_source,
            "ordo_boundary_ns": boundary_ns,
            "negative_differences": sum(p.noise for p in procs),
        },
        "source_root": str(Path(source_root).resolve()),
        "wrappers": sorted(wrappers),
        "debug_info": debug,
        "debug_files": debug_files,
        "thresholds": {"source": thresholds["source"], **thresholds["values"]},
        "untracked": {
            "lock_operations": sum(p.raw.header["locks_untracked"] for p in procs),
            "threads": sum(p.raw.header["threads_untracked"] for p in procs),
            "unlocks_not_held": sum(p.foreign for p in procs),
            "nesting_overflow": sum(p.overflow for p in procs),
        },
        "notes": notes,
        "locktune": __version__,
    }
    others = [
        {
            "pid": p.pid,
            "image": p.image,
            "executable": p.raw.exe,
            "forked_child": p.raw.forked_child,
            "started_by": d["meta"]["started_by"],
            "acquisitions": p.acquisitions,
        }
        for p, d in zip(procs, proc_docs, strict=True)
        if p is not pmain
    ]
    if others:
        meta["other_processes"] = others
    return {
        "schema": document.SCHEMA,
        "meta": meta,
        "totals": {**_totals(thread_ns, cs_ns, locks, conds), "processes": len(procs)},
        "locks": locks,
        "condition_variables": conds,
        "processes": proc_docs,
    }


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
) -> dict:
    """profile.json of one process alone (`locktune calibrate`: its benchmark's process)."""
    return build_run(
        [profile],
        profile.pid,
        source_root=source_root,
        wrappers=wrappers,
        clock=clock,
        thresholds=thresholds,
        program=program,
        wall_ns=wall_ns,
        exit_info=exit_info,
    )


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
