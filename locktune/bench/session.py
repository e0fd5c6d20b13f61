"""One `locktune bench compare`, from its request to the results document: the variants
chosen, the builds made, the rounds run, the ratios summarised (the pieces are in compare.py,
the charts and tables in compare_report.py; the command only parses and prints)."""

from __future__ import annotations

import re
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from locktune import algorithms, machine
from locktune.bench import compare, interval, lockbench, runner
from locktune.errors import LocktuneError, UsageProblem
from locktune.profiler import document as profile_document


@dataclass
class Request:
    original: Path
    rewritten: Path
    command_line: list[str]
    build_cmd: str = compare.DEFAULT_BUILD
    build_rewritten_cmd: str = compare.DEFAULT_BUILD_REWRITTEN
    no_build: bool = False
    algorithms: list[str] | None = None  # None: every registered algorithm
    site_args: list[str] = field(default_factory=list)
    configs: list[str] = field(default_factory=list)
    headers: list[str] = field(default_factory=list)
    profile: Path | None = None
    threads: list[int] | None = None
    repeats: int | None = None  # exactly this many rounds; None: until the intervals are narrow
    target_pct: float = interval.TARGET_PCT
    max_time: float = 600.0  # the cap on the rounds, seconds
    min_run: float | None = None  # None: compare.MIN_RUN_S (0 under --quick)
    timeout: float = 120
    metric: str = compare.THROUGHPUT
    check: str = compare.DEFAULT_CHECK
    seed: int = 1
    no_probe: bool = False
    quick: bool = False
    keep_builds: Path | None = None
    command: str = ""  # as the user typed it, for the record


