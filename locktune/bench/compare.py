"""`locktune bench compare`: the original program against its rewritten build, side by side.

The pieces, in the order the command uses them:

    variants    what runs: the original; the rewritten build with its locktune_config.h as
                generated (the profile's recommendation); every lock on one algorithm
                (LOCKTUNE_ALGO=default=X); one site on each algorithm, the others as the
                header says (LOCKTUNE_ALGO=ID=X); per-site configurations written by hand
                (LOCKTUNE_ALGO syntax, sites by id or FILE:LINE); edited headers (the
                rewritten tree rebuilt with each)
    builds      each tree copied and built by its own build command (or used as it is)
    lengthen    runs shorter than 1 s are batched: several back to back make one measurement
    plan        for each round: the points (thread counts) in a shuffled order; at each point
                every variant in a shuffled order, back to back; rounds until every ratio's
                95% interval is within +-5% or a cap (interval.Rounds)
    measure     one run: the program's throughput (its last `throughput: N ops/s` line, a
                pattern of the user's, or 1 / wall time), its result lines, a core-to-core
                round trip beside it
    summarise   ratio(variant, point, round) = its throughput / the original's at that point
                in that round; min / median / max over the rounds and the 95% interval
                (interval.py); the best variant per point by the interval's centre

The machine's cross-core latency drifts 3-10x on its own (notes/memcached-and-baselines.md),
so nothing is compared across rounds: every ratio is taken within one round.  `measure` is a
parameter of `run_all`, so a program driven differently (memcached under a load client,
scripts/memcached.py) reuses the plan and the summaries.
"""

from __future__ import annotations

import math
import os
import random
import re
import shlex
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from locktune.bench import interval, lockbench
from locktune.bench.runner import regime, stat
from locktune.errors import LocktuneError, UsageProblem
from locktune.rewrite import config_header

SCHEMA = "locktune-bench-compare/1"
ORIGINAL = "original"
DEFAULT_BUILD = "make"
DEFAULT_BUILD_REWRITTEN = 'make CPPFLAGS="$LOCKTUNE_CFLAGS" LDLIBS="$LOCKTUNE_LIBS"'
THROUGHPUT = r"throughput:\s*([0-9][0-9.eE+]*)"  # the bundled apps' last line
WALL = "wall"  # --metric wall: runs per second, 1 / wall time
DEFAULT_CHECK = r"^result:"


# ---- what runs -------------------------------------------------------------------------------


@dataclass
class Build:
    """A tree and how it is built: `original`, `rewritten`, or an edited header's build."""

    name: str
    source: Path
    command: str | None  # shell command run in the copy; None: the tree is used as it is
    header: Path | None = None  # replaces the copy's locktune_config.h before building
    rewritten: bool = True
    dir: Path | None = None  # where it is built and run (set by prepare)
    log: Path | None = None


@dataclass
class Variant:
    """One configuration of the program: a build and the environment it runs with."""

    name: str
    kind: str  # original | header | algorithm | site | config | edited-header
    build: str
    env: dict[str, str] = field(default_factory=dict)
    algorithms: list[str] = field(default_factory=list)  # what the runtime must have
    what: str = ""

    def doc(self) -> dict:
        return {
            "name": self.name,
            "kind": self.kind,
            "build": self.build,
            "env": self.env,
            "algorithms": self.algorithms,
            "what": self.what,
        }


@dataclass(frozen=True)
class Point:
    """One workload: the command with its thread count substituted."""

    threads: int | None
    argv: tuple[str, ...]

    def doc(self) -> dict:
        return {"threads": self.threads, "command": shlex.join(self.argv)}


def points(command: list[str], threads: list[int] | None) -> list[Point]:
    """The workloads: COMMAND as it is, or once per thread count with {threads} replaced."""
    mentions = any("{threads}" in a for a in command)
    if threads is None:
        if mentions:
            raise UsageProblem("the command says {threads}: give the counts with --threads LIST")
        return [Point(None, tuple(command))]
    if not mentions:
        raise UsageProblem(
            "--threads needs {threads} in the command where the count goes, "
            "e.g. -- ./app -t {threads}"
        )
    return [Point(t, tuple(a.replace("{threads}", str(t)) for a in command)) for t in threads]


