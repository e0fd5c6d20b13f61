"""Read the raw file a profiled process leaves behind (profiler/src/layout.h).

Every number is a little-endian 64-bit word, so each structure is a list of field names in
C order; the header's size fields are checked against them, and a mismatch is a clear error
rather than a misread profile.
"""

from __future__ import annotations

import mmap
import struct
from dataclasses import dataclass, field
from pathlib import Path

from locktune.errors import LocktuneError

MAGIC = b"LTPROF01"
VERSION = 3

FLAG_FINISHED = 1
FLAG_FORKED_CHILD = 2
FLAG_PMU_COUNTING = 4

CLOCK_TSC = 1
CLOCK_MONO = 2

KINDS = {1: "mutex", 2: "rwlock", 3: "spinlock", 4: "cond"}
ORIGINS = {1: "init", 2: "static", 3: "first-use"}
ATTRS = {1: "process-shared", 2: "robust", 4: "recursive", 8: "errorcheck", 16: "priority-inherit"}

HEADER_NUMBERS = (
    "version header_size module_size site_size record_size slot_size "
    "max_modules max_sites max_frames slots_per_chunk "
    "modules_off sites_off arena_off arena_size file_size pid ppid flags clock "
    "start_ticks start_mono_ns start_real_ns end_ticks end_mono_ns arena_used arena_committed "
    "nmodules nsites records free_records next_serial threads_created threads_live "
    "threads_max_live threads_untracked locks_untracked sites_overflow pmu_available "
    "pmu_open_errno pmu_pfm_error pmu_type pmu_config pmu_thread_failures sample_period "
    "exact_first sample_bias tripwire sample_bias_hold sample_bias_rounds timed_bias"
).split()
HEADER_RESERVED = 23
HEADER_SIGNED = ("sample_bias", "sample_bias_hold", "timed_bias")  # int64_t in layout.h
HEADER_STRINGS_AT = 8 + 8 * (len(HEADER_NUMBERS) + HEADER_RESERVED)  # 592, see layout.h

SITE_FIELDS = (
    "hash ready kind origin nframes attr addr_module addr_vaddr sym_vaddr live max_live "
    "created destroyed"
).split()
SITE_SIGNED = {"live", "max_live"}
SLOT_FIELDS = (
    "thread_gen acquisitions contended timed hold cs long_cs remote_acquisitions "
    "remote_hold wait max_hold timed_free hold_free cs_free trylock_failures timeouts "
    "read_acquisitions cond_waits cond_wait misses threads owner_changes callsite_hint outliers "
    "timed_waits signals broadcasts signals_unwaited broadcasts_unwaited max_cond_wait "
    "lost_cpu lost_hold"
).split()
MAX_FIELDS = {
    "max_hold",
    "max_cond_wait",
    "long_cs",
    "callsite_hint",
}  # summed over threads as a maximum
RECORD_FIELDS = (
    "next free_next serial tid start_ticks last_ticks time occupants cs_outer outer_sections "
    "outer_timed outer_random cs_outer_random clock_noise foreign_unlocks held_overflow"
).split()
CALLSITE_FIELDS = (
    "ra module vaddr acquisitions contended timed wait hold cs timed_free hold_free cs_free"
).split()
CALLSITES = 8  # per slot: LT_CALLSITES; the last is the "other callers" bucket
CALLSITE_SIZE = 96
MODULE_SIZE, SITE_SIZE, RECORD_SIZE = 512, 256, 512
SLOT_SIZE = 256 + CALLSITES * CALLSITE_SIZE
MAX_FRAMES = 8
CHUNKS = 64
SLOTS_PER_CHUNK = 64


@dataclass
class Module:
    index: int
    path: str
    base: int


@dataclass
class Site:
    index: int
    kind: str
    origin: str
    attrs: list[str]
    frames: list[tuple[int, int]]  # (module index, vaddr); module index -1: unknown
    addr: tuple[int, int] | None  # (module index, vaddr) of the first instance
    sym_vaddr: int
    live: int
    max_live: int
    created: int
    destroyed: int
    slots: dict[str, int] = field(default_factory=dict)  # summed over threads
    # callers of lock/trylock/timedlock (and condition waits), summed over threads: key
    # (module index, vaddr of the return address), or None for the "other callers" bucket
    callsites: dict = field(default_factory=dict)