def run(req: Request, progress: Callable[[str], None], warn: Callable[[str], None]) -> dict:
    """The results document (schema locktune-compare/1): the caller writes and prints it."""
    command_line = req.command_line
    no_build, headers, metric, check = req.no_build, req.headers, req.metric, req.check
    quick, timeout, seed, original, rewritten = (
        req.quick,
        req.timeout,
        req.seed,
        req.original,
        req.rewritten,
    )
    build_cmd, build_rewritten_cmd = req.build_cmd, req.build_rewritten_cmd
    if no_build and headers:
        raise UsageProblem("--header rebuilds the rewritten tree: it cannot go with --no-build")
    if metric != compare.WALL:
        try:
            if re.compile(metric).groups < 1:
                raise UsageProblem(f"--metric {metric}: needs a group around the number")
        except re.error as e:
            raise UsageProblem(f"--metric {metric}: {e}") from None
    try:
        re.compile(check)
    except re.error as e:
        raise UsageProblem(f"--check {check}: {e}") from None
    pts = compare.points(command_line, req.threads)
    algos = algorithms.names() if req.algorithms is None else req.algorithms
    profile_doc = profile_document.read(req.profile) if req.profile is not None else None
    sites, profile_name = compare.header_sites(rewritten, profile_doc)
    variants, extra_builds, notes = compare.variants(
        sites, profile_name, algos, req.site_args, req.configs, headers, rewritten
    )

    progress("describing the machine")
    desc = machine.describe()
    load = desc["load_average"][0]
    if load > 0.25 * (desc["usable_cpus"] or 1) and not quick:
        warn(
            f"load average {load:.2f} on {desc['usable_cpus']} CPUs: this machine is "
            "busy, so these figures measure the other work too"
        )
    progress("asking liblocktune which algorithms it has")
    wanted = sorted({a for v in variants for a in v.algorithms})
    avail = lockbench.available(wanted, desc["usable_cpus"] or 1)
    variants, unavailable = compare.drop_unavailable(variants, avail.unavailable)
    if not any(v.kind != "original" for v in variants):
        why = "; ".join(f"{n}: {w}" for n, w in unavailable.items())
        raise LocktuneError(f"nothing to compare the original with ({why})")

    builds = {
        compare.ORIGINAL: compare.Build(
            compare.ORIGINAL, original, None if no_build else build_cmd, rewritten=False
        ),
        "rewritten": compare.Build(
            "rewritten", rewritten, None if no_build else build_rewritten_cmd
        ),
    }
    for b in extra_builds:
        b.command = build_rewritten_cmd
        builds[b.name] = b
    used = {v.build for v in variants}
    tmp = None
    if req.keep_builds is not None:
        build_root = req.keep_builds.resolve()
        build_root.mkdir(parents=True, exist_ok=True)
    else:
        tmp = tempfile.TemporaryDirectory(prefix="locktune-compare-")
        build_root = Path(tmp.name)
    try:
        for name in builds:
            if name in used:
                progress(f"building {name}")
                compare.prepare(builds[name], build_root)
        warnings = []
        for name in used:
            exe = _program(builds[name], pts[0])
            if exe is None:
                continue
            links = compare.links_liblocktune(exe)
            if builds[name].rewritten and links is False:
                warnings.append(
                    f"{exe} does not call liblocktune: the '{name}' build runs the original "
                    "code (was it built with `locktune flags`?)"
                )
        settings = compare.Measure(metric=metric, check=check or None, timeout=timeout)
        if quick:
            rounds = interval.Rounds.fixed(2)
        elif req.repeats:
            rounds = interval.Rounds.fixed(req.repeats)
        else:
            rounds = interval.Rounds(target_pct=req.target_pct, cap_s=req.max_time)
        min_run = req.min_run if req.min_run is not None else (0.0 if quick else compare.MIN_RUN_S)
        if min_run > 0:
            progress("timing one run of the original at each point")
            settings.batch, lengthened = compare.lengthen(
                pts, builds[compare.ORIGINAL], settings, min_run
            )
            notes += lengthened
        probe = None
        if not req.no_probe and (desc["usable_cpus"] or 1) >= 2:
            tsc = lockbench.machine_info()["tsc"]["hz"]

            def probe() -> float | None:
                return compare.probe_round_trip(tsc)

        started = time.time()

        def each_run(n: int, total: int, r: int, p: compare.Point, v: compare.Variant) -> None:
            elapsed = time.time() - started
            eta = f", about {elapsed / n * (total - n):.0f} s left" if n else ""
            where = f"{p.threads} threads: " if p.threads is not None else ""
            of = f"/{rounds.most}" if rounds.target_pct is None else f" (at least {rounds.least})"
            progress(f"[{n + 1}/{total}] round {r + 1}{of} {where}{v.name}{eta}")

        runs = compare.run_all(
            pts, variants, builds, settings, rounds.least, seed, probe=probe, progress=each_run,
            rounds=rounds,
        )  # fmt: skip
    finally:
        if tmp is not None:
            tmp.cleanup()
    notes += compare.check_results(runs)
    summary = compare.summarise(pts, variants, runs)
    program = Path(command_line[0]).name
    return {
        "schema": compare.SCHEMA,
        "command": req.command,
        "machine": desc,
        "program": program,
        "original": str(original.resolve()),
        "rewritten": str(rewritten.resolve()),
        "builds": {
            n: {"command": b.command, "header": str(b.header) if b.header else None}
            for n, b in builds.items()
            if n in used
        },
        "settings": {
            "repeats": rounds.run,
            "rounds": rounds.doc(),
            "min_run_s": min_run,
            "batch": {
                ("as given" if p.threads is None else str(p.threads)): settings.batch.get(p, 1)
                for p in pts
            },
            "timeout_s": timeout,
            "metric": metric,
            "check": check,
            "seed": seed,
            "quick": quick,
            "probe": probe is not None,
            "regime_threshold_ns": runner.NEAR_FAR_NS,
        },
        "sites": [
            {
                "id": s.id,
                "file": s.file,
                "line": s.line,
                "name": s.name,
                "algorithm": s.algorithm,
                "cs_percent": s.cs_percent,
            }
            for s in sites
        ],
        "variants": [v.doc() for v in variants],
        "unavailable": unavailable,
        "notes": notes + warnings,
        "points": summary,
        "runs": runs,
        "wall_s": time.time() - started,
    }


def _program(build: compare.Build, point: compare.Point) -> Path | None:
    """The executable COMMAND runs in a build, when it is a file there."""
    first = point.argv[0]
    if "/" not in first or build.dir is None:
        return None
    path = build.dir / first
    return path if path.is_file() else None
