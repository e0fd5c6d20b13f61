"""`locktune rewrite`: extract critical sections and retarget locks to liblocktune."""

from __future__ import annotations

import click

from locktune.errors import NotImplementedYet


@click.command("rewrite")
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False),
    metavar="DIR",
    help="Write the rewritten tree here (default: a copy next to the input).",
)
@click.option("--in-place", is_flag=True, help="Rewrite the input files themselves.")
@click.option(
    "--profile",
    type=click.Path(exists=True, dir_okay=False),
    metavar="PROFILE",
    help="Profile whose figures and recommendations go into locktune_config.h.",
)
@click.option(
    "--compile-commands",
    type=click.Path(exists=True, dir_okay=False),
    metavar="FILE",
    help="compile_commands.json giving each file's real compile flags.",
)
@click.option(
    "--source-root",
    type=click.Path(file_okay=False),
    metavar="DIR",
    help="Root that site paths are relative to (default: the common parent).",
)
@click.option(
    "--report",
    "report_file",
    type=click.Path(dir_okay=False),
    metavar="FILE",
    help="Write the rewrite report (JSON, schema locktune-rewrite/1).",
)
@click.option(
    "--cflags",
    default="",
    metavar='"..."',
    help="Compile flags when there is no compile_commands.json.",
)
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True))
def command(**_options) -> None:
    """Rewrite FILE_OR_DIR...: each critical section becomes a function run by lt_execute."""
    raise NotImplementedYet("locktune rewrite", 6)