@dataclass
class Record:
    serial: int
    tid: int
    start_ticks: int
    last_ticks: int
    time: int
    occupants: int
    cs_outer: int
    outer_sections: int
    outer_timed: int
    outer_random: int
    cs_outer_random: int
    clock_noise: int
    foreign_unlocks: int
    held_overflow: int
    cpu_ns: int = 0
    run_delay_ns: int = 0
    sched_reads: int = 0


@dataclass
class RawProfile:
    path: Path
    header: dict
    exe: str
    cmdline: list[str]
    pmu_event: str
    pmu_reason: str
    modules: list[Module]
    sites: list[Site]
    records: list[Record]
    tripwire_reason: str = ""

    @property
    def pid(self) -> int:
        return self.header["pid"]

    @property
    def finished(self) -> bool:
        return bool(self.header["flags"] & FLAG_FINISHED)

    @property
    def forked_child(self) -> bool:
        return bool(self.header["flags"] & FLAG_FORKED_CHILD)

    def acquisitions(self) -> int:
        return sum(s.slots.get("acquisitions", 0) for s in self.sites)

    @property
    def image(self) -> int:
        """n of the file's name <pid>-<n>.ltraw: the n-th image of this process (an exec
        starts a new file under the same pid)."""
        try:
            return int(self.path.stem.rsplit("-", 1)[1])
        except (IndexError, ValueError):
            return 0


def _words(buf, off: int, n: int) -> tuple[int, ...]:
    return struct.unpack_from(f"<{n}Q", buf, off)


def _cstr(buf, off: int, size: int) -> str:
    raw = bytes(buf[off : off + size])
    return raw.split(b"\0", 1)[0].decode("utf-8", "replace")


def _signed(v: int) -> int:
    return v - (1 << 64) if v >= 1 << 63 else v


def read(path: Path) -> RawProfile:
    """Parse one raw file.  Raises LocktuneError naming the file when it is not one."""
    path = Path(path)
    try:
        with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as buf:
            return _parse(path, buf)
    except (OSError, ValueError, struct.error) as e:
        raise LocktuneError(f"{path}: cannot read the profiler's raw file: {e}") from e


