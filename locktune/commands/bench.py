"""`locktune bench`: side-by-side benchmarks, reported as ratios measured in one run."""

from __future__ import annotations

import click

from locktune.errors import NotImplementedYet


@click.group("bench")
def command() -> None:
    """Side-by-side benchmarks: every figure is a ratio measured in the same run."""


@command.command("locks", context_settings={"ignore_unknown_options": True})
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def locks(args: tuple[str, ...]) -> None:
    """The lock microbenchmark: every algorithm against glibc's pthread_mutex."""
    raise NotImplementedYet("locktune bench locks", 3)


@command.command("compare", context_settings={"ignore_unknown_options": True})
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def compare(args: tuple[str, ...]) -> None:
    """Original vs rewritten program on the same workload, interleaved and repeated."""
    raise NotImplementedYet("locktune bench compare", 7)
