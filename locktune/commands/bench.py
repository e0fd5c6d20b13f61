"""`locktune bench`: side-by-side benchmarks, reported as ratios measured in one run."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import click

from locktune import algorithms, ui
from locktune.bench import compare, compare_report, report, runner, session, sweeps
from locktune.errors import LocktuneError, UsageProblem


@click.group("bench")
def command() -> None:
    """Side-by-side benchmarks: every figure is a ratio measured in the same run."""


def _int_list(option: str, text: str | None, lo: int, hi: int) -> list[int] | None:
    if text is None:
        return None
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise UsageProblem(f"{option}: expected comma-separated integers, got '{text}'") from None
    if not values or any(not lo <= v <= hi for v in values):
        raise UsageProblem(f"{option}: expected integers from {lo} to {hi}, got '{text}'")
    return values


def _algorithms(text: str | None) -> list[str]:
    if text is None:
        return algorithms.names()
    names = [a.strip() for a in text.split(",") if a.strip()]
    if not names:
        raise UsageProblem("--algos: expected comma-separated algorithm names")
    for name in names:
        # NAME or NAME:POLICY (a waiting policy: docs/config.md); the runtime checks both
        base, colon, policy = name.partition(":")
        ok = bool(base) and all(c.isalnum() or c in "-_" for c in base)
        if not ok or (colon and not policy.isalnum()):
            raise UsageProblem(f"--algos: '{name}' is not an algorithm name")
    return list(dict.fromkeys(names))


@command.command("locks")
@click.option(
    "--sweep",
    "sweep_names",
    multiple=True,
    type=click.Choice([*sweeps.NAMES, "all"]),
    help="Which sweep (repeatable): uncontended, oversubscribed, lines (issue 3, the default), "
    "delay (issue 4: the RCL paper's delay sweep), scaling (1..16 threads, then 32 and 64), all.",
)
@click.option(
    "--algos",
    metavar="LIST",
    help="Algorithms beside glibc, comma-separated (default: every algorithm of DESIGN.md; "
    "those this liblocktune lacks are reported as unavailable).",
)
@click.option(
    "--repeats", metavar="N", type=click.IntRange(1, 1000), help="Rounds (default 5; --quick 2)."
)
@click.option(
    "--duration",
    type=click.FloatRange(0.001, 3600),
    help="Measured seconds per run (default 1; --quick 0.05).",
)
@click.option(
    "--warmup", type=click.FloatRange(0, 60), help="Seconds before each measured interval."
)
@click.option(
    "--threads", "threads_text", metavar="LIST", help="Thread counts of the sweeps along threads."
)
@click.option(
    "--lines", "lines_text", metavar="LIST", help="Shared lines of the lines and delay sweeps."
)
@click.option("--delays", "delays_text", metavar="LIST", help="Delays (cycles) of the delay sweep.")
@click.option(
    "--mode",
    type=click.Choice(["lock", "execute"]),
    help="Force lock/unlock or lt_execute for every lock (default: execute for the delegating "
    "algorithms, lock for the others).",
)
@click.option("--seed", type=int, default=1, show_default=True, help="Shuffle and layout seed.")
@click.option("--quick", is_flag=True, help="Few short runs: a smoke test, not a measurement.")
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    help="Output directory (default bench/results/<machine>-<date>).",
)
@click.option("--json", "as_json", is_flag=True, help="Print results.json instead of the tables.")
def locks(
    sweep_names: tuple[str, ...],
    algos: str | None,
    repeats: int | None,
    duration: float | None,
    warmup: float | None,
    threads_text: str | None,
    lines_text: str | None,
    delays_text: str | None,
    mode: str | None,
    seed: int,
    quick: bool,
    out: Path | None,
    as_json: bool,
) -> None:
    """The lock microbenchmark: every algorithm against glibc's pthread_mutex.

    Runs locktune-lockbench (the RCL paper's microbenchmark: shared non-contiguous cache
    lines, dependent read-modify-writes, a delay between sections) for glibc and every
    algorithm, interleaved in a shuffled order, repeated, with a core-to-core round-trip
    probe beside each run.  Ratios to glibc are taken within a round and reported as
    min/median/max.  Writes results.json and SVG charts, and prints a table per sweep.

    \b
    Examples:
      locktune bench locks                          the issue-3 sweeps, every algorithm
      locktune bench locks --sweep delay            the RCL delay sweep (issue 4)
      locktune bench locks --sweep scaling          1..16, 32, 64 threads (16-core machine)
      locktune bench locks --algos mcs,shfl-block --sweep oversubscribed --threads 16
    """
    names = list(sweeps.NAMES) if "all" in sweep_names else list(sweep_names or sweeps.DEFAULT)
    chosen = sweeps.build(
        names,
        quick=quick,
        threads=_int_list("--threads", threads_text, 1, 1024),
        lines=_int_list("--lines", lines_text, 0, 1024),
        delays=_int_list("--delays", delays_text, 0, 10**12),
    )
    algorithms = _algorithms(algos)
    settings = runner.Settings(
        repeats=repeats or (2 if quick else 5),
        duration=duration or (0.05 if quick else 1.0),
        warmup=warmup if warmup is not None else (0.02 if quick else None),
        mode=mode,
        seed=seed,
    )

    def warn(msg: str) -> None:
        ui.progress_done()
        click.echo(f"warning: {msg}", err=True)

    try:
        document = runner.measure(
            chosen,
            algorithms,
            settings,
            command="locktune bench locks " + shlex.join(sys.argv[2:] if len(sys.argv) > 2 else []),
            quick=quick,
            progress=ui.progress,
            warn=warn,
        )
    finally:
        ui.progress_done()
    summary, runs = document["sweeps"], document["runs"]
    unavailable = document["algorithms"]["unavailable"]
    out_dir = out or report.default_out_dir(document["machine"])
    written = report.write(out_dir, document, summary)

    if as_json:
        click.echo(json.dumps(document, indent=1))
    else:
        click.echo(report.tables(summary))
        click.echo()
        for line in report.unavailable_lines(unavailable):
            click.echo(line)
        click.echo(
            f"wrote {out_dir}: results.json and {len(written) - 1} charts "
            f"({len(runs)} runs, {document['wall_s']:.0f} s)"
        )
    failed = [r for r in runs if not r["ok"]]
    if failed:
        first = failed[0]
        raise LocktuneError(
            f"{len(failed)} of {len(runs)} runs failed, first {first['lock']} in "
            f"{first['sweep']}: {first['error']} (all in {out_dir / 'results.json'})"
        )


@command.command("compare")
@click.argument("original", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.argument("rewritten", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.argument("command_line", metavar="-- COMMAND [ARGS]...", nargs=-1, required=True)
@click.option(
    "--build",
    "build_cmd",
    metavar="CMD",
    default=compare.DEFAULT_BUILD,
    show_default=True,
    help="How to build the original: a shell command run in a copy of ORIGINAL.",
)
@click.option(
    "--build-rewritten",
    "build_rewritten_cmd",
    metavar="CMD",
    default=compare.DEFAULT_BUILD_REWRITTEN,
    show_default=True,
    help="How to build the rewritten tree, in a copy of REWRITTEN; $LOCKTUNE_CFLAGS and "
    "$LOCKTUNE_LIBS hold `locktune flags --cflags` and `--libs`.",
)
@click.option(
    "--no-build", is_flag=True, help="Run both trees as they are: they are built already."
)
@click.option(
    "--algos",
    metavar="LIST",
    help="Run the rewritten program with every lock on each of these algorithms "
    "(LOCKTUNE_ALGO=default=X), comma-separated; `none` for none (default: every algorithm "
    "of DESIGN.md; those this liblocktune lacks are reported as unavailable).",
)
@click.option(
    "--site",
    "site_args",
    metavar="SITE",
    multiple=True,
    help="Also try each of those algorithms on SITE alone, the other sites as the header "
    "says.  SITE: an id, FILE:LINE, or `hot` (the site with the largest share of thread "
    "time in its critical sections).  Repeatable.",
)
@click.option(
    "--config",
    "configs",
    metavar="[NAME:]SPEC",
    multiple=True,
    help="A per-site configuration in LOCKTUNE_ALGO syntax with sites by id or FILE:LINE, "
    "e.g. hot-rcl:items.c:22=rcl,default=posix.  Repeatable.",
)
@click.option(
    "--header",
    "headers",
    metavar="[NAME:]FILE",
    multiple=True,
    help="An edited locktune_config.h: the rewritten tree is rebuilt with it.  Repeatable.",
)
@click.option(
    "--profile",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="profile.json that ranks the sites for --site hot (default: the figures in the "
    "header's comments).",
)
@click.option(
    "--threads",
    "threads_text",
    metavar="LIST",
    help="Thread counts: COMMAND runs at each, with {threads} replaced, e.g. -- ./app -t {threads}.",
)
@click.option(
    "--repeats",
    metavar="N",
    type=click.IntRange(1, 1000),
    help="Exactly N rounds (default: at least 3, then until every ratio's 95% interval is "
    "within --target, or --max-time; --quick 2).",
)
@click.option(
    "--target",
    "target_pct",
    metavar="PCT",
    type=click.FloatRange(0.1, 100),
    default=5.0,
    show_default=True,
    help="Rounds go on until each ratio's 95% confidence interval is within +-PCT%.",
)
@click.option(
    "--max-time",
    metavar="S",
    type=click.FloatRange(1, 7 * 86400),
    default=600,
    show_default=True,
    help="No new round after S seconds of rounds (the output says if an interval stayed wider).",
)
@click.option(
    "--min-run",
    metavar="S",
    type=click.FloatRange(0, 3600),
    help="A run of the original shorter than S seconds is repeated back to back to make one "
    "measurement (default 1; 0: never; --quick 0).",
)
@click.option(
    "--timeout",
    metavar="S",
    type=click.FloatRange(0.1, 86400),
    default=120,
    show_default=True,
    help="Seconds one run may take; a variant that runs longer is stopped and not run at "
    "that point again.",
)
@click.option(
    "--metric",
    metavar="REGEX|wall",
    default=compare.THROUGHPUT,
    show_default=True,
    help="The figure compared (higher is better): the last match of REGEX's first group in "
    "the program's output, or `wall` for runs per second.",
)
@click.option(
    "--check",
    metavar="REGEX",
    default=compare.DEFAULT_CHECK,
    show_default=True,
    help="Output lines matching REGEX must be the same as the original's at the same point; "
    "'' checks nothing.",
)
@click.option("--seed", type=int, default=1, show_default=True, help="Shuffle seed.")
@click.option("--no-probe", is_flag=True, help="No core-to-core round-trip probe beside each run.")
@click.option("--quick", is_flag=True, help="Two rounds: a smoke test, not a measurement.")
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    help="Output directory (default bench/results/compare-<program>-<N>cpu-<date>).",
)
@click.option(
    "--keep-builds",
    type=click.Path(file_okay=False, path_type=Path),
    help="Build the trees here and keep them (default: a temporary directory).",
)
@click.option("--json", "as_json", is_flag=True, help="Print results.json instead of the table.")
def compare_command(
    original: Path,
    rewritten: Path,
    command_line: tuple[str, ...],
    build_cmd: str,
    build_rewritten_cmd: str,
    no_build: bool,
    algos: str | None,
    site_args: tuple[str, ...],
    configs: tuple[str, ...],
    headers: tuple[str, ...],
    profile: Path | None,
    threads_text: str | None,
    repeats: int | None,
    target_pct: float,
    max_time: float,
    min_run: float | None,
    timeout: float,
    metric: str,
    check: str,
    seed: int,
    no_probe: bool,
    quick: bool,
    out: Path | None,
    keep_builds: Path | None,
    as_json: bool,
) -> None:
    """The original program against its rewritten build, on the same workload.

    ORIGINAL is the program's source tree, REWRITTEN the output of `locktune rewrite`.  Each
    is copied and built by its own build; then COMMAND (run in each build's directory) runs
    for the original and for every configuration of the rewritten build, interleaved in a
    shuffled order, round after round until each ratio's 95% confidence interval is within
    +-5% (--target, --max-time; or exactly --repeats rounds).  Each configuration's
    throughput is divided by the original's in the same round; the table gives the
    interval beside min/median/max.  A run shorter than 1 s is repeated back to back to make
    one measurement (--min-run).  Configurations: the header
    as generated (the profile's recommendation), every lock on one algorithm, one site on
    each algorithm (--site), hand-written per-site ones (--config), edited headers
    (--header).  Lines matching --check must be the same as the original's.  Writes
    results.json and SVG charts, and prints a table.

    \b
    Examples:
      locktune bench compare app/ app-locktune/ -- ./app -t 8
      locktune bench compare app/ app-locktune/ --threads 2,8,32 --site hot \\
          --algos posix,mcscr,shfl-block -- ./app -t {threads}
      locktune bench compare app/ app-locktune/ --config hot-rcl:items.c:22=rcl \\
          --header mine:my_config.h -- ./app -t 8
    """
    if algos is not None and algos.strip() == "none":
        wanted: list[str] | None = []
    else:
        wanted = None if algos is None else _algorithms(algos)
    req = session.Request(
        original=original,
        rewritten=rewritten,
        command_line=list(command_line),
        build_cmd=build_cmd,
        build_rewritten_cmd=build_rewritten_cmd,
        no_build=no_build,
        algorithms=wanted,
        site_args=list(site_args),
        configs=list(configs),
        headers=list(headers),
        profile=profile,
        threads=_int_list("--threads", threads_text, 1, 100000),
        repeats=repeats,
        target_pct=target_pct,
        max_time=max_time,
        min_run=min_run,
        timeout=timeout,
        metric=metric,
        check=check,
        seed=seed,
        no_probe=no_probe,
        quick=quick,
        keep_builds=keep_builds,
        command="locktune bench compare " + shlex.join(sys.argv[3:] if len(sys.argv) > 3 else []),
    )

    def warn(msg: str) -> None:
        ui.progress_done()
        click.echo(f"warning: {msg}", err=True)

    try:
        document = session.run(req, ui.progress, warn)
    finally:
        ui.progress_done()
    program, desc, summary = document["program"], document["machine"], document["points"]
    runs, unavailable, notes = document["runs"], document["unavailable"], document["notes"]
    out_dir = out or compare_report.default_out_dir(program, desc)
    written = compare_report.write(out_dir, document, program)
    if as_json:
        click.echo(json.dumps(document, indent=1))
    else:
        click.echo(compare_report.tables(summary))
        click.echo()
        for line in compare_report.verdict_lines(summary):
            click.echo(line)
        for line in compare_report.thread_count_lines(summary):
            click.echo(line)
        click.echo(compare_report.rounds_line(document["settings"]["rounds"]))
        for line in report.unavailable_lines(unavailable):
            click.echo(line)
        for line in notes:
            click.echo(f"note: {line}")
        click.echo(
            f"wrote {out_dir}: results.json and {len(written) - 1} chart(s) "
            f"({len(runs)} runs, {document['wall_s']:.0f} s)"
        )
    failed = [r for r in runs if not r["ok"] and not r.get("timed_out")]
    if failed:
        first = failed[0]
        raise LocktuneError(
            f"{len(failed)} of {len(runs)} runs failed, first {first['variant']}: "
            f"{first['error']} (all in {out_dir / 'results.json'})"
        )