def _parse(path: Path, buf) -> RawProfile:
    if bytes(buf[:8]) != MAGIC:
        raise LocktuneError(f"{path}: not a locktune raw profile (bad magic)")
    h = dict(zip(HEADER_NUMBERS, _words(buf, 8, len(HEADER_NUMBERS)), strict=True))
    for k in HEADER_SIGNED:
        h[k] -= (h[k] >> 63) << 64
    expected = {
        "version": VERSION,
        "module_size": MODULE_SIZE,
        "site_size": SITE_SIZE,
        "slot_size": SLOT_SIZE,
        "record_size": RECORD_SIZE,
        "max_frames": MAX_FRAMES,
        "slots_per_chunk": SLOTS_PER_CHUNK,
    }
    for k, v in expected.items():
        if h[k] != v:
            raise LocktuneError(
                f"{path}: raw profile layout mismatch ({k} is {h[k]}, this locktune reads {v}): "
                "the profiler library and the locktune package come from different builds"
            )
    at = HEADER_STRINGS_AT
    pmu_event = _cstr(buf, at, 128)
    pmu_reason = _cstr(buf, at + 128, 256)
    exe = _cstr(buf, at + 384, 1024)
    (cmdline_len,) = _words(buf, at + 1408, 1)
    cmd = bytes(buf[at + 1416 : at + 1416 + min(cmdline_len, 4096)])
    cmdline = [a.decode("utf-8", "replace") for a in cmd.split(b"\0")[:-1]] if cmd else []
    tripwire_reason = _cstr(buf, at + 1416 + 4096, 256)

    modules = []
    for i in range(min(h["nmodules"], h["max_modules"])):
        off = h["modules_off"] + i * MODULE_SIZE
        (base,) = _words(buf, off, 1)
        modules.append(Module(i, _cstr(buf, off + 32, 480), base))

    sites = []
    for i in range(min(h["nsites"], h["max_sites"])):
        off = h["sites_off"] + i * SITE_SIZE
        w = dict(zip(SITE_FIELDS, _words(buf, off, len(SITE_FIELDS)), strict=True))
        if i and not w["ready"]:
            continue
        fm = _words(buf, off + 8 * len(SITE_FIELDS), MAX_FRAMES)
        fv = _words(buf, off + 8 * (len(SITE_FIELDS) + MAX_FRAMES), MAX_FRAMES)
        n = min(w["nframes"], MAX_FRAMES)
        sites.append(
            Site(
                index=i,
                kind=KINDS.get(w["kind"], "mutex" if i == 0 else "unknown"),
                origin=ORIGINS.get(w["origin"], "overflow" if i == 0 else "unknown"),
                attrs=[name for bit, name in ATTRS.items() if w["attr"] & bit],
                frames=[(fm[k] - 1, fv[k]) for k in range(n)],
                addr=(w["addr_module"] - 1, w["addr_vaddr"]) if w["addr_module"] else None,
                sym_vaddr=w["sym_vaddr"],
                live=_signed(w["live"]),
                max_live=_signed(w["max_live"]),
                created=w["created"],
                destroyed=w["destroyed"],
                slots=dict.fromkeys(SLOT_FIELDS[1:], 0),
            )
        )
    by_index = {s.index: s for s in sites}

    records = []
    off, seen = h["records"], set()
    limit = h["file_size"] or len(buf)
    while off and off not in seen and off + RECORD_SIZE <= min(limit, len(buf)):
        seen.add(off)
        r = dict(zip(RECORD_FIELDS, _words(buf, off, len(RECORD_FIELDS)), strict=True))
        cpu_ns, run_delay_ns, sched_reads = _words(buf, off + 128 + 4 * CHUNKS, 3)
        records.append(
            Record(
                **{k: r[k] for k in RECORD_FIELDS if k not in ("next", "free_next")},
                cpu_ns=cpu_ns,
                run_delay_ns=run_delay_ns,
                sched_reads=sched_reads,
            )
        )
        chunks = struct.unpack_from(f"<{CHUNKS}I", buf, off + 128)
        for c, coff in enumerate(chunks):
            if not coff:
                continue
            base = coff * 64
            for k in range(SLOTS_PER_CHUNK):
                site = by_index.get(c * SLOTS_PER_CHUNK + k)
                if site is None:
                    continue
                vals = dict(
                    zip(
                        SLOT_FIELDS,
                        _words(buf, base + k * SLOT_SIZE, len(SLOT_FIELDS)),
                        strict=True,
                    )
                )
                if not vals["threads"]:  # never touched
                    continue
                _callsites(buf, base + k * SLOT_SIZE + 256, site.callsites)
                acc = site.slots
                for name in SLOT_FIELDS[1:]:
                    v = vals[name]
                    if name == "long_cs":  # every section timed: LTP_CS_LONG (1), or
                        v = {1: 1, 3: 2}.get(v, 0)  # LTP_CS_OUTLIERS (2 here, the max)
                    if name in MAX_FIELDS:
                        acc[name] = max(acc[name], v)
                    else:
                        acc[name] += v
        off = r["next"]
    return RawProfile(
        path, h, exe, cmdline, pmu_event, pmu_reason, modules, sites, records, tripwire_reason
    )


def _callsites(buf, off: int, acc: dict) -> None:
    """Add one slot's callsite table (layout.h, struct ltp_raw_callsite) to `acc`."""
    for i in range(CALLSITES):
        c = dict(
            zip(
                CALLSITE_FIELDS,
                _words(buf, off + i * CALLSITE_SIZE, len(CALLSITE_FIELDS)),
                strict=True,
            )
        )
        if i == CALLSITES - 1:
            if not (c["acquisitions"] or c["cs"]):
                continue
            key = None  # callers past the table
        elif not c["ra"]:
            break
        else:
            key = (c["module"] - 1, c["vaddr"])
        into = acc.setdefault(key, dict.fromkeys(CALLSITE_FIELDS[3:], 0))
        for name in CALLSITE_FIELDS[3:]:
            into[name] += c[name]


def read_dir(directory: Path) -> list[RawProfile]:
    """Every raw file in `directory`, in the order the processes (or exec'd images) began."""

    profiles = [read(p) for p in Path(directory).glob("*.ltraw")]
    profiles.sort(key=lambda r: (r.header["start_real_ns"], r.pid, r.image))
    return profiles
