"""`locktune report`: rank a profile's lock sites and recommend an algorithm for each."""

from __future__ import annotations

import json
from pathlib import Path

import click

from locktune.profiler import document, render
from locktune.profiler import recommend as rec


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
@click.option(
    "--thresholds",
    type=click.Path(dir_okay=False),
    metavar="FILE",
    help="Thresholds from `locktune calibrate` (default: $LOCKTUNE_THRESHOLDS, then "
    "~/.config/locktune/thresholds.json, then the documented defaults).",
)
@click.option(
    "--source-root",
    type=click.Path(file_okay=False),
    metavar="DIR",
    help="Where the sources are, for the hot sections' source lines (default: the "
    "profile's meta.source_root).",
)
def command(
    profile: str,
    top: int | None,
    as_json: bool,
    html: str | None,
    thresholds: str | None,
    source_root: str | None,
) -> None:
    """Rank the lock sites of PROFILE by the share of thread time in their critical sections
    (acquire + hold + release), with contention, waits, cache misses per section (or a
    labelled software estimate without hardware counters), instances, and a recommended
    algorithm per site with its reason."""
    doc = document.read(profile)
    limits = rec.load(thresholds)
    if html:
        Path(html).write_text(render.html(doc, limits, top, profile, source_root))
    if as_json:
        click.echo(json.dumps(render.as_json(doc, limits, top, profile), indent=1))
    else:
        click.echo(render.text(doc, limits, top, source_root), nl=False)
