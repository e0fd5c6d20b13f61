"""`locktune profile`: run an unmodified program under the preloaded profiler."""

from __future__ import annotations

import click

from locktune.errors import NotImplementedYet


@click.command("profile", context_settings={"ignore_unknown_options": True})
@click.option(
    "-o",
    "--output",
    default="profile.json",
    show_default=True,
    metavar="FILE",
    help="Where to write the profile (JSON, schema locktune-profile/1).",
)
@click.option(
    "--pmu",
    default="auto",
    show_default=True,
    metavar="auto|off|EVENT",
    help="Hardware cache-miss counting: probe and use if possible, never, or this libpfm4 event.",
)
@click.option(
    "--source-root",
    type=click.Path(file_okay=False),
    metavar="DIR",
    help="Report lock sites relative to this directory.",
)
@click.argument("program", nargs=-1, required=True, type=click.UNPROCESSED)
def command(output: str, pmu: str, source_root: str | None, program: tuple[str, ...]) -> None:
    """Run PROGRAM [ARGS...] with the profiler preloaded and rank its locks.

    Put `--` before the program so its own options are not read as locktune's:

        locktune profile -o profile.json -- ./app --threads 8
    """
    raise NotImplementedYet("locktune profile", 5)
