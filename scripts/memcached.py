#!/usr/bin/env python3
"""memcached, built as Debian ships it and rewritten by locktune: a real program for the
rewriter's tests and the end-to-end benchmark.

    scripts/memcached.py fetch                  Debian source package -> build/memcached/source
    scripts/memcached.py build-original  [-w W] configure (clang) + `bear -- make`: W/original
    scripts/memcached.py rewrite         [-w W] locktune rewrite, every lock: W/rewritten
    scripts/memcached.py build-rewritten [-w W] its own build (configure + make), liblocktune
    scripts/memcached.py test TREE       [-w W] its own test suite (prove), TREE original|rewritten
    scripts/memcached.py all             [-w W] all of the above
    scripts/memcached.py bench-rewrite   [-w W] rewrite time and share extracted -> bench/results

W defaults to build/memcached/work.  The source is fetched with `apt-get source` (deb-src
entries: `scripts/bootstrap --deb-src`) and never committed.  Facts behind the recipe:
../shared/notes/memcached-and-baselines.md (configure adds -Werror -pedantic; the test suite
runs memcached-debug; clang needs --disable-coverage; trees are copied with their
timestamps or make wants to rerun automake).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / "build" / "memcached"
DEFAULT_WORK = CACHE / "work"
JOBS = str(os.cpu_count() or 2)

# The project's own lock wrappers that are functions (macros are recognised by locktune).
LOCK_WRAPPERS = [
    "item_lock=lock",
    "item_unlock=unlock",
    "item_trylock=trylock",
    "STATS_LOCK=lock",
    "STATS_UNLOCK=unlock",
]
# A quick subset of the suite (the notes: 38k assertions, about 12 s).
QUICK_TESTS = ["t/getset.t", "t/lru.t", "t/incrdecr.t", "t/slabs_reassign.t"]


class Failed(Exception):
    pass


def say(msg: str) -> None:
    print(f"memcached: {msg}", file=sys.stderr, flush=True)


def run(cmd: list[str], cwd: Path | None = None, log: Path | None = None, **kw):
    """Run cmd; on failure raise with the tail of its output (and keep the full log)."""
    res = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, **kw)
    if log is not None:
        log.write_text(res.stdout + res.stderr)
    if res.returncode != 0:
        tail = "\n".join((res.stdout + res.stderr).strip().splitlines()[-25:])
        where = f" (log: {log})" if log else ""
        raise Failed(f"{' '.join(cmd)} exited {res.returncode}{where}\n{tail}")
    return res


def locktune() -> str:
    exe = shutil.which("locktune") or str(ROOT / ".venv" / "bin" / "locktune")
    if not os.access(exe, os.X_OK):
        raise Failed("`locktune` is not installed: run scripts/bootstrap")
    return exe


def copy_tree(src: Path, dst: Path) -> None:
    """A copy that keeps timestamps (otherwise make reruns aclocal/automake)."""
    if dst.exists():
        shutil.rmtree(dst)
    shutil.copytree(src, dst, symlinks=True)


def fetch() -> Path:
    """The patched Debian source tree, fetched once into build/memcached/source."""
    src = CACHE / "source"
    trees = sorted(src.glob("memcached-*/configure")) if src.exists() else []
    if trees:
        return trees[-1].parent
    src.mkdir(parents=True, exist_ok=True)
    say("fetching the Debian source package (apt-get source memcached)")
    res = subprocess.run(
        ["apt-get", "source", "memcached"], cwd=src, capture_output=True, text=True
    )
    trees = sorted(src.glob("memcached-*/configure"))
    if res.returncode != 0 or not trees:
        why = " ".join((res.stderr or res.stdout).split())[-300:]
        raise Failed(
            f"apt-get source memcached failed ({why}); enable deb-src entries with "
            "`scripts/bootstrap --deb-src`"
        )
    return trees[-1].parent


def configure(tree: Path, log: Path, extra: list[str] = ()) -> None:
    env = dict(os.environ, CC="clang")
    run(["./configure", "--disable-coverage", *extra], cwd=tree, log=log, env=env)


def build_original(work: Path) -> Path:
    """The original, configured and built with bear: W/original/compile_commands.json."""
    tree = work / "original"
    work.mkdir(parents=True, exist_ok=True)
    copy_tree(fetch(), tree)
    say(f"building the original in {tree}")
    configure(tree, work / "original-configure.log")
    run(["bear", "--", "make", f"-j{JOBS}"], cwd=tree, log=work / "original-make.log")
    if not (tree / "compile_commands.json").exists():
        raise Failed(f"{tree}: bear wrote no compile_commands.json")
    return tree


def rewrite(work: Path, out: Path | None = None, profile: Path | None = None) -> dict:
    """locktune rewrite over the configured original, every lock; returns its report."""
    tree = work / "original"
    out = out or work / "rewritten"
    report = work / "rewrite-report.json"
    cmd = [
        locktune(),
        "rewrite",
        "--compile-commands",
        str(tree / "compile_commands.json"),
        "--out",
        str(out),
        "--report",
        str(report),
    ]
    for w in LOCK_WRAPPERS:
        cmd += ["--lock-wrapper", w]
    if profile is not None:
        cmd += ["--profile", str(profile)]
    cmd.append(str(tree))
    t0 = time.monotonic()
    res = run(cmd, log=work / "rewrite.log")
    elapsed = time.monotonic() - t0
    rep = json.loads(report.read_text())
    rep["wall_s"] = elapsed
    print(res.stdout, end="")
    return rep


def build_rewritten(work: Path) -> Path:
    """The rewritten tree built by its own build system, linked with liblocktune."""
    tree = work / "rewritten"
    lt = locktune()
    cflags = run([lt, "flags", "--cflags"]).stdout.strip()
    libs = run([lt, "flags", "--libs"]).stdout.strip()
    say(f"building the rewritten tree in {tree}")
    # The copy carries the original's build products: start from a clean tree.
    subprocess.run(["make", "distclean"], cwd=tree, capture_output=True)
    for stale in list(tree.glob("*.o")) + [tree / "compile_commands.json"]:
        stale.unlink(missing_ok=True)
    configure(tree, work / "rewritten-configure.log", [f"CPPFLAGS={cflags}", f"LIBS={libs}"])
    run(["make", f"-j{JOBS}"], cwd=tree, log=work / "rewritten-make.log")
    return tree


def run_tests(
    tree: Path, quick: bool = False, jobs: int = 4, env: dict | None = None, timeout: float = 0
):
    """memcached's own suite (prove runs memcached-debug); returns prove's summary.  The
    whole suite takes about 1.5-2.5 minutes with -j4, the quick subset about 15 s."""
    tests = QUICK_TESTS if quick else ["t/"]
    try:
        res = subprocess.run(
            ["prove", f"-j{jobs}", *tests],
            cwd=tree,
            capture_output=True,
            text=True,
            env=env,
            timeout=timeout or (120 if quick else 600),
        )
    except subprocess.TimeoutExpired as e:
        raise Failed(f"prove {' '.join(tests)} in {tree} ran longer than {e.timeout:.0f} s") from e
    summary = "\n".join(res.stdout.strip().splitlines()[-3:])
    if res.returncode != 0:
        failed = [ln for ln in res.stdout.splitlines() if "Failed" in ln or "not ok" in ln]
        raise Failed(f"prove {' '.join(tests)} in {tree} failed:\n" + "\n".join(failed[-20:]))
    return summary


def bench_rewrite(work: Path, repeats: int, out_dir: Path) -> Path:
    """Rewrite time of the whole tree (target: under 60 s) and the share of sections
    extracted, repeated; min/median/max with the machine described."""
    sys.path.insert(0, str(ROOT))
    from locktune import charts, machine

    if not (work / "original" / "compile_commands.json").exists():
        build_original(work)
    runs = []
    for i in range(repeats):
        rep = rewrite(work, out=work / f"bench-rewritten-{i}")
        shutil.rmtree(work / f"bench-rewritten-{i}", ignore_errors=True)
        runs.append(rep)
        say(f"run {i + 1}/{repeats}: {rep['wall_s']:.1f} s")
    walls = [r["wall_s"] for r in runs]
    last = runs[-1]["summary"]
    share = 100.0 * last["extracted"] / last["sections"] if last["sections"] else 0.0
    result = {
        "benchmark": "rewrite-time-memcached",
        "command": f"scripts/memcached.py bench-rewrite --repeats {repeats}",
        "machine": machine.describe(),
        "program": fetch().name,
        "target_s": 60,
        "wall_s": {
            "min": min(walls),
            "median": statistics.median(walls),
            "max": max(walls),
            "runs": walls,
        },
        "phases_s": runs[-1]["summary"].get("phases_s"),
        "files": last["files"],
        "files_rewritten": last["files_rewritten"],
        "sections": last["sections"],
        "extracted": last["extracted"],
        "kept": last["kept"],
        "extracted_percent": round(share, 1),
        "kept_reasons": last["kept_reasons"],
        "sites": last["sites"],
        "extract_mode": runs[-1]["tools"]["extract"],
    }
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "rewrite-memcached.json"
    path.write_text(json.dumps(result, indent=2) + "\n")
    svg = charts.bar_chart(
        f"locktune rewrite of {result['program']}: wall time ({repeats} runs)",
        ["min", "median", "max"],
        {"rewrite (s)": [min(walls), statistics.median(walls), max(walls)]},
        y_label="seconds",
        reference=60.0,
    )
    (out_dir / "rewrite-memcached.svg").write_text(svg)
    say(
        f"wall {min(walls):.1f} / {statistics.median(walls):.1f} / {max(walls):.1f} s "
        f"(min/median/max), {last['extracted']}/{last['sections']} sections extracted "
        f"({share:.0f}%): {path}"
    )
    return path


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument(
        "step",
        choices=[
            "fetch",
            "build-original",
            "rewrite",
            "build-rewritten",
            "test",
            "all",
            "bench-rewrite",
        ],
    )
    ap.add_argument("tree", nargs="?", choices=["original", "rewritten"], default="rewritten")
    ap.add_argument("-w", "--work", type=Path, default=DEFAULT_WORK, help="work directory")
    ap.add_argument("--quick", action="store_true", help="test: the quick subset only")
    ap.add_argument("--jobs", type=int, default=4, help="test: prove -j (default 4)")
    ap.add_argument("--profile", type=Path, help="rewrite: a profile.json for the header")
    ap.add_argument("--repeats", type=int, default=5, help="bench-rewrite: runs (default 5)")
    ap.add_argument(
        "--results", type=Path, default=ROOT / "bench" / "results", help="bench-rewrite: output"
    )
    args = ap.parse_args()
    work = args.work.resolve()
    try:
        if args.step == "fetch":
            print(fetch())
        elif args.step == "build-original":
            print(build_original(work))
        elif args.step == "rewrite":
            rewrite(work, profile=args.profile)
        elif args.step == "build-rewritten":
            print(build_rewritten(work))
        elif args.step == "test":
            print(run_tests(work / args.tree, quick=args.quick, jobs=args.jobs))
        elif args.step == "all":
            build_original(work)
            rewrite(work, profile=args.profile)
            build_rewritten(work)
            print(run_tests(work / "rewritten", quick=args.quick, jobs=args.jobs))
        elif args.step == "bench-rewrite":
            bench_rewrite(work, args.repeats, args.results)
    except Failed as e:
        print(f"memcached: error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
