"""`locktune profile`: run an unmodified program under the preloaded profiler."""

from __future__ import annotations

import shutil
from pathlib import Path

import click

from locktune import ui
from locktune.errors import LocktuneError
from locktune.profiler import analyze, document, raw
from locktune.profiler import recommend as rec
from locktune.profiler import run as runner


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
    help="Report lock sites relative to this directory.  [default: the current directory]",
)
@click.option(
    "--wrapper",
    "wrappers",
    multiple=True,
    metavar="NAME",
    help="A function of the program that wraps pthread_mutex_init (repeatable): the site is "
    "then where NAME is called, not inside it.",
)
@click.option(
    "--thresholds",
    type=click.Path(dir_okay=False),
    metavar="FILE",
    help="Thresholds for the recommendations (from `locktune calibrate`).",
)
@click.option(
    "--sample",
    type=click.IntRange(min=1, max=1000000),
    default=16,
    show_default=True,
    metavar="N",
    help="Time 1 in N uncontended critical sections (counts stay exact; sections that wait, "
    "and each thread's first 256 per site, are always timed).  1 times every section.",
)
@click.option(
    "--keep-raw",
    type=click.Path(file_okay=False),
    metavar="DIR",
    help="Keep the profiler's raw files in DIR (one per process).",
)
@click.argument("program", nargs=-1, required=True, type=click.UNPROCESSED)
def command(
    output: str,
    pmu: str,
    source_root: str | None,
    wrappers: tuple[str, ...],
    thresholds: str | None,
    sample: int,
    keep_raw: str | None,
    program: tuple[str, ...],
) -> None:
    """Run PROGRAM [ARGS...] with the profiler preloaded and measure its locks per site.

    Put `--` before the program so its own options are not read as locktune's:

        locktune profile -o profile.json -- ./app --threads 8

    The program runs unmodified, with its own standard streams; stop a server with Ctrl-C
    (or SIGTERM to locktune, which passes it on): the profile is written however it ends.
    Then `locktune report profile.json`.
    """
    argv = list(program)
    argv[0] = runner.find_program(argv[0])
    runner.check_interposable(argv[0])
    limits = rec.load(thresholds)
    root = Path(source_root or ".").resolve()
    if source_root and not root.is_dir():
        raise click.UsageError(f"--source-root {source_root}: no such directory")
    ui.progress("locktune profile: measuring this machine's clock")
    clock = runner.clock_info()
    ui.progress_done()

    raw_dir = Path(keep_raw) if keep_raw else None
    result = runner.run(argv, raw_dir, pmu, sample=sample)
    try:
        ui.progress("locktune profile: resolving lock sites")
        profiles = raw.read_dir(result.raw_dir)
        if not profiles:
            raise LocktuneError(
                f"{program[0]}: no profile was recorded (the profiler did not load: is the "
                "program setuid, or does it clear LD_PRELOAD?)"
            )
        doc = analyze.build_run(
            profiles,
            result.pid,
            source_root=root,
            wrappers=set(wrappers),
            clock=clock,
            thresholds=limits,
            program=list(program),
            wall_ns=result.wall_ns,
            exit_info=result.describe(),
        )
    finally:
        ui.progress_done()
        if not keep_raw:
            shutil.rmtree(result.raw_dir, ignore_errors=True)
    out = Path(output)
    document.write(doc, out)

    totals = doc["totals"]
    top = doc["locks"][0] if doc["locks"] else None
    line = (
        f"locktune profile: {out}: {totals['sites']} lock sites, "
        f"{totals['cs_percent']:.1f}% of thread time in critical sections"
    )
    if top:
        from locktune.profiler.render import site_label

        line += f"; hottest {site_label(top)} ({top['cs_percent']:.1f}%)"
    procs = doc["processes"]
    if len(procs) > 1:
        busiest = next((p["meta"] for p in procs if p["meta"]["busiest"]), None)
        line += f"; {len(procs)} processes"
        if busiest:
            line += (
                f", busiest pid {busiest['pid']} ({busiest['started_by']}, "
                f"{busiest['share']['acquisitions_percent']:.0f}% of acquisitions)"
            )
    click.echo(line + f"; next: locktune report {out}", err=True)

    ex = result.describe()
    if ex["signal"] in ("SIGINT", "SIGTERM") or ex["status"] == 0:
        return
    what = (
        f"exited with status {ex['status']}"
        if ex["status"] is not None
        else f"was killed by {ex['signal']}"
    )
    raise LocktuneError(f"{program[0]} {what} (the profile was written to {out})")
