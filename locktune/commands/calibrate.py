"""`locktune calibrate`: derive this machine's report thresholds (the RCL paper's method).

The method and its thresholds: locktune/profiler/calibrate.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from locktune import ui
from locktune.profiler import calibrate
from locktune.profiler import recommend as rec


@click.command("calibrate")
@click.option(
    "-o",
    "--output",
    metavar="FILE",
    help="Where to write the thresholds (JSON).  [default: ~/.config/locktune/thresholds.json]",
)
@click.option(
    "--threads",
    type=click.IntRange(min=2),
    metavar="N",
    help="Benchmark threads.  [default: every usable CPU, as the paper does; more threads "
    "than CPUs measure preemption rather than the lock]",
)
@click.option(
    "--duration",
    type=click.FloatRange(min=0.05),
    default=0.5,
    show_default=True,
    metavar="S",
    help="Seconds per benchmark run.",
)
@click.option(
    "--lines",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    metavar="K",
    help="Shared cache lines per critical section.",
)
@click.option(
    "--delays",
    metavar="LIST",
    help=f"Comma-separated delays in cycles.  [default: {','.join(map(str, calibrate.DELAYS))}]",
)
@click.option(
    "--quick",
    is_flag=True,
    help=f"A short sweep (delays {','.join(map(str, calibrate.QUICK_DELAYS))}, at most 0.2 s each), for "
    "smoke tests.",
)
@click.option("--no-rcl", is_flag=True, help="Skip the RCL runs (upper threshold: none).")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
def command(
    output: str | None,
    threads: int | None,
    duration: float,
    lines: int,
    delays: str | None,
    quick: bool,
    no_rcl: bool,
    as_json: bool,
) -> None:
    """Run the lock benchmark under the profiler on this machine and derive the thresholds
    behind `locktune report`'s recommendations (the RCL paper's method)."""
    calibrate.lockbench()  # says why there is nothing to calibrate with
    if delays:
        try:
            sweep = sorted({int(d) for d in delays.split(",")})
        except ValueError as e:
            raise click.UsageError(f"--delays {delays}: expected integers, e.g. 100,1000") from e
        if len(sweep) < 2 or sweep[0] < 0:
            raise click.UsageError(f"--delays {delays}: at least two non-negative delays")
    else:
        sweep = calibrate.QUICK_DELAYS if quick else calibrate.DELAYS
    if quick:
        duration = min(duration, 0.2)
    try:
        doc = calibrate.run(sweep, threads, duration, lines, no_rcl, ui.progress)
    finally:
        ui.progress_done()
    cal = doc["calibration"]
    out = Path(output) if output else rec.config_path()
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=1) + "\n")
    if as_json:
        click.echo(json.dumps(doc, indent=1))
        return
    rows = [
        [
            p["delay"],
            f"{p['cs_percent']:.1f}%",
            f"{p['cs_ns_per_acquisition']:.0f}",
            f"{p['contention_percent']:.1f}%",
            f"{p['wait_percent']:.1f}%",
            f"{p['pthread_ops_s'] / 1e6:.2f}",
            "-" if p["rcl_ratio"] is None else f"{p['rcl_ratio']:.2f}",
        ]
        for p in cal["sweep"]
    ]
    click.echo(
        ui.table(
            [
                "delay",
                "in CS",
                "ns/section",
                "contended",
                "waiting",
                "pthread Mops/s",
                "rcl/pthread",
            ],
            rows,
            "rrrrrrr",
        )
    )
    for key in ("lower_cs_percent", "upper_cs_percent", "locality_poor_ns"):
        if key in cal["why"]:
            click.echo(f"{key} = {doc['thresholds'][key]}: {cal['why'][key]}")
    if cal["rcl_error"]:
        click.echo(f"rcl: {cal['rcl_error']}")
    click.echo(f"written to {out}")
