"""The machine: what it offers locktune (`locktune doctor`) and what a measurement ran on, as
every benchmark result and profile records it.

Every answer comes from a real probe: versions from the tools themselves, hardware counters
from libpfm4 + perf_event_open (locktune-probe), SCHED_FIFO from an actual
sched_setscheduler() in a child process.
"""

from __future__ import annotations

import json
import os
import platform
import re
import resource
import shutil
import subprocess
import sys
import time

from locktune import __version__, native
from locktune.errors import LocktuneError


def cpu_info() -> dict:
    """CPU model, logical CPU count, usable CPUs, TSC invariance, virtualisation."""
    model, flags = None, set()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                key = key.strip()
                if key == "model name" and model is None:
                    model = value.strip()
                elif key == "flags" and not flags:
                    flags = set(value.split())
    except OSError:
        pass
    return {
        "model": model or platform.processor() or "unknown",
        "count": os.cpu_count(),
        "usable": len(os.sched_getaffinity(0)),
        "invariant_tsc": {"constant_tsc", "nonstop_tsc"} <= flags,
        "hypervisor": "hypervisor" in flags,
    }


def describe(pmu: dict | None = None) -> dict:
    """What a benchmark result must say about its machine.  `pmu` is doctor's probe result
    (pass it when known; probing costs a subprocess)."""
    if pmu is None:
        pmu = pmu_probe()
    cpu = cpu_info()
    return {
        "cpu_model": cpu["model"],
        "cpus": cpu["count"],
        "usable_cpus": cpu["usable"],
        "virtual_machine": cpu["hypervisor"],
        "kernel": platform.release(),
        "hardware_counters": bool(pmu.get("available")),
        "hardware_counters_reason": pmu.get("reason"),
        "load_average": os.getloadavg(),
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }


def _first_line(cmd: list[str]) -> str | None:
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return None
    text = (out.stdout or out.stderr).strip()
    return text.splitlines()[0] if text else None


def toolchain() -> dict:
    clang = _first_line(["clang", "--version"])
    spatch = _first_line(["spatch", "--version"])
    llvm_config = shutil.which("llvm-config") or shutil.which("llvm-config-14")
    llvm = _first_line([llvm_config, "--version"]) if llvm_config else None
    pfm_pkg = _first_line(["dpkg-query", "-W", "-f", "${Version}", "libpfm4"])
    glibc = os.confstr("CS_GNU_LIBC_VERSION") if hasattr(os, "confstr") else None
    return {
        "clang": clang,
        "llvm": llvm,
        "spatch": spatch,
        "libpfm4_package": pfm_pkg,
        "glibc": glibc.split()[-1] if glibc else None,
        "python": platform.python_version(),
        "locktune": __version__,
    }


def pmu_probe(event: str | None = None) -> dict:
    """Ask locktune-probe (libpfm4 + perf_event_open) whether a cache-miss event opens."""
    try:
        probe = native.bin_path("locktune-probe")
    except LocktuneError as e:
        return {"available": False, "event": event, "reason": str(e)}
    cmd = [str(probe)] + (["--pmu", event] if event else [])
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    if out.returncode != 0:
        raise LocktuneError(f"{probe}: exited with {out.returncode}: {out.stderr.strip()}")
    data = json.loads(out.stdout)
    if data.get("available"):
        data["reason"] = None
    return data


_SCHED_FIFO_CHILD = """
import os, sys
try:
    os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))
    print("ok")
except OSError as e:
    print(f"{e.strerror} (errno {e.errno})")
"""


def sched_fifo() -> dict:
    """Try SCHED_FIFO priority 1 for real, in a child process."""
    out = subprocess.run(
        [sys.executable, "-c", _SCHED_FIFO_CHILD], capture_output=True, text=True, timeout=30
    )
    result = out.stdout.strip()
    soft, hard = resource.getrlimit(resource.RLIMIT_RTPRIO)
    info = {"permitted": result == "ok", "rlimit_rtprio": [soft, hard]}
    if result != "ok":
        info["reason"] = (
            f"sched_setscheduler(SCHED_FIFO) failed: {result}; RCL runs in degraded mode "
            "(needs root, CAP_SYS_NICE or RLIMIT_RTPRIO >= 1)"
        )
    info["rt_runtime_us"] = _read_int("/proc/sys/kernel/sched_rt_runtime_us")
    return info


def scheduler(release: str | None = None, autogroup: int | None = None) -> dict:
    """The kernel's group scheduling, and whether this kernel is one whose fair scheduler lets
    one task group keep every other off a CPU (docs/delegation.md, "The kernel's
    group-scheduling bug": Linux 6.18 before 6.18.45 re-places a running group entity at each
    reweight; upstream 101f3498b4bd)."""
    release = release if release is not None else platform.release()
    if autogroup is None:
        autogroup = _read_int("/proc/sys/kernel/sched_autogroup_enabled")
    info: dict = {"autogroup": None if autogroup is None else bool(autogroup)}
    m = re.match(r"(\d+)\.(\d+)(?:\.(\d+))?", release)
    affected = bool(m) and (int(m[1]), int(m[2])) == (6, 18) and int(m[3] or 0) < 45
    info["group_starvation_bug"] = affected
    if affected:
        info["reason"] = (
            f"Linux {release} re-places a running task group at each reweight (fixed in 6.18.45, "
            "upstream 101f3498b4bd): a process whose threads hand a CPU to each other thousands "
            "of times a second can keep other "
            + ("sessions (autogroup is on)" if autogroup else "cgroups")
            + " off that CPU for seconds"
        )
    return info


def _read_int(path: str) -> int | None:
    try:
        with open(path) as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return None


def libraries() -> dict:
    result = {}
    try:
        nd = native.native_dir()
    except LocktuneError as e:
        return {"error": str(e)}
    for key, path in (
        ("liblocktune", nd / "lib" / "liblocktune.so"),
        ("liblocktune_static", nd / "lib" / "liblocktune.a"),
        ("profiler", nd / "lib" / "liblocktune-prof.so"),
        ("extract", nd / "bin" / "locktune-extract"),
        ("cocci", nd / "share" / "locktune" / "cocci"),
    ):
        result[key] = str(path) if path.exists() else None
    return result


def collect(pmu_event: str | None = None) -> dict:
    return {
        "schema": "locktune-doctor/1",
        "cpu": cpu_info(),
        "kernel": platform.release(),
        "toolchain": toolchain(),
        "pmu": pmu_probe(pmu_event),
        "perf_event_paranoid": _read_int("/proc/sys/kernel/perf_event_paranoid"),
        "sched_fifo": sched_fifo(),
        "scheduler": scheduler(),
        "libraries": libraries(),
    }
