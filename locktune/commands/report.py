"""`locktune report`: rank a profile's lock sites and recommend an algorithm for each."""

from __future__ import annotations

import click

from locktune.errors import NotImplementedYet


@click.command("report")
@click.argument("profile", type=click.Path(exists=True, dir_okay=False))
@click.option(
    "--top", type=click.IntRange(min=1), metavar="N", help="Show only the N hottest sites."
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
@click.option(
    "--html",
    type=click.Path(dir_okay=False),
    metavar="FILE",
    help="Also write a self-contained HTML page with charts.",
)
def command(profile: str, top: int | None, as_json: bool, html: str | None) -> None:
    """Rank the lock sites of PROFILE by the share of thread time in their critical sections."""
    raise NotImplementedYet("locktune report", 5)
