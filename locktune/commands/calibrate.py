"""`locktune calibrate`: derive this machine's report thresholds."""

from __future__ import annotations

import click

from locktune.errors import NotImplementedYet


@click.command("calibrate")
@click.option("-o", "--output", metavar="FILE", help="Where to write the thresholds (JSON).")
def command(output: str | None) -> None:
    """Run the lock benchmark under the profiler on this machine and derive the thresholds
    behind `locktune report`'s recommendations (the RCL paper's method)."""
    raise NotImplementedYet("locktune calibrate", 5)
