"""`locktune doctor`: what this machine offers locktune (the probes: locktune/machine.py)."""

from __future__ import annotations

import json

import click

from locktune.errors import LocktuneError
from locktune.machine import collect
from locktune.ui import table


def _render(d: dict) -> str:
    cpu, tc, pmu, fifo = d["cpu"], d["toolchain"], d["pmu"], d["sched_fifo"]
    pmu_text = (
        f"yes ({pmu['event']}, counted {pmu.get('count')} over an 8 MiB walk)"
        if pmu.get("available")
        else f"no: {pmu.get('reason')}"
    )
    fifo_text = "yes" if fifo["permitted"] else f"no: {fifo.get('reason')}"
    sched = d["scheduler"]
    groups = {True: "autogroup on", False: "autogroup off", None: "autogroup unknown"}
    sched_text = groups[sched["autogroup"]] + (
        f"; warning: {sched['reason']}" if sched["group_starvation_bug"] else ""
    )
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
        ["group scheduling", sched_text],
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