# ---- sites and per-site configurations -----------------------------------------------------


@dataclass(frozen=True)
class Site:
    id: int
    ident: str
    file: str
    line: int
    name: str
    algorithm: str
    cs_percent: float | None  # from the profile, or from the header's comment

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}"


_CS_IN_COMMENT = re.compile(r"Profile: ([0-9.]+)% of thread time")


def header_sites(tree: Path, profile: dict | None = None) -> tuple[list[Site], str | None]:
    """The sites of tree/locktune_config.h (with each one's share of thread time in its
    sections: from `profile` when given, else from the figures the header's comments carry)
    and the name of the profile the header was generated from."""
    path = tree / config_header.NAME
    if not path.exists():
        raise UsageProblem(f"{path}: missing; is {tree} the output of `locktune rewrite`?")
    try:
        entries, profile_name = config_header.read_previous(tree)
    except LocktuneError as e:
        raise UsageProblem(str(e)) from None
    by_place = {}
    for lock in (profile or {}).get("locks", []):
        s = lock.get("site") or {}
        if s.get("file") and s.get("line"):
            by_place[(s["file"], int(s["line"]))] = lock.get("cs_percent")
    sites = []
    for ident, e in entries.items():
        if profile is not None:
            cs = by_place.get((e["file"], e["line"]))
        else:
            m = _CS_IN_COMMENT.search(" ".join((e["comment"] or "").split()))
            cs = float(m.group(1)) if m else None
        sites.append(Site(e["id"], ident, e["file"], e["line"], e["name"], e["algorithm"], cs))
    return sorted(sites, key=lambda s: s.id), profile_name


def find_site(sites: list[Site], text: str, option: str) -> Site:
    """A site by id, FILE:LINE (the file's path as the header has it, or its last part), its
    LT_SITE_ identifier, or `hot` (the largest share of thread time in its sections)."""
    text = text.strip()
    if text == "hot":
        ranked = [s for s in sites if s.cs_percent is not None]
        if not ranked:
            raise UsageProblem(
                f"{option} hot: no site has profile figures (rewrite with --profile, or give "
                "--profile FILE)"
            )
        return max(ranked, key=lambda s: s.cs_percent)
    if text.isdigit():
        for s in sites:
            if s.id == int(text):
                return s
    elif text.startswith("LT_SITE_"):
        for s in sites:
            if s.ident == text:
                return s
    elif ":" in text:
        file, _, line = text.rpartition(":")
        if line.isdigit():
            hits = [
                s
                for s in sites
                if s.line == int(line) and (s.file == file or s.file.endswith("/" + file))
            ]
            if len(hits) == 1:
                return hits[0]
            if len(hits) > 1:
                raise UsageProblem(f"{option} {text}: ambiguous, say which file")
    known = ", ".join(f"{s.id} ({s.where})" for s in sites[:8]) or "none"
    raise UsageProblem(f"{option} {text}: no such site in locktune_config.h (sites: {known})")


_ALGO_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]*$")


def parse_config(spec: str, sites: list[Site], option: str = "--config") -> tuple[str, list[str]]:
    """A per-site configuration in LOCKTUNE_ALGO syntax with sites named by id, FILE:LINE or
    LT_SITE_ identifier ("items.c:22=mcscr,default=posix") -> the LOCKTUNE_ALGO value the
    runtime reads ("1=mcscr,default=posix") and the algorithms it names."""
    items, algos = [], []
    seen: set[str] = set()
    for part in spec.split(","):
        if not part.strip():
            continue
        key, eq, algo = part.rpartition("=")
        key, algo = key.strip(), algo.strip()
        if not eq or not key or not _ALGO_NAME.match(algo):
            raise UsageProblem(
                f"{option} {spec}: expected SITE=ALGORITHM,... (SITE an id, FILE:LINE or "
                f"default), got '{part.strip()}'"
            )
        target = "default" if key == "default" else str(find_site(sites, key, option).id)
        if target in seen:
            raise UsageProblem(f"{option} {spec}: '{key}' is given twice")
        seen.add(target)
        items.append(f"{target}={algo}")
        algos.append(algo)
    if not items:
        raise UsageProblem(f"{option}: empty configuration")
    return ",".join(items), list(dict.fromkeys(algos))


