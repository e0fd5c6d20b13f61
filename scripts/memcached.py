#!/usr/bin/env python3
"""memcached, built as Debian ships it, profiled, rewritten by locktune, tested by its own
suite under each lock algorithm and benchmarked against the original: the real program of the
end-to-end tests (issue 7).

    scripts/memcached.py fetch                  Debian source package -> build/memcached/source
    scripts/memcached.py build-original  [-w W] configure (clang) + `bear -- make`: W/original
    scripts/memcached.py profile         [-w W] locktune profile of memcached under a loopback
                                                load (memcaslap): W/profile.json
    scripts/memcached.py rewrite         [-w W] locktune rewrite, every lock (--profile P: its
                                                recommendations in locktune_config.h)
    scripts/memcached.py build-rewritten [-w W] its own build (configure + make, memcached-debug
                                                included), liblocktune
    scripts/memcached.py test TREE       [-w W] its own suite (every t/*.t by prove, testapp,
                                                sizes), TREE original|rewritten, --algo X
    scripts/memcached.py bench           [-w W] throughput under the same load, original vs
                                                each configuration -> bench/results
    scripts/memcached.py e2e             [-w W] all of it: suite on the original (baseline),
                                                profile, rewrite with the profile, build, suite
                                                under each algorithm (every file that passes on
                                                the original must pass), bench
    scripts/memcached.py all             [-w W] build-original, rewrite, build-rewritten, test
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
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / "build" / "memcached"
DEFAULT_WORK = CACHE / "work"
JOBS = str(os.cpu_count() or 2)

# A quick subset of the suite (the notes: 38k assertions, about 12 s).
QUICK_TESTS = ["t/getset.t", "t/lru.t", "t/incrdecr.t", "t/slabs_reassign.t"]
# The suite's slowest files (the notes: 15-31 s each, sleep-bound), started first.
SLOW_TESTS = {
    "t/restart.t",
    "t/metaget.t",
    "t/chunked-extstore.t",
    "t/binary.t",
    "t/00-startup.t",
    "t/extstore.t",
    "t/binary-extstore.t",
    "t/extstore-jbod.t",
    "t/watcher.t",
}
# The algorithms issue 7 runs the suite under.
SUITE_ALGORITHMS = ["posix", "mcs", "shfl-block", "ccsynch", "rcl"]
# The load: memcaslap's default mix (90% get, 10% set), a few client threads and connections.
SERVER_THREADS = 4
LOAD_CLIENT_THREADS = 2
LOAD_CONNECTIONS = 32


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
    if profile is not None:
        cmd += ["--profile", str(profile)]
    cmd.append(str(tree))
    t0 = time.monotonic()
    res = run(cmd, log=work / "rewrite.log")
    elapsed = time.monotonic() - t0
    sys.path.insert(0, str(ROOT))
    from locktune.rewrite import report as rewrite_report

    rep = rewrite_report.read(report)
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


def _kill_group(proc: subprocess.Popen) -> None:
    """Stop a process and whatever it started (a test's memcached-debug servers)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.communicate()


def _run_bounded(cmd: list[str], cwd: Path, env: dict | None, timeout: float):
    """(exit status or None when it ran past timeout, output, seconds)."""
    t0 = time.monotonic()
    proc = subprocess.Popen(
        cmd,
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        return None, "", time.monotonic() - t0
    return proc.returncode, out, time.monotonic() - t0


def _prove_one(tree: Path, test: str, env: dict | None, timeout: float) -> dict:
    rc, out, wall = _run_bounded(["prove", test], tree, env, timeout)
    rec = {"wall_s": round(wall, 2)}
    if rc is None:
        return {**rec, "status": "timed out", "detail": f"ran longer than {timeout:.0f} s"}
    m = re.search(r"Tests=(\d+)", out)
    rec["tests"] = int(m.group(1)) if m else None
    line = next((ln for ln in out.splitlines() if ln.startswith(test)), "")
    if rc == 0:
        skip = re.search(r"skipped:\s*(.*)", line)
        if skip:
            return {**rec, "status": "skipped", "detail": skip.group(1).strip()}
        return {**rec, "status": "ok"}
    failed = [ln.strip() for ln in out.splitlines() if re.search(r"Failed|not ok|Dubious", ln)]
    return {**rec, "status": "failed", "detail": " | ".join(failed[:4]) or f"exit {rc}"}


def _testapp(tree: Path, env: dict | None, timeout: float) -> dict:
    """./testapp (TAP, one line per case) and ./sizes, as `make test` runs them first."""
    rc, out, wall = _run_bounded(["./testapp"], tree, env, timeout)
    if rc is None:
        return {"status": "timed out", "cases": {}, "wall_s": round(wall, 2)}
    cases = {}
    for m in re.finditer(r"^(not )?ok \d+ - (.+)$", out, re.M):
        cases[m.group(2).strip()] = "failed" if m.group(1) else "ok"
    sizes_rc, _, _ = _run_bounded(["./sizes"], tree, env, 30)
    return {
        "status": "ok" if rc == 0 else "failed",
        "cases": cases,
        "sizes": "ok" if sizes_rc == 0 else "failed",
        "wall_s": round(wall, 2),
    }


def run_suite(
    tree: Path,
    env: dict | None = None,
    jobs: int = 6,
    quick: bool = False,
    timeout: float = 300,
) -> dict:
    """memcached's own suite, per test file: every t/*.t by its own `prove` (jobs at a time,
    each bounded by timeout, a hung file and the servers it started killed), then testapp
    and sizes.  The suite sleeps more than it computes: with 6 jobs it takes about 2
    minutes on the 2-vCPU development VM, the quick subset about 15 s."""
    tests = list(QUICK_TESTS) if quick else sorted(f"t/{p.name}" for p in (tree / "t").glob("*.t"))
    tests.sort(key=lambda t: t not in SLOW_TESTS)  # the slowest start first: a shorter tail
    t0 = time.monotonic()
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        results = pool.map(lambda t: _prove_one(tree, t, env, timeout), tests)
        done = dict(sorted(zip(tests, results, strict=True)))
    testapp = _testapp(tree, env, 120)
    counts: dict[str, int] = {}
    for r in done.values():
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    return {
        "tree": str(tree),
        "algorithm": (env or {}).get("LOCKTUNE_ALGO"),
        "files": done,
        "counts": counts,
        "assertions": sum(r.get("tests") or 0 for r in done.values()),
        "testapp": testapp,
        "wall_s": round(time.monotonic() - t0, 1),
    }


def suite_line(suite: dict) -> str:
    c = suite["counts"]
    cases = suite["testapp"]["cases"]
    passed = sum(1 for v in cases.values() if v == "ok")
    return (
        f"{c.get('ok', 0)} files ok, {c.get('skipped', 0)} skipped, {c.get('failed', 0)} failed, "
        f"{c.get('timed out', 0)} timed out ({suite['assertions']} assertions); testapp "
        f"{passed}/{len(cases)} ({suite['wall_s']:.0f} s)"
    )


def regressions(baseline: dict, other: dict) -> list[str]:
    """What passes on the original and not on `other`: test files, testapp cases, sizes."""
    out = []
    for test, r in baseline["files"].items():
        o = other["files"].get(test)
        if r["status"] == "ok" and (o is None or o["status"] != "ok"):
            why = "not run" if o is None else f"{o['status']}: {o.get('detail') or ''}".rstrip(": ")
            out.append(f"{test}: {why}")
    cases = other["testapp"]["cases"]
    for case, status in baseline["testapp"]["cases"].items():
        if status == "ok" and cases.get(case) != "ok":
            out.append(f"testapp {case}: {cases.get(case, other['testapp']['status'])}")
    if baseline["testapp"].get("sizes") == "ok" and other["testapp"].get("sizes") != "ok":
        out.append("sizes: failed")
    return out


def run_tests(
    tree: Path, quick: bool = False, jobs: int = 4, env: dict | None = None, timeout: float = 0
):
    """The suite through one `prove -jN` (its summary), as the rewriter's tests first ran it."""
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


# ---- the server under a loopback load ------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def server_args(port: int, threads: int = SERVER_THREADS) -> list[str]:
    args = ["-l", "127.0.0.1", "-p", str(port), "-U", "0", "-t", str(threads), "-m", "256"]
    args += ["-c", "1024"]
    return args + (["-u", "root"] if os.geteuid() == 0 else [])  # memcached refuses root


def wait_for_port(port: int, proc: subprocess.Popen, timeout: float = 15) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise Failed(f"the server exited with status {proc.returncode} before listening")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise Failed(f"nothing listens on 127.0.0.1:{port} after {timeout:.0f} s")


def load(port: int, seconds: float) -> float:
    """memcaslap against 127.0.0.1:port for `seconds`: transactions per second."""
    exe = shutil.which("memcaslap")
    if exe is None:
        raise Failed("memcaslap is missing (libmemcached-tools): run scripts/bootstrap")
    cmd = [
        exe,
        "-s",
        f"127.0.0.1:{port}",
        "-t",
        f"{max(1, round(seconds))}s",
        "-T",
        str(LOAD_CLIENT_THREADS),
        "-c",
        str(LOAD_CONNECTIONS),
    ]
    rc, out, _ = _run_bounded(cmd, Path.cwd(), None, seconds + 60)
    m = re.search(r"TPS:\s*(\d+)", out)
    if rc != 0 or not m:
        tail = " | ".join(out.strip().splitlines()[-2:])
        raise Failed(f"memcaslap exited with status {rc}: {tail or 'no output'}")
    return float(m.group(1))


def profile_under_load(work: Path, seconds: float = 8) -> Path:
    """locktune profile of the original memcached while memcaslap drives it: W/profile.json."""
    tree = work / "original"
    out = work / "profile.json"
    port = free_port()
    cmd = [locktune(), "profile", "-o", str(out), "--source-root", str(tree), "--"]
    cmd += ["./memcached", *server_args(port)]
    log = open(work / "profile.log", "w")
    say(f"profiling memcached under memcaslap for {seconds:.0f} s")
    proc = subprocess.Popen(cmd, cwd=tree, stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_for_port(port, proc)
        tps = load(port, seconds)
    except Failed:
        proc.kill()
        proc.wait()
        raise
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)  # locktune passes it on; the profile is written
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
    if proc.returncode != 0 or not out.exists():
        raise Failed(f"locktune profile exited with status {proc.returncode} (log: {log.name})")
    sys.path.insert(0, str(ROOT))
    from locktune.profiler import document as profile_document

    doc = profile_document.read(out)
    say(
        f"profile: {len(doc['locks'])} lock sites, {doc['totals']['cs_percent']:.1f}% of thread "
        f"time in critical sections, {tps:.0f} requests/s under the profiler"
    )
    return out


class MemcachedMeasure:
    """One run of `locktune bench compare`'s plan: memcached from the variant's build, the same
    memcaslap load, its transactions per second."""

    def __init__(self, seconds: float):
        self.seconds = seconds

    def __call__(self, variant, build, point) -> dict:
        sys.path.insert(0, str(ROOT))
        from locktune.bench import compare

        port = free_port()
        rec: dict = {"ok": False, "error": None, "timed_out": False, "throughput": None}
        t0 = time.monotonic()
        proc = subprocess.Popen(
            ["./memcached", *server_args(port)],
            cwd=build.dir,
            env=compare.clean_env(variant.env),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        try:
            wait_for_port(port, proc)
            rec["throughput"] = load(port, self.seconds)
        except Failed as e:
            rec["error"] = str(e)
        finally:
            if proc.poll() is None:
                proc.terminate()
            try:
                out, _ = proc.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                _kill_group(proc)
                out = ""
                rec["error"] = rec["error"] or "the server did not stop within 30 s of SIGTERM"
        rec["wall_s"] = time.monotonic() - t0
        if rec["error"] is None and proc.returncode not in (0, -signal.SIGTERM):
            tail = " | ".join((out or "").strip().splitlines()[-2:])
            rec["error"] = f"the server exited with status {proc.returncode}: {tail}"
        rec["ok"] = rec["error"] is None
        return rec


def bench(
    work: Path,
    algorithms: list[str],
    repeats: int,
    seconds: float,
    out_dir: Path | None,
    seed: int = 1,
) -> tuple[dict, Path]:
    """Throughput side by side under the same load: the original, the rewritten build with its
    header (the profile's recommendation), and every lock on each algorithm; interleaved,
    shuffled, repeated, ratios to the original within a round (locktune.bench.compare)."""
    sys.path.insert(0, str(ROOT))
    from locktune import machine
    from locktune.bench import compare, compare_report, lockbench

    original, rewritten = work / "original", work / "rewritten"
    for tree in (original, rewritten):
        if not (tree / "memcached").exists():
            raise Failed(f"{tree / 'memcached'} is not built")
    sites, profile_name = compare.header_sites(rewritten)
    variants, _, notes = compare.variants(sites, profile_name, algorithms, [], [], [], rewritten)
    desc = machine.describe()
    wanted = sorted({a for v in variants for a in v.algorithms})
    avail = lockbench.available(wanted, desc["usable_cpus"] or 1)
    variants, unavailable = compare.drop_unavailable(variants, avail.unavailable)
    builds = {
        "original": compare.Build("original", original, None, rewritten=False),
        "rewritten": compare.Build("rewritten", rewritten, None),
    }
    for b in builds.values():
        compare.prepare(b, None)
    argv = ("./memcached", *server_args(0)[:2], "-p", "PORT", *server_args(0)[4:])
    pts = [compare.Point(None, argv)]
    total = len(variants) * repeats
    say(f"bench: {len(variants)} configurations x {repeats} rounds x {seconds:.0f} s of load")

    def progress(n, total_runs, r, p, v):
        say(f"bench: [{n + 1}/{total_runs}] round {r + 1}: {v.name}")

    probe = None
    if (desc["usable_cpus"] or 1) >= 2:
        tsc = lockbench.machine_info()["tsc"]["hz"]

        def probe():
            return compare.probe_round_trip(tsc)

    runs = compare.run_all(
        pts, variants, builds, MemcachedMeasure(seconds), repeats, seed, probe, progress
    )
    summary = compare.summarise(pts, variants, runs)
    document = {
        "schema": compare.SCHEMA,
        "command": "scripts/memcached.py " + " ".join(sys.argv[1:]),
        "machine": desc,
        "program": "memcached",
        "original": str(original),
        "rewritten": str(rewritten),
        "load": {
            "client": "memcaslap",
            "seconds": seconds,
            "client_threads": LOAD_CLIENT_THREADS,
            "connections": LOAD_CONNECTIONS,
            "server_threads": SERVER_THREADS,
            "metric": "memcaslap TPS (requests per second)",
        },
        "settings": {"repeats": repeats, "seed": seed, "runs": total},
        "sites": [s.__dict__ for s in sites],
        "variants": [v.doc() for v in variants],
        "unavailable": unavailable,
        "notes": notes,
        "points": summary,
        "runs": runs,
    }
    if out_dir is None:
        out_dir = compare_report.default_out_dir("memcached", desc, ROOT)
    compare_report.write(out_dir, document, "memcached")
    print(compare_report.tables(summary, unit="req/s"))
    for line in compare_report.verdict_lines(summary):
        print(line)
    for name, why in unavailable.items():
        print(f"unavailable: {name} ({why})")
    say(f"bench: wrote {out_dir}")
    return document, out_dir


def e2e(
    work: Path,
    algorithms: list[str],
    jobs: int,
    quick: bool,
    bench_seconds: float,
    bench_repeats: int,
    results: Path | None,
) -> dict:
    """Issue 7's memcached run, step by step; returns (and writes W/e2e.json) the summary:
    the suite on the original, the profile, the rewrite (share extracted, manual help), the
    suite under each algorithm with every regression, and the throughput ratios."""
    sys.path.insert(0, str(ROOT))
    from locktune.bench import compare, lockbench

    summary: dict = {"program": fetch().name, "work": str(work), "quick": quick}
    t0 = time.monotonic()
    if not (work / "original" / "memcached-debug").exists():
        build_original(work)
    say("running its own suite on the original (the baseline)")
    base = run_suite(work / "original", compare.clean_env(), jobs=jobs, quick=quick)
    (work / "suite-original.json").write_text(json.dumps(base, indent=1) + "\n")
    say(f"original: {suite_line(base)}")
    summary["baseline"] = {"line": suite_line(base), "counts": base["counts"]}

    profile = profile_under_load(work)
    rep = rewrite(work, profile=profile)
    s = rep["summary"]
    summary["rewrite"] = {
        "sections": s["sections"],
        "extracted": s["extracted"],
        "kept": s["kept"],
        "extracted_percent": round(100.0 * s["extracted"] / s["sections"], 1)
        if s["sections"]
        else None,
        "kept_reasons": s.get("kept_reasons"),
        "sites": s["sites"],
        "files_failed": s["files_failed"],
        "lock_wrappers_found": sorted(rep.get("lock_wrappers", {})),
        "manual_help": "none: no source edited by hand, no option beyond the compilation "
        "database (the wrapper functions are found by the rewriter)",
    }
    build_rewritten(work)

    avail = lockbench.available(algorithms, len(os.sched_getaffinity(0)))
    summary["suites"] = {}
    for algo in algorithms:
        if algo in avail.unavailable:
            summary["suites"][algo] = {"status": "unavailable", "why": avail.unavailable[algo]}
            say(f"{algo}: unavailable ({avail.unavailable[algo]})")
            continue
        env = compare.clean_env({"LOCKTUNE_ALGO": f"default={algo}"})
        suite = run_suite(work / "rewritten", env, jobs=jobs, quick=quick)
        (work / f"suite-{algo}.json").write_text(json.dumps(suite, indent=1) + "\n")
        lost = regressions(base, suite)
        summary["suites"][algo] = {
            "status": "green" if not lost else "regressions",
            "line": suite_line(suite),
            "regressions": lost,
        }
        say(f"{algo}: {suite_line(suite)}; {len(lost)} regressions")
        for line in lost:
            say(f"  {line}")
    if bench_seconds > 0:
        doc, out_dir = bench(work, algorithms, bench_repeats, bench_seconds, results)
        p = doc["points"][0]
        summary["bench"] = {
            "results": str(out_dir),
            "ratios": {n: v["ratio"] for n, v in p["variants"].items() if n != "original"},
            "best": p["best"],
        }
    summary["wall_s"] = round(time.monotonic() - t0, 1)
    (work / "e2e.json").write_text(json.dumps(summary, indent=1) + "\n")
    if results is not None:
        results.mkdir(parents=True, exist_ok=True)
        (results / "e2e.json").write_text(json.dumps(summary, indent=1) + "\n")
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
            "profile",
            "rewrite",
            "build-rewritten",
            "test",
            "bench",
            "e2e",
            "all",
            "bench-rewrite",
        ],
    )
    ap.add_argument("tree", nargs="?", choices=["original", "rewritten"], default="rewritten")
    ap.add_argument("-w", "--work", type=Path, default=DEFAULT_WORK, help="work directory")
    ap.add_argument("--quick", action="store_true", help="test, e2e: the quick subset only")
    ap.add_argument("--jobs", type=int, default=6, help="test, e2e: test files at once (6)")
    ap.add_argument("--algo", help="test: run the rewritten tree with LOCKTUNE_ALGO=default=ALGO")
    ap.add_argument(
        "--algos",
        default=",".join(SUITE_ALGORITHMS),
        help=f"e2e, bench: algorithms (default {','.join(SUITE_ALGORITHMS)})",
    )
    ap.add_argument("--profile", type=Path, help="rewrite: a profile.json for the header")
    ap.add_argument(
        "--seconds", type=float, default=5, help="bench, e2e: seconds of load a run (5)"
    )
    ap.add_argument(
        "--repeats", type=int, help="bench: rounds (default 5); bench-rewrite: runs (5); e2e: 3"
    )
    ap.add_argument("--no-bench", action="store_true", help="e2e: skip the throughput runs")
    ap.add_argument(
        "--results",
        type=Path,
        help="bench, e2e: output folder (default bench/results/compare-memcached-...); "
        "bench-rewrite: its folder (default bench/results)",
    )
    args = ap.parse_args()
    work = args.work.resolve()
    algos = [a.strip() for a in args.algos.split(",") if a.strip()]
    try:
        if args.step == "fetch":
            print(fetch())
        elif args.step == "build-original":
            print(build_original(work))
        elif args.step == "profile":
            print(profile_under_load(work, args.seconds))
        elif args.step == "rewrite":
            rewrite(work, profile=args.profile)
        elif args.step == "build-rewritten":
            print(build_rewritten(work))
        elif args.step == "test":
            sys.path.insert(0, str(ROOT))
            from locktune.bench.compare import clean_env

            extra = {"LOCKTUNE_ALGO": f"default={args.algo}"} if args.algo else {}
            suite = run_suite(work / args.tree, clean_env(extra), args.jobs, args.quick)
            for test, r in suite["files"].items():
                if r["status"] not in ("ok", "skipped"):
                    print(f"{test}: {r['status']}: {r.get('detail', '')}")
            print(suite_line(suite))
            return (
                0
                if not suite["counts"].get("failed")
                and not suite["counts"].get("timed out")
                and suite["testapp"]["status"] == "ok"
                else 1
            )
        elif args.step == "bench":
            bench(work, algos, args.repeats or 5, args.seconds, args.results)
        elif args.step == "e2e":
            summary = e2e(
                work,
                algos,
                args.jobs,
                args.quick,
                0 if args.no_bench else args.seconds,
                args.repeats or 3,
                args.results,
            )
            print(json.dumps(summary, indent=1))
            bad = [a for a, r in summary["suites"].items() if r["status"] == "regressions"]
            return 1 if bad else 0
        elif args.step == "all":
            build_original(work)
            rewrite(work, profile=args.profile)
            build_rewritten(work)
            print(run_tests(work / "rewritten", quick=args.quick, jobs=args.jobs))
        elif args.step == "bench-rewrite":
            bench_rewrite(work, args.repeats or 5, args.results or ROOT / "bench" / "results")
    except Failed as e:
        print(f"memcached: error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
