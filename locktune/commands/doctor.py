"""`locktune doctor`: what this machine offers locktune.

Every answer comes from a real probe: versions from the tools themselves, hardware counters
from libpfm4 + perf_event_open (locktune-probe), SCHED_FIFO from an actual
sched_setscheduler() in a child process.
"""

from __future__ import annotations

import json
import os
import platform
import resource
import shutil
import subprocess
import sys

import click

from locktune import __version__, native
from locktune.errors import LocktuneError
from locktune.machine import cpu_info
from locktune.ui import table


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
        "libraries": libraries(),
    }


def _render(d: dict) -> str:
    cpu, tc, pmu, fifo = d["cpu"], d["toolchain"], d["pmu"], d["sched_fifo"]
    pmu_text = (
        f"yes ({pmu['event']}, counted {pmu.get('count')} over an 8 MiB walk)"
        if pmu.get("available")
        else f"no: {pmu.get('reason')}"
    )
    fifo_text = "yes" if fifo["permitted"] else f"no: {fifo.get('reason')}"
    rows = [
        ["CPU", f"{cpu['model']} x{cpu['count']} ({cpu['usable']} usable)"],
        ["invariant TSC", "yes" if cpu["invariant_tsc"] else "no"],
        ["virtual machine", "yes" if cpu["hypervisor"] else "no"],
        ["kernel", d["kernel"]],
        ["glibc", tc["glibc"]],
        ["clang", tc["clang"]],
        ["LLVM", tc["llvm"]],
        ["spatch", tc["spatch"]],
        ["libpfm4", f"{tc['libpfm4_package']} (API {pmu.get('libpfm_version', '?')})"],
        ["core PMU (libpfm4)", pmu.get("pfm_pmu") or "none detected"],
        ["hardware counters", pmu_text],
        ["perf_event_paranoid", d["perf_event_paranoid"]],
        ["SCHED_FIFO", fifo_text],
    ]
    for key, path in d["libraries"].items():
        rows.append([key, path or "not found"])
    return table(["", ""], rows).split("\n", 2)[2]


def _has_problem(d: dict) -> bool:
    return any(v is None for v in d["libraries"].values()) or "error" in d["libraries"]


@click.command("doctor")
@click.option("--json", "as_json", is_flag=True, help="Print JSON for machines instead of a table.")
@click.option(
    "--pmu", "pmu_event", metavar="EVENT", help="Probe this libpfm4 event instead of the default."
)
def command(as_json: bool, pmu_event: str | None) -> None:
    """Show what this machine offers: toolchain versions, CPUs, hardware counters (and why
    not), SCHED_FIFO permission, and where locktune's libraries are."""
    d = collect(pmu_event)
    if as_json:
        click.echo(json.dumps(d, indent=2))
    else:
        click.echo(_render(d))
    if _has_problem(d):
        raise LocktuneError(
            "some of locktune's native parts are missing; reinstall with `pip install .`"
        )