def split_name(text: str, option: str) -> tuple[str | None, str]:
    """`NAME:VALUE` -> (NAME, VALUE); a value alone -> (None, VALUE).  A name is a word that
    may not contain '=' or '/' (so FILE:LINE=ALGO and paths are never split)."""
    name, colon, value = text.partition(":")
    if colon and name and re.fullmatch(r"[A-Za-z][A-Za-z0-9_.+-]*", name) and value:
        if not re.fullmatch(r"\d+(=.*)?", value.split(",")[0]):  # items.c:22=rcl is no name
            return name, value
    if not text.strip():
        raise UsageProblem(f"{option}: empty value")
    return None, text


# ---- variants ------------------------------------------------------------------------------


def variants(
    sites: list[Site],
    profile_name: str | None,
    algorithms: list[str],
    site_args: list[str],
    configs: list[str],
    headers: list[str],
    rewritten: Path,
) -> tuple[list[Variant], list[Build], list[str]]:
    """Every variant the options ask for, the extra builds edited headers need, and notes
    (a site variant identical to the header's own choice is left out, and said so)."""
    header_algos = sorted({s.algorithm for s in sites})
    base_name = "recommended" if profile_name else "header"
    base_what = (
        f"locktune_config.h as generated from {profile_name}"
        if profile_name
        else "locktune_config.h as it is"
    )
    out = [
        Variant(ORIGINAL, "original", ORIGINAL, what="the original program (glibc pthread_mutex)"),
        Variant(base_name, "header", "rewritten", algorithms=header_algos, what=base_what),
    ]
    builds: list[Build] = []
    notes: list[str] = []
    names = {v.name for v in out}

    def add(v: Variant) -> None:
        if v.name in names:
            raise UsageProblem(f"two variants are named '{v.name}': name them NAME:...")
        names.add(v.name)
        out.append(v)

    for text in headers:
        name, path_text = split_name(text, "--header")
        path = Path(path_text)
        if not path.is_file():
            raise UsageProblem(f"--header {text}: {path}: no such file")
        entries = config_header.parse(path.read_text())
        if not entries:
            raise UsageProblem(
                f"--header {text}: {path} has no site entries (not a locktune_config.h)"
            )
        name = name or path.stem
        algos = sorted({e["algorithm"] for e in entries.values()})
        builds.append(Build(f"header-{name}", rewritten, None, header=path.resolve()))
        add(Variant(name, "edited-header", f"header-{name}", algorithms=algos, what=str(path)))
    for text in configs:
        name, spec = split_name(text, "--config")
        value, algos = parse_config(spec, sites)
        add(
            Variant(
                name or spec,
                "config",
                "rewritten",
                env={"LOCKTUNE_ALGO": value},
                algorithms=sorted(set(algos) | set(header_algos)),
                what=f"LOCKTUNE_ALGO={value}",
            )
        )
    for algo in algorithms:
        add(
            Variant(
                algo,
                "algorithm",
                "rewritten",
                env={"LOCKTUNE_ALGO": f"default={algo}"},
                algorithms=sorted({algo} | set(header_algos)),
                what=f"every lock on {algo}",
            )
        )
    chosen: list[Site] = []
    for text in site_args:
        s = find_site(sites, text, "--site")
        if s not in chosen:
            chosen.append(s)
    for s in chosen:
        for algo in algorithms:
            if algo == s.algorithm:
                notes.append(f"{s.where}={algo} is the header's own choice: see '{base_name}'")
                continue
            add(
                Variant(
                    f"{s.where}={algo}",
                    "site",
                    "rewritten",
                    env={"LOCKTUNE_ALGO": f"{s.id}={algo}"},
                    algorithms=sorted({algo} | set(header_algos)),
                    what=f"site {s.id} ({s.where} {s.name}) on {algo}, the others as the header says",
                )
            )
    return out, builds, notes


