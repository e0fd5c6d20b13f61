"""`locktune bench`: side-by-side benchmarks, reported as ratios measured in one run."""

from __future__ import annotations

import json
import shlex
import sys
import time
from pathlib import Path

import click

from locktune import machine, ui
from locktune.bench import lockbench, report, runner, sweeps
from locktune.errors import LocktuneError, NotImplementedYet, UsageProblem


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
        return list(lockbench.ALGORITHMS)
    names = [a.strip() for a in text.split(",") if a.strip()]
    if not names:
        raise UsageProblem("--algos: expected comma-separated algorithm names")
    for name in names:
        if not all(c.isalnum() or c in "-_" for c in name):
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
@click.option("--repeats", type=click.IntRange(1, 1000), help="Rounds (default 5; --quick 2).")
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

    ui.progress("describing the machine")
    desc = machine.describe()
    load = desc["load_average"][0]
    if load > 0.25 * (desc["usable_cpus"] or 1) and not quick:
        ui.progress_done()
        click.echo(
            f"warning: load average {load:.2f} on {desc['usable_cpus']} CPUs: this machine is "
            "busy, so these figures measure the other work too",
            err=True,
        )
    info = lockbench.machine_info()
    settings.tsc_hz = info["tsc"]["hz"]
    settings.usable_cpus = tuple(info["info"]["usable_cpus"])
    ui.progress("asking liblocktune which algorithms it has")
    avail = lockbench.available(algorithms, len(settings.usable_cpus))
    runnable = [a for a in algorithms if a in avail.available]

    started = time.time()

    def progress(n: int, total: int, what: dict) -> None:
        elapsed = time.time() - started
        eta = f", about {elapsed / n * (total - n):.0f} s left" if n else ""
        p = what["sweep"].points[what["point"]]
        ui.progress(
            f"[{n + 1}/{total}] round {what['round'] + 1}/{settings.repeats} "
            f"{what['sweep'].name}: {p.threads or 'cpus'} threads, {p.lines} lines, "
            f"delay {p.delay}: {what['lock'].label}{eta}"
        )

    runs = runner.run_all(chosen, runnable, settings, progress)
    ui.progress_done()
    summary = runner.summarise(chosen, runs)

    document = {
        "schema": report.SCHEMA,
        "command": "locktune bench locks " + shlex.join(sys.argv[2:] if len(sys.argv) > 2 else []),
        "machine": desc,
        "lockbench": {
            "tsc_hz": settings.tsc_hz,
            "usable_cpus": list(settings.usable_cpus),
            "lt_mutex_bytes": info["info"]["lt_mutex_bytes"],
            "pthread_mutex_bytes": info["info"]["pthread_mutex_bytes"],
        },
        "settings": {
            "sweeps": [s.name for s in chosen],
            "repeats": settings.repeats,
            "duration_s": settings.duration,
            "warmup_s": settings.warmup,
            "mode": settings.mode or "auto",
            "seed": settings.seed,
            "quick": quick,
            "regime_threshold_ns": runner.NEAR_FAR_NS,
        },
        "algorithms": {"requested": algorithms, "ran": runnable, "unavailable": avail.unavailable},
        "sweeps": summary,
        "runs": runs,
        "wall_s": time.time() - started,
    }
    out_dir = out or report.default_out_dir(desc)
    written = report.write(out_dir, document, summary)

    if as_json:
        click.echo(json.dumps(document, indent=1))
    else:
        click.echo(report.tables(summary))
        click.echo()
        for line in report.unavailable_lines(avail.unavailable):
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


@command.command("compare", context_settings={"ignore_unknown_options": True})
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def compare(args: tuple[str, ...]) -> None:
    """Original vs rewritten program on the same workload, interleaved and repeated."""
    raise NotImplementedYet("locktune bench compare", 7)