def drop_unavailable(
    vs: list[Variant], unavailable: dict[str, str]
) -> tuple[list[Variant], dict[str, str]]:
    """The variants this liblocktune can run, and why each other one cannot."""
    keep, dropped = [], {}
    for v in vs:
        missing = [a for a in v.algorithms if a in unavailable]
        if missing:
            dropped[v.name] = f"{missing[0]}: {unavailable[missing[0]]}"
        else:
            keep.append(v)
    return keep, dropped


# ---- builds --------------------------------------------------------------------------------


def _copy(src: Path, dst: Path) -> None:
    """A copy that keeps timestamps (autotools trees rerun automake otherwise)."""
    if dst.exists():
        shutil.rmtree(dst)
    shutil.copytree(src, dst, symlinks=True, ignore=shutil.ignore_patterns(".git"))


def build_env(rewritten: bool) -> dict[str, str]:
    from locktune import native

    env = clean_env()
    if rewritten:
        env["LOCKTUNE_CFLAGS"] = " ".join(native.cflags())
        env["LOCKTUNE_LIBS"] = " ".join(native.libs())
    return env


def prepare(build: Build, root: Path | None, timeout: float = 1800) -> None:
    """Copy the tree under root and build it there (or use it as it is: no command)."""
    if build.command is None and build.header is None:
        build.dir = build.source
        return
    assert root is not None
    build.dir = root / build.name
    _copy(build.source, build.dir)
    if build.header is not None:
        (build.dir / config_header.NAME).write_text(build.header.read_text())
        # Makefiles rarely know that every object depends on the header: make them all old.
        now = time.time()
        for p in build.dir.rglob("*"):
            if p.suffix in (".c", ".h") and p.is_file() and not p.is_symlink():
                os.utime(p, (now, now))
    if build.command is None:
        return
    build.log = root / f"{build.name}-build.log"
    try:
        res = subprocess.run(
            ["bash", "-c", build.command],
            cwd=build.dir,
            env=build_env(build.rewritten),
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        raise LocktuneError(
            f"building {build.name} ({build.command}) took longer than {timeout:.0f} s"
        ) from None
    build.log.write_text(f"$ {build.command}\n{res.stdout}{res.stderr}")
    if res.returncode != 0:
        lines = [ln for ln in (res.stderr or res.stdout).strip().splitlines() if ln.strip()]
        last = lines[-1].strip() if lines else f"exit status {res.returncode}"
        raise LocktuneError(f"building {build.name} failed: {last} (log: {build.log})")


def links_liblocktune(program: Path) -> bool | None:
    """Whether an executable calls into liblocktune (None: cannot tell)."""
    try:
        res = subprocess.run(
            ["nm", "-D", "--undefined-only", str(program)],
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if res.returncode != 0:
        return None
    return bool(re.search(r"\blt_(mutex_\w+|execute\w*)\b", res.stdout))


# ---- one run -------------------------------------------------------------------------------


def clean_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment minus what locktune's runtime and profiler read, plus `extra`."""
    env = {
        k: v for k, v in os.environ.items() if not k.startswith("LOCKTUNE_") and k != "LD_PRELOAD"
    }
    env.update(extra or {})
    return env


def _tail(text: str, n: int = 1) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return " | ".join(lines[-n:])


@dataclass
class Measure:
    """Runs one variant at one point: the command in the build's directory."""

    metric: str = THROUGHPUT  # a pattern with one group, or WALL
    check: str | None = DEFAULT_CHECK  # lines that must equal the original's
    timeout: float = 120.0
    batch: dict[Point, int] = field(default_factory=dict)  # runs per measurement: lengthen()

    def __call__(self, variant: Variant, build: Build, point: Point) -> dict:
        """One measurement: the point's batch of runs, back to back.  Their throughput is the
        total work over the total time (each run's throughput weighted by its wall time);
        with --metric wall, runs per second.  The first failure ends it."""
        batch = self.batch.get(point, 1)
        if batch <= 1:
            return self.once(variant, build, point)
        recs = []
        for _ in range(batch):
            rec = self.once(variant, build, point)
            recs.append(rec)
            if not rec["ok"]:
                break
        last = recs[-1]
        if not last["ok"]:
            last["batch"] = len(recs)
            return last
        wall = sum(r["wall_s"] for r in recs)
        if self.metric == WALL:
            rate = len(recs) / wall if wall > 0 else None
        else:
            rate = sum(r["throughput"] * r["wall_s"] for r in recs) / wall if wall > 0 else None
        out = dict(recs[0])
        out.update(throughput=rate, wall_s=wall, batch=len(recs))
        return out

    def once(self, variant: Variant, build: Build, point: Point) -> dict:
        rec: dict = {"ok": False, "error": None, "timed_out": False, "throughput": None}
        t0 = time.monotonic()
        try:
            proc = subprocess.Popen(
                list(point.argv),
                cwd=build.dir,
                env=clean_env(variant.env),
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                start_new_session=True,
            )
        except OSError as e:
            rec["error"] = f"cannot run {point.argv[0]} in {build.dir}: {e.strerror}"
            return rec
        try:
            out, err = proc.communicate(timeout=self.timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            rec.update(timed_out=True, wall_s=time.monotonic() - t0)
            rec["error"] = f"did not finish within {self.timeout:g} s"
            return rec
        rec["wall_s"] = time.monotonic() - t0
        rec["exit_status"] = proc.returncode
        if proc.returncode != 0:
            why = _tail(err) or _tail(out) or "no output"
            rec["error"] = f"exited with status {proc.returncode}: {why}"
            return rec
        if self.metric == WALL:
            rec["throughput"] = 1.0 / rec["wall_s"] if rec["wall_s"] > 0 else None
        else:
            found = re.findall(self.metric, out)
            if not found:
                rec["error"] = f"printed no line matching '{self.metric}'"
                return rec
            try:
                value = found[-1] if isinstance(found[-1], str) else found[-1][0]
                rec["throughput"] = float(value)
            except ValueError:
                rec["error"] = f"'{found[-1]}' (matching '{self.metric}') is not a number"
                return rec
        if self.check:
            pattern = re.compile(self.check)
            rec["check_lines"] = [ln for ln in out.splitlines() if pattern.search(ln)]
        rec["ok"] = True
        return rec


MIN_RUN_S = 1.0  # a measurement shorter than this is mostly start-up and scheduling noise
MAX_BATCH = 50


def lengthen(
    pts: list[Point], build: Build, measure: Measure, min_run_s: float = MIN_RUN_S
) -> tuple[dict[Point, int], list[str]]:
    """How many runs back to back make one measurement last at least min_run_s at each point:
    one run of the original there, timed.  Returns the batches and what to tell the user
    (including where even MAX_BATCH runs stay short: the workload must be made longer by its
    own options).  A failed run leaves its point at one run; the rounds will report it."""
    batches: dict[Point, int] = {}
    notes: list[str] = []
    for p in pts:
        rec = measure.once(Variant(ORIGINAL, "original", ORIGINAL), build, p)
        wall = rec.get("wall_s") or 0.0
        where = "" if p.threads is None else f" at {p.threads} threads"
        if not rec["ok"] or wall >= min_run_s:
            batches[p] = 1
            continue
        want = math.ceil(min_run_s / max(wall, 1e-6))
        batches[p] = min(want, MAX_BATCH)
        if want > MAX_BATCH:
            notes.append(
                f"one run lasts {wall * 1000:.0f} ms{where}: even {MAX_BATCH} back to back "
                f"last {wall * MAX_BATCH:.2f} s, under {min_run_s:g} s; start-up weighs in "
                "every ratio: give the program a longer workload"
            )
        else:
            notes.append(
                f"one run lasts {wall:.2f} s{where}, under {min_run_s:g} s: each measurement "
                f"is {batches[p]} runs back to back"
            )
    return batches, notes


def probe_round_trip(tsc_hz: float | None) -> float | None:
    """The core-to-core round trip just now (ns), or None where it cannot be measured."""
    args = ["--mode", "roundtrip", "--roundtrips", "20000"]
    if tsc_hz:
        args += ["--tsc-hz", f"{tsc_hz:.0f}"]
    try:
        doc = lockbench.run(args, timeout=30)
    except LocktuneError:
        return None
    rt = doc.get("roundtrip") or {}
    return rt.get("ns_median") if rt.get("ok") else None


# ---- the plan and the runs -----------------------------------------------------------------


def plan_round(rng: random.Random, pts: list[Point], vs: list[Variant], r: int) -> list[tuple]:
    """Round r's (round, point index, variant) in the order they run: the points shuffled, at
    each point every variant shuffled, back to back."""
    order = []
    idx = list(range(len(pts)))
    rng.shuffle(idx)
    for i in idx:
        mine = list(vs)
        rng.shuffle(mine)
        order += [(r, i, v) for v in mine]
    return order


def run_all(
    pts: list[Point],
    vs: list[Variant],
    builds: dict[str, Build],
    measure: Callable[[Variant, Build, Point], dict],
    repeats: int,
    seed: int = 1,
    probe: Callable[[], float | None] | None = None,
    progress: Callable[[int, int, int, Point, Variant], None] | None = None,
    rounds: interval.Rounds | None = None,
) -> list[dict]:
    """Every run, round after round: `repeats` rounds, or as many as `rounds` says (at least
    rounds.least, then until every ratio's interval is narrow enough or a cap; rounds.stopped
    says which).  Failures are recorded, not raised; a variant that timed out at a point is
    not run there again (it would only time out again), and says so."""
    rounds = rounds or interval.Rounds.fixed(repeats)
    rng = random.Random(seed)
    started = time.monotonic()
    runs: list[dict] = []
    timed_out: dict[tuple[int, str], int] = {}
    r = 0
    while True:
        order = plan_round(rng, pts, vs, r)
        planned = len(runs) + len(order) * max(1, rounds.least - r)
        for _r, i, v in order:
            n = len(runs)
            if progress:
                progress(n, planned, r, pts[i], v)
            rec = {
                "order": n,
                "round": r,
                "point": i,
                "threads": pts[i].threads,
                "variant": v.name,
                "started": time.strftime("%H:%M:%S"),
            }
            if (i, v.name) in timed_out:
                rec.update(
                    ok=False,
                    skipped=True,
                    timed_out=True,
                    throughput=None,
                    error=f"not run: timed out in round {timed_out[(i, v.name)] + 1}",
                )
                runs.append(rec)
                continue
            rec["rt_ns"] = probe() if probe else None
            rec.update(measure(v, builds[v.build], pts[i]))
            if rec.get("timed_out"):
                timed_out[(i, v.name)] = r
            runs.append(rec)
        r += 1
        rounds.run = r
        if rounds.done(time.monotonic() - started, widest(pts, vs, runs)):
            return runs


def round_ratios(runs: list[dict], i: int, name: str) -> list[tuple[dict, dict, float]]:
    """(run, the original's run, ratio) for each round where variant `name` and the original
    both succeeded at point i: every ratio is taken within one round."""
    base = {
        r["round"]: r
        for r in runs
        if r["point"] == i and r["variant"] == ORIGINAL and r["ok"] and r["throughput"]
    }
    out = []
    for r in runs:
        if r["point"] == i and r["variant"] == name and r["ok"] and r["round"] in base:
            b = base[r["round"]]
            out.append((r, b, r["throughput"] / b["throughput"]))
    return out


def widest(pts: list[Point], vs: list[Variant], runs: list[dict]) -> dict | None:
    """The compared ratio whose 95% interval is widest so far ({"variant", "point",
    "half_width_pct"}; an infinite width while a variant that ran has fewer than two ratios).
    None when nothing was compared (every run failed)."""
    worst = None
    for i, p in enumerate(pts):
        for v in vs:
            if v.name == ORIGINAL:
                continue
            ran = any(r["point"] == i and r["variant"] == v.name and r["ok"] for r in runs)
            iv = interval.ratio_interval([x for _r, _b, x in round_ratios(runs, i, v.name)])
            if not ran:
                continue
            width = math.inf if iv is None or iv["half_width_pct"] is None else iv["half_width_pct"]
            if worst is None or width > worst["half_width_pct"]:
                where = "as given" if p.threads is None else f"{p.threads} threads"
                worst = {"variant": v.name, "point": where, "half_width_pct": width}
    return worst


def check_results(runs: list[dict]) -> list[str]:
    """Fail every run whose checked lines differ from the original's at the same point.
    Returns notes (an original whose own result varies from run to run is not a reference)."""
    notes = []
    for i in sorted({r["point"] for r in runs}):
        here = [r for r in runs if r["point"] == i and r.get("ok") and "check_lines" in r]
        refs = {tuple(r["check_lines"]) for r in here if r["variant"] == ORIGINAL}
        if len(refs) != 1:
            if len(refs) > 1:
                notes.append(f"point {i}: the original's own checked lines vary; not compared")
            continue
        ref = refs.pop()
        if not ref:
            continue
        for r in here:
            if tuple(r["check_lines"]) != ref:
                diff = next(
                    (b for a, b in zip(ref, r["check_lines"], strict=False) if a != b),
                    "(fewer lines)",
                )
                r["ok"] = False
                r["error"] = f"result differs from the original's: {diff}"
    return notes


# ---- summaries -----------------------------------------------------------------------------


def summarise(pts: list[Point], vs: list[Variant], runs: list[dict]) -> list[dict]:
    """Per point, per variant: runs, failures, timeouts, the ratio to the original taken in
    each round (min/median/max), throughput, wall time, the round trip; the best variant."""
    out = []
    for i, p in enumerate(pts):
        table = {}
        for v in vs:
            mine = [r for r in runs if r["point"] == i and r["variant"] == v.name]
            ok = [r for r in mine if r["ok"]]
            ratios, same = [], []
            for r, b, ratio in round_ratios(runs, i, v.name):
                ratios.append(ratio)
                if regime(r.get("rt_ns")) is not None and regime(r.get("rt_ns")) == regime(
                    b.get("rt_ns")
                ):
                    same.append(ratio)
            regimes = {"near": 0, "far": 0, "unknown": 0}
            for r in ok:
                regimes[regime(r.get("rt_ns")) or "unknown"] += 1
            table[v.name] = {
                "kind": v.kind,
                "what": v.what,
                "runs": len(ok),
                "failed": sum(1 for r in mine if not r["ok"] and not r.get("timed_out")),
                "timed_out": sum(1 for r in mine if r.get("timed_out")),
                "errors": sorted({r["error"] for r in mine if r.get("error")}),
                "ratio": stat(ratios),
                "interval": None if v.name == ORIGINAL else interval.ratio_interval(ratios),
                "ratio_same_regime": stat(same),
                "throughput": stat([r["throughput"] for r in ok]),
                "wall_s": stat([r.get("wall_s") for r in ok]),
                "rt_ns": stat([r.get("rt_ns") for r in ok]),
                "regimes": regimes,
            }
        # Ranked by the centre of the interval (the rounds' geometric mean).
        ranked = [
            (s["interval"]["centre"], name)
            for name, s in table.items()
            if name != ORIGINAL and s["interval"] and not s["failed"]
        ]
        best = max(ranked) if ranked else None
        header = next((n for n, s in table.items() if s["kind"] == "header"), None)
        out.append(
            {
                **p.doc(),
                "variants": table,
                "best": (
                    {"variant": best[1], "ratio": best[0], "interval": table[best[1]]["interval"]}
                    if best
                    else None
                ),
                "header": header,
                "header_ratio": (table[header]["interval"] or {}).get("centre") if header else None,
                "header_interval": table[header]["interval"] if header else None,
            }
        )
    return out
