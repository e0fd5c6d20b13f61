#!/usr/bin/env python3
"""Real programs from Debian source packages, end to end (issue 11, item 7): one generic runner
and one small recipe per program.  Each program is fetched with `apt-get source`, built by its
own build system under `bear` (the original), rewritten by `locktune rewrite` with nothing but
its `compile_commands.json`, built again by its own build system with `locktune flags`, and
its own tests run on the original and under each lock algorithm.

    scripts/realprog.py list                          the recipes and what each covers
    scripts/realprog.py fetch           PROG          apt-get source -> build/realprog/PROG/source
    scripts/realprog.py build-original  PROG [-w W]   configure + `bear -- BUILD`: W/original
    scripts/realprog.py profile         PROG [-w W]   locktune profile under the recipe's workload
                                                      (recipes that have one): W/profile.json
    scripts/realprog.py rewrite         PROG [-w W]   locktune rewrite: W/rewritten, W/rewrite.json
                                                      (--profile W/profile.json when there is one)
    scripts/realprog.py build-rewritten PROG [-w W]   clean, configure and build with locktune flags
    scripts/realprog.py test            PROG [-w W]   its own tests: --tree original|rewritten,
                                                      --algo X (LOCKTUNE_ALGO=default=X)
    scripts/realprog.py all             PROG|all      every step, its tests under each algorithm;
                                                      W/result.json
    scripts/realprog.py table                         bench/results/realprog/ from each result.json
    scripts/realprog.py bench-rewrite   PROG [-w W]   the rewrite's time, --repeats N times:
                                                      bench/results/rewrite-PROG.{json,svg}

W defaults to build/realprog/PROG/work.  The sources are fetched once (deb-src entries:
`scripts/bootstrap --deb-src`, derived from this machine's apt sources) and never committed.
The rewrite gets no per-program option: `--compile-commands`, `--out`, `--report` and the
tree (and `--profile` where the recipe profiles its program), nothing else.  Every command is
printed before it runs (`realprog: $ ...`).

A recipe is a few shell lines (RECIPES below).  A program that needs Python for more (a test
harness judged file by file, a workload to profile and benchmark it under) has its recipe in
a script of its own that builds on this runner: memcached's is scripts/memcached.py
(RECIPE_SCRIPTS); `list`, `all` and the steps above take it like the others.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import re
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / "build" / "realprog"
RESULTS = ROOT / "bench" / "results" / "realprog"
JOBS = str(os.cpu_count() or 2)
ALGORITHMS = ["posix", "mcs", "shfl-block", "ccsynch", "rcl", "auto"]
GOOD = ("ok", "unavailable")  # a step's status that is no failure


# A script that loads one of RECIPE_SCRIPTS (or is one) finds this module under one name.
sys.modules.setdefault("realprog", sys.modules[__name__])


class Failed(Exception):
    """A step that could not be done; the message says what and where."""


def locktune() -> str:
    exe = shutil.which("locktune") or str(ROOT / ".venv" / "bin" / "locktune")
    if not os.access(exe, os.X_OK):
        raise Failed("`locktune` is not installed: run scripts/bootstrap")
    return exe


def copy_tree(src: Path, dst: Path) -> None:
    """A copy that keeps timestamps (otherwise make reruns aclocal/automake in the copy)."""
    if dst.exists():
        shutil.rmtree(dst)
    shutil.copytree(src, dst, symlinks=True)


def run_bounded(
    cmd: list[str], cwd: Path, env: dict | None, timeout: float, log: Path | None = None
):
    """(exit status or None when it ran past timeout, output, seconds).  The output goes to
    log as it comes (when one is given), so what a hung run printed is kept; past the timeout
    the command and whatever it started (servers, children) are killed.

    The command runs in a process group of its own (what the timeout kills), in the caller's
    session: a session of its own would also be a scheduling group of its own (the kernel's
    autogroup), and on Linux 6.18.44 a group whose threads hand a CPU to each other thousands of
    times a second keeps every other group off that CPU for up to seconds (docs/delegation.md,
    "Limits").  memcached's suite, 6 test files at once, each in its own session, then failed a
    timing-bound test now and then under rcl; a program's own `make test` runs its tests in the
    caller's session, as here."""
    t0 = time.monotonic()
    with open(log, "w") if log else contextlib.nullcontext() as out:
        proc = subprocess.Popen(
            cmd,
            cwd=cwd,
            env=env,
            stdout=out if log else subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            process_group=0,
        )
        try:
            text, _ = proc.communicate(timeout=timeout)
            rc = proc.returncode
        except subprocess.TimeoutExpired:
            rc = None
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            text, _ = proc.communicate()
    if log:
        text = log.read_text(errors="replace")
    text = text or ""
    if rc is None:
        text += f"\n[realprog: killed after {timeout:.0f} s]\n"
        if log:
            log.write_text(text)
    return rc, text, time.monotonic() - t0


@dataclass(frozen=True)
class SourceFix:
    """A bug of the program's own, fixed in its source before the original is built (so in
    both trees): one exact text that must occur once in `path`, and why.  For bugs that make
    the program's own suite fail at random whatever the locks, shown on the original build;
    never for anything the rewrite or the runtime does."""

    path: str
    old: str
    new: str
    why: str


def apply_fixes(recipe: Recipe, tree: Path) -> list[dict]:
    """Apply the recipe's source fixes to tree; a fix whose text is not there once (another
    version of the package) stops the build with the file and the reason."""
    done = []
    for fix in recipe.source_fixes:
        f = tree / fix.path
        text = f.read_text(errors="surrogateescape") if f.exists() else ""
        n = text.count(fix.old)
        if n != 1:
            raise Failed(
                f"{f}: the source fix ({fix.why}) expects its text once, found {n}: "
                "the package changed; review the fix"
            )
        f.write_text(text.replace(fix.old, fix.new), errors="surrogateescape")
        done.append({"path": fix.path, "why": fix.why})
        say(f"source fix: {fix.path}: {fix.why}")
    return done


@dataclass(frozen=True)
class Recipe:
    """How one program builds and tests itself.  Commands are shell lines run at the tree's
    root; `$LT_CFLAGS` and `$LT_LIBS` hold `locktune flags --cflags` / `--libs` for the
    rewritten tree and are empty for the original, and `$JOBS` the machine's CPU count.
    `build` runs under `bear` for the original; `clean` removes the original's build products
    from the rewritten copy (a failure there is ignored).

    A recipe with a `harness` runs its tests in Python instead of the `test` line (which then
    only says what the harness does): harness(tree, env, log) returns the test record, with
    `exit`, `status` and the cases it ran (`passing_cases`, `failing_cases`, and `details`
    of the failing ones), judged case by case like TAP.  A recipe with a `profile` has a
    workload: profile(work) runs `locktune profile` of the original under it and returns
    W/profile.json, which `all` runs before the rewrite and hands to it (`--profile`)."""

    name: str
    package: str  # the Debian source package
    marker: str  # a file at the root of the unpacked tree
    configure: str
    build: str
    test: str
    clean: str
    covers: tuple[str, ...]
    test_timeout: float = 600
    # The tests print TAP (`ok N - name`, `not ok N - name`): judged case by case against the
    # original's run, which may have cases that cannot pass here (no network, root).
    tap: bool = False
    needs_network: tuple[str, ...] = ()  # TAP cases not judged (listed in the record)
    env: dict[str, str] = field(default_factory=dict)  # for every step, both trees
    harness: Callable[[Path, dict, Path], dict] | None = None
    profile: Callable[[Path], Path] | None = None
    source_fixes: tuple[SourceFix, ...] = ()

    @property
    def by_case(self) -> bool:
        """Its test runs are judged case by case against the original's run."""
        return self.tap or self.harness is not None


RECIPES: dict[str, Recipe] = {
    r.name: r
    for r in [
        Recipe(
            name="xz-utils",
            package="xz-utils",
            marker="src/liblzma/common/stream_encoder_mt.c",
            # In-tree autotools build: src/liblzma/* reach the generated config.h by -I../..
            # The link flags go in LDFLAGS: configure writes LIBS into liblzma.pc with a sed
            # whose separator is a comma, which `-Wl,-rpath,DIR` contains.
            configure="./configure --disable-nls --disable-doc --disable-static "
            'CPPFLAGS="$LT_CFLAGS" LDFLAGS="$LT_LIBS"',
            build="make -j$JOBS",
            test="make -j$JOBS check",
            clean="make distclean",
            covers=(
                "autotools, sources in several folders, generated config.h reached by a "
                "relative -I",
                "locking through the project's own wrappers (mythread_mutex_lock, mythread_sync)",
            ),
        ),
        Recipe(
            name="libuv1",
            package="libuv1",
            marker="src/unix/thread.c",
            configure="cmake -S . -B _build -DLIBUV_BUILD_TESTS=ON "
            "-DCMAKE_BUILD_TYPE=RelWithDebInfo "
            '-DCMAKE_C_FLAGS="$LT_CFLAGS" -DCMAKE_C_STANDARD_LIBRARIES="$LT_LIBS"',
            build="cmake --build _build -j$JOBS",
            # Its whole suite, each test in a child process (as Debian's build runs it).
            # It refuses to run as root: then as nobody, in a tree nobody owns.
            # From the tree's root (test/fixtures), as ctest runs it.
            test="if [ $(id -u) = 0 ]; then chown -R nobody:nogroup . && "
            "exec setpriv --reuid=nobody --regid=nogroup --clear-groups env HOME=/tmp "
            "_build/uv_run_tests_a; else exec _build/uv_run_tests_a; fi",
            tap=True,
            # These connect to outside addresses (1.2.3.4, 8.8.8.8): their outcome depends on
            # the network, which the test machines do not have; not judged.
            needs_network=("tcp_close_while_connecting", "tcp_connect_timeout"),
            clean="rm -rf _build",
            covers=("CMake", "locking through the project's own wrappers (uv_mutex_lock)"),
            env={"UV_TEST_TIMEOUT_MULTIPLIER": "2"},
        ),
        Recipe(
            name="zstd",
            package="libzstd",
            marker="lib/common/threading.h",
            configure="true",
            # The multi-threaded CLI (its Makefile compiles the library's sources into it) and
            # what its tests run: datagen, the thread-pool test.  Flags through the
            # environment (its Makefiles append to CPPFLAGS and LDFLAGS).  Its links put
            # LDFLAGS before the objects, and this gcc links --as-needed: --no-as-needed.
            # Not `lib-mt`: libzstd.a and libzstd.so compile the same sources twice more and
            # none of the tests below runs them.
            build='CPPFLAGS="$LT_CFLAGS" LDFLAGS="-Wl,--no-as-needed $LT_LIBS" make -j$JOBS '
            'zstd-release && CPPFLAGS="$LT_CFLAGS" LDFLAGS="-Wl,--no-as-needed $LT_LIBS" '
            "make -C tests -j$JOBS datagen poolTests",
            # Its thread-pool test (`make -C tests test-pool`) and its CLI test suite
            # (tests/cli-tests, 37 scripts; the command of its `make test-cli-tests`, on the
            # zstd built above).  That CLI compresses through the multi-threaded engine by
            # default (one worker thread: ZSTDMT's pool, mutexes and condition variables),
            # and compression/multi-threaded.sh and adapt.sh round-trip with -T0, -T2,
            # --rsyncable, --adapt.  Not its `make check` (tests/playTests.sh): it first
            # builds a debug CLI, then takes about 3.5 minutes a run on 2 vCPUs: about 25
            # minutes for the seven runs (original and six algorithms), more than CI has for it.
            test='export CPPFLAGS="$LT_CFLAGS" LDFLAGS="-Wl,--no-as-needed $LT_LIBS"; '
            "make -C tests test-pool && cd tests && "
            "./cli-tests/run.py --zstd=../programs/zstd --datagen=./datagen",
            clean="make clean",
            test_timeout=900,  # 12 to 54 s a run on 2 vCPUs at load 10 (docs/e2e.md)
            covers=(
                "plain Makefiles, sources in several folders",
                "locking through the project's own wrapper macros (ZSTD_pthread_mutex_lock)",
            ),
        ),
        Recipe(
            name="sqlite3",
            package="sqlite3",
            marker="tool/mksqlite3c.tcl",
            # The amalgamation build (sqlite3.c, about 250,000 lines), as Debian ships it.
            configure="./configure --enable-threadsafe --disable-static "
            "--with-tcl=/usr/lib/tcl8.6 "
            'CPPFLAGS="$LT_CFLAGS" LIBS="$LT_LIBS"',
            # Only what its tests run: `testfixture` compiles the amalgamation with its test
            # harness (libsqlite3.la and the shell would compile its 250,000 lines once more,
            # and the shell, for nothing a test here runs).
            build="make -j$JOBS sqlite3.c && make -j$JOBS testfixture",
            # Its threaded and mutex tests and a few core ones, by its own tcl harness.  Not
            # thread003: it runs three stress loops of 30 s each whatever the machine (90 s
            # of a 2-minute run, 9 minutes over six algorithms); the others do a fixed
            # amount of work from several threads on shared connections and caches.
            test="for t in mutex1 mutex2 thread001 thread002 thread004 thread005 "
            "thread1 thread2 select1 insert trans; do "
            "./testfixture test/$t.test || exit 1; done",
            clean="make distclean",
            covers=(
                "a translation unit over 100,000 lines (the amalgamation sqlite3.c)",
                "locking through the project's own mutex layer (sqlite3_mutex_enter)",
                "autotools",
            ),
        ),
        Recipe(
            name="libmicrohttpd",
            package="libmicrohttpd",
            marker="src/microhttpd/mhd_locks.h",
            # Autotools, sources in several folders (src/microhttpd, src/testcurl, ...); no
            # TLS (GnuTLS is not installed here) and no examples (not tests).
            configure="./configure --disable-doc --disable-https --disable-examples "
            'CPPFLAGS="$LT_CFLAGS" LIBS="$LT_LIBS"',
            build="make -j$JOBS",
            # Its own suite: the daemon's unit and socket tests (threads per connection,
            # thread pools, suspend/resume, HTTP upgrade), 34 here; the libcurl-based ones
            # are skipped by its configure where libcurl's headers are missing.
            test="make -j$JOBS check",
            clean="make distclean",
            covers=(
                "autotools",
                "checked lock macros: a success flag negated back, `if (!MHD_mutex_lock_(m)) "
                "MHD_PANIC(...)` in a do-while",
                "each lock and unlock call inside an #if of its own",
                "user callbacks called inside critical sections (their thread identity)",
            ),
        ),
    ]
}

# Recipes in scripts of their own (each defines RECIPE): they carry Python, and more steps of
# their own (memcached: a test harness, a load to profile and benchmark it under).
RECIPE_SCRIPTS = ("memcached.py",)


def load_script(name: str):
    """One of scripts/, loaded as a module (it finds this module as `realprog`)."""
    key = f"realprog_{Path(name).stem}"
    if key not in sys.modules:
        spec = importlib.util.spec_from_file_location(key, ROOT / "scripts" / name)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[key] = mod  # its dataclasses look their module up
        spec.loader.exec_module(mod)
    return sys.modules[key]


def every_recipe() -> dict[str, Recipe]:
    """RECIPES and those of RECIPE_SCRIPTS."""
    return {**RECIPES, **{r.name: r for r in (load_script(f).RECIPE for f in RECIPE_SCRIPTS)}}


def say(msg: str) -> None:
    print(f"realprog: {msg}", file=sys.stderr, flush=True)


def shell(cmd: str, cwd: Path, env: dict, log: Path, timeout: float = 3600) -> float:
    """Run one recipe line (printed first); raise Failed with the tail of its output."""
    say(f"$ (cd {cwd} && {cmd})")
    rc, out, wall = run_bounded(["bash", "-c", cmd], cwd, env, timeout, log)
    if rc != 0:
        tail = "\n".join(out.strip().splitlines()[-25:])
        why = f"ran longer than {timeout:.0f} s" if rc is None else f"exited {rc}"
        raise Failed(f"`{cmd}` in {cwd} {why} (log: {log})\n{tail}")
    return wall


def step_env(recipe: Recipe, rewritten: bool, algo: str | None = None) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOCKTUNE_")}
    env.pop("LD_PRELOAD", None)
    env.update(recipe.env, JOBS=JOBS, LT_CFLAGS="", LT_LIBS="")
    if rewritten:
        lt = locktune()
        flags = subprocess.run([lt, "flags", "--cflags"], capture_output=True, text=True)
        libs = subprocess.run([lt, "flags", "--libs"], capture_output=True, text=True)
        env["LT_CFLAGS"], env["LT_LIBS"] = flags.stdout.strip(), libs.stdout.strip()
    if algo:
        env["LOCKTUNE_ALGO"] = f"default={algo}"
    return env


def default_work(name: str) -> Path:
    return CACHE / name / "work"


def _trees(src: Path, marker: str) -> list[Path]:
    """The unpacked trees under src (each holds marker)."""
    if not src.exists():
        return []
    return sorted(src / p.relative_to(src).parts[0] for p in src.glob(f"*/{marker}"))


def fetch(recipe: Recipe) -> Path:
    """The Debian source tree (patches applied), fetched once."""
    src = CACHE / recipe.name / "source"
    trees = _trees(src, recipe.marker)
    if trees:
        return trees[-1]
    src.mkdir(parents=True, exist_ok=True)
    say(f"$ (cd {src} && apt-get source {recipe.package})")
    res = subprocess.run(
        ["apt-get", "source", recipe.package], cwd=src, capture_output=True, text=True
    )
    trees = _trees(src, recipe.marker)
    if res.returncode != 0 or not trees:
        why = " ".join((res.stderr or res.stdout).split())[-300:]
        raise Failed(
            f"apt-get source {recipe.package} failed ({why}); enable deb-src entries with "
            "`scripts/bootstrap --deb-src`"
        )
    return trees[-1]


def build_original(recipe: Recipe, work: Path) -> dict:
    tree = work / "original"
    work.mkdir(parents=True, exist_ok=True)
    source = fetch(recipe)
    say(f"copying {source} -> {tree}")
    copy_tree(source, tree)
    fixes = apply_fixes(recipe, tree)
    env = step_env(recipe, rewritten=False)
    t = shell(recipe.configure, tree, env, work / "original-configure.log")
    t += shell(
        f"bear -- bash -c {shlex.quote(recipe.build)}", tree, env, work / "original-build.log"
    )
    cc = tree / "compile_commands.json"
    if not cc.exists() or not json.loads(cc.read_text()):
        raise Failed(f"{tree}: bear wrote no compile commands")
    rec = {"wall_s": round(t, 1), "compile_commands": len(json.loads(cc.read_text()))}
    if fixes:
        rec["source_fixes"] = fixes
    (work / "build-original.json").write_text(json.dumps(rec) + "\n")
    return rec


def rewrite(
    recipe: Recipe, work: Path, profile: Path | None = None, out: Path | None = None
) -> dict:
    """locktune rewrite with the compile commands and nothing else (and the profile, when
    one is given: its figures and recommendations land in locktune_config.h); the report is
    kept (W/rewrite.json, or OUT.report.json beside another OUT) whatever the exit status,
    and summarised."""
    tree = work / "original"
    report = work / "rewrite.json" if out is None else out.with_name(out.name + ".report.json")
    out = out or work / "rewritten"
    report.unlink(missing_ok=True)
    if out.exists() and not (out / "locktune_config.h").exists():
        shutil.rmtree(out)
    cmd = [locktune(), "rewrite", "--compile-commands", str(tree / "compile_commands.json")]
    cmd += ["--out", str(out), "--report", str(report)]
    cmd += ["--profile", str(profile)] if profile else []
    cmd.append(str(tree))
    say("$ " + shlex.join(cmd))
    rc, output, wall = run_bounded(cmd, ROOT, None, 3600, work / "rewrite.log")
    print(output, end="")
    rec: dict = {"exit": rc, "wall_s": round(wall, 1)}
    if report.exists():
        sys.path.insert(0, str(ROOT))
        from locktune.rewrite import report as rewrite_report

        rep = rewrite_report.read(report)
        s = rep.get("summary", {})
        rec["summary"] = {
            k: s.get(k)
            for k in (
                "files",
                "files_rewritten",
                "files_failed",
                "sections",
                "extracted",
                "kept",
                "kept_reasons",
                "sites",
                "fragments",
                "token_fallbacks",
                "elapsed_s",
                "phases_s",
            )
            if k in s
        }
        rec["lock_wrappers"] = sorted(rep.get("lock_wrappers") or {})
        rec["tools"] = rep.get("tools")
        rec["failed_files"] = [
            {"file": f["file"], "error": f.get("error")}
            for f in rep.get("files", [])
            if f.get("status") == "failed"
        ]
        rec["diagnostics"] = rep.get("diagnostics", [])[:50]
    else:
        rec["summary"] = None
    for line in summary_lines(recipe.name, rec):
        say(line)
    return rec


def summary_lines(name: str, rec: dict) -> list[str]:
    s = rec.get("summary")
    lines = [f"{name}: rewrite exited {rec['exit']} after {rec['wall_s']} s"]
    if not s:
        return lines + [f"{name}: no report written"]
    share = f" ({100 * s['extracted'] / s['sections']:.0f}%)" if s.get("sections") else ""
    lines.append(
        f"{name}: {s.get('files')} files, {s.get('files_rewritten')} rewritten, "
        f"{s.get('files_failed')} failed; sections {s.get('sections')} found, "
        f"{s.get('extracted')} extracted{share}, {s.get('kept')} kept; sites {s.get('sites')}"
    )
    for reason, n in sorted((s.get("kept_reasons") or {}).items(), key=lambda kv: -kv[1]):
        lines.append(f"{name}:   kept {n:4}  {reason}")
    if rec.get("lock_wrappers"):
        lines.append(f"{name}: lock wrappers found: {', '.join(rec['lock_wrappers'])}")
    for f in rec.get("failed_files", [])[:20]:
        lines.append(f"{name}:   failed {f['file']}: {f['error']}")
    return lines


def build_rewritten(recipe: Recipe, work: Path) -> dict:
    tree = work / "rewritten"
    if not (tree / "locktune_config.h").exists():
        raise Failed(f"{tree}: no rewritten tree (the rewrite wrote nothing)")
    env = step_env(recipe, rewritten=True)
    say(f"$ (cd {tree} && {recipe.clean})  # the original's build products")
    run_bounded(["bash", "-c", recipe.clean], tree, env, 600, work / "rewritten-clean.log")
    (tree / "compile_commands.json").unlink(missing_ok=True)
    t = shell(recipe.configure, tree, env, work / "rewritten-configure.log")
    t += shell(recipe.build, tree, env, work / "rewritten-build.log")
    return {"wall_s": round(t, 1)}


def judge_cases(recipe: Recipe, rec: dict, baseline: dict | None) -> dict:
    """A run's status from its cases.  The baseline (no baseline given): a TAP run is ok when
    at least 95% of its cases pass (the others need what this machine lacks), a harness's run
    is what the harness says.  Another run is ok when every case that passes on the baseline
    passes.  The cases of `needs_network` are not judged."""
    skip = set(recipe.needs_network)
    failing = [c for c in rec["failing_cases"] if c not in skip]
    rec["not_judged"] = sorted(skip & set(rec["failing_cases"] + rec["passing_cases"]))
    if rec["status"] == "timed out" or not rec["cases"]:
        return rec
    details = rec.get("details") or {}
    if baseline is None:
        if recipe.tap:
            ok = len(rec["passing_cases"]) >= 0.95 * rec["cases"]
            rec["status"] = "ok" if ok else "cases failed"
        rec["tail"] = [f"not ok: {c} {details.get(c, '')}".rstrip() for c in failing]
        return rec
    lost = sorted(set(baseline["passing_cases"]) - set(rec["passing_cases"]) - skip)
    rec["regressions"] = lost
    rec["status"] = "ok" if not lost else "regressions"
    rec["tail"] = [
        f"passes on the original, not here: {c} {details.get(c, '')}".rstrip() for c in lost
    ]
    return rec


def run_tests(
    recipe: Recipe, work: Path, tree: str, algo: str | None, baseline: dict | None = None
) -> dict:
    """Its own tests in W/TREE (W/test-LABEL.json and .log, LABEL the algorithm or the tree);
    status ok or failed, with the output's tail.  Recipes judged by case (TAP, a harness):
    the original's run is the baseline, and a rewritten tree is ok when every case that
    passed on the baseline passes (judge_cases)."""
    path = work / tree
    if os.geteuid() == 0 and "--reuid=nobody" in recipe.test:
        # The suite runs as nobody and runs its own executable by path: a folder above the
        # tree that nobody cannot enter fails dozens of cases (spawn, fork, cwd) for nothing.
        for d in path.resolve().parents:
            if not d.stat().st_mode & 0o001:
                raise Failed(
                    f"{recipe.name}: its tests run as nobody, who cannot enter {d} "
                    f"(mode {d.stat().st_mode & 0o777:o}): put the work folder elsewhere (-w)"
                )
    if recipe.by_case and baseline is None and tree == "rewritten":
        prev = work / "test-original.json"
        baseline = json.loads(prev.read_text()) if prev.exists() else None
    env = step_env(recipe, rewritten=tree == "rewritten", algo=algo)
    label = algo or tree
    algo_env = f"LOCKTUNE_ALGO={env['LOCKTUNE_ALGO']} " if algo else ""
    log = work / f"test-{label}.log"
    if recipe.harness:
        say(f"$ (cd {path} && {algo_env}{recipe.test})  # {recipe.name}'s harness")
        rec = recipe.harness(path, env, log)
    else:
        say(f"$ (cd {path} && {algo_env}bash -c {shlex.quote(recipe.test)})")
        rc, out, wall = run_bounded(
            ["bash", "-c", recipe.test], path, env, recipe.test_timeout, log
        )
        rec = {"wall_s": round(wall, 1), "exit": rc}
        if rc == 0:
            rec["status"] = "ok"
        else:
            rec["status"] = "timed out" if rc is None else "failed"
            rec["tail"] = out.strip().splitlines()[-15:]
        if recipe.tap:
            pat = r"^(not )?ok \d+ - (.+)$"
            cases = {m[2].strip(): not m[1] for m in re.finditer(pat, out, re.M)}
            rec["cases"] = len(cases)
            rec["failing_cases"] = sorted(c for c, ok in cases.items() if not ok)
            rec["passing_cases"] = sorted(c for c, ok in cases.items() if ok)
    if recipe.by_case:
        judge_cases(recipe, rec, baseline)
    (work / f"test-{label}.json").write_text(json.dumps(rec, indent=1) + "\n")
    say(f"{recipe.name}: tests ({label}): {rec['status']} in {rec['wall_s']} s")
    for line in rec.get("tail", [])[:20] if rec["status"] != "ok" else []:
        say(f"  {line}")
    return rec


def run_all(recipe: Recipe, work: Path, algorithms: list[str], rebuild: bool = False) -> dict:
    """Every step; a failed step is recorded (with its message) and stops what needs it; an
    algorithm this liblocktune lacks is recorded as unavailable, not run.  W/result.json is
    the record the table is made from."""
    result: dict = {"program": recipe.name, "package": recipe.package, "covers": recipe.covers}
    result["source"] = None
    steps = result["steps"] = {}

    def timed(name, fn, *args):
        t0 = time.monotonic()
        try:
            rec = fn(*args)
            rec = rec if isinstance(rec, dict) else {}
            rec.setdefault("status", "ok")
        except Failed as e:
            rec = {"status": "failed", "error": str(e)}
            say(f"{recipe.name}: {name} failed: {e}")
        rec.setdefault("wall_s", round(time.monotonic() - t0, 1))
        steps[name] = rec
        (work / "result.json").write_text(json.dumps(result, indent=1) + "\n")
        return rec["status"] == "ok"

    work.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    if not timed("fetch", lambda: {"tree": str(fetch(recipe))}):
        return result
    result["source"] = Path(steps["fetch"]["tree"]).name
    if (work / "original" / "compile_commands.json").exists() and not rebuild:
        say(f"{recipe.name}: reusing the original built in {work / 'original'} (--rebuild)")
        prev = work / "build-original.json"
        steps["build-original"] = {
            **(json.loads(prev.read_text()) if prev.exists() else {}),
            "status": "ok",
            "reused": True,
        }
    elif not timed("build-original", build_original, recipe, work):
        return result
    timed("test-original", run_tests, recipe, work, "original", None)
    profile = None
    if recipe.profile and timed("profile", lambda: {"profile": str(recipe.profile(work))}):
        profile = Path(steps["profile"]["profile"])
    rec = rewrite(recipe, work, profile)
    rec["status"] = "ok" if rec["exit"] == 0 else "failed"
    steps["rewrite"] = rec
    if timed("build-rewritten", build_rewritten, recipe, work):
        sys.path.insert(0, str(ROOT))
        from locktune.bench import lockbench

        unavailable = lockbench.available(algorithms, len(os.sched_getaffinity(0))).unavailable
        for algo in algorithms:
            if algo in unavailable:
                steps[f"test-{algo}"] = {"status": "unavailable", "why": unavailable[algo]}
                say(f"{recipe.name}: {algo} unavailable ({unavailable[algo]})")
                continue
            base = steps.get("test-original") if recipe.by_case else None
            timed(f"test-{algo}", run_tests, recipe, work, "rewritten", algo, base)
    result["wall_s"] = round(time.monotonic() - t0, 1)
    (work / "result.json").write_text(json.dumps(result, indent=1) + "\n")
    return result


def bench_rewrite(recipe: Recipe, work: Path, repeats: int, out_dir: Path) -> Path:
    """Rewrite time of the whole tree (target: under 60 s) and the share of sections
    extracted, repeated; min/median/max with the machine described:
    OUT_DIR/rewrite-PROG.{json,svg}."""
    sys.path.insert(0, str(ROOT))
    from locktune import charts, machine

    if not (work / "original" / "compile_commands.json").exists():
        build_original(recipe, work)
    runs = []
    for i in range(repeats):
        out = work / f"bench-rewritten-{i}"
        rec = rewrite(recipe, work, out=out)
        shutil.rmtree(out, ignore_errors=True)
        if rec["exit"] != 0 or not rec["summary"]:
            raise Failed(f"locktune rewrite exited {rec['exit']} (log: {work / 'rewrite.log'})")
        runs.append(rec)
        say(f"{recipe.name}: rewrite {i + 1}/{repeats}: {rec['wall_s']:.1f} s")
    walls = [r["wall_s"] for r in runs]
    last = runs[-1]["summary"]
    share = 100.0 * last["extracted"] / last["sections"] if last["sections"] else 0.0
    result = {
        "benchmark": f"rewrite-time-{recipe.name}",
        "command": f"scripts/realprog.py bench-rewrite {recipe.name} --repeats {repeats}",
        "machine": machine.describe(),
        "program": fetch(recipe).name,
        "target_s": 60,
        "wall_s": {
            "min": min(walls),
            "median": statistics.median(walls),
            "max": max(walls),
            "runs": walls,
        },
        "phases_s": last.get("phases_s"),
        "files": last["files"],
        "files_rewritten": last["files_rewritten"],
        "sections": last["sections"],
        "extracted": last["extracted"],
        "kept": last["kept"],
        "extracted_percent": round(share, 1),
        "kept_reasons": last["kept_reasons"],
        "sites": last["sites"],
        "extract_mode": (runs[-1].get("tools") or {}).get("extract"),
    }
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"rewrite-{recipe.name}.json"
    path.write_text(json.dumps(result, indent=2) + "\n")
    svg = charts.bar_chart(
        f"locktune rewrite of {result['program']}: wall time ({repeats} runs)",
        ["min", "median", "max"],
        {"rewrite (s)": [min(walls), statistics.median(walls), max(walls)]},
        y_label="seconds",
        reference=60.0,
    )
    (out_dir / f"rewrite-{recipe.name}.svg").write_text(svg)
    say(
        f"wall {min(walls):.1f} / {statistics.median(walls):.1f} / {max(walls):.1f} s "
        f"(min/median/max), {last['extracted']}/{last['sections']} sections extracted "
        f"({share:.0f}%): {path}"
    )
    return path


def rejudge(recipe: Recipe, result: dict) -> dict:
    """A by-case recipe's test records judged again from their cases by today's rule (the cases
    are kept in each record): a record made before a rule changed reads as the rule says."""
    steps = result.get("steps", {})
    base = steps.get("test-original")
    if not recipe.by_case or not base or "passing_cases" not in base:
        return result
    judge_cases(recipe, base, None)
    for name, rec in steps.items():
        if name.startswith("test-") and name != "test-original" and "passing_cases" in rec:
            judge_cases(recipe, rec, base)
    return result


def table(results: dict[str, dict], out_dir: Path) -> Path:
    """bench/results/realprog/: programs.json (each result) and programs.md (the table)."""
    sys.path.insert(0, str(ROOT))
    from locktune import machine

    out_dir.mkdir(parents=True, exist_ok=True)
    doc = {
        "command": "scripts/realprog.py all all && scripts/realprog.py table",
        "machine": machine.describe(),
        "programs": results,
    }
    (out_dir / "programs.json").write_text(json.dumps(doc, indent=1) + "\n")
    head = ["program", "files (rewritten/failed)", "sections", "extracted", "kept", "rewrite s"]
    head += ["build original", "build rewritten", "tests original"] + ALGORITHMS
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    reasons = []
    for name, r in results.items():
        st = r.get("steps", {})
        rw = st.get("rewrite") or {}
        s = rw.get("summary") or {}

        def cell(step, st=st):
            x = st.get(step)
            if x is None:
                return "-"
            text = f"{x['status']} ({x.get('wall_s', 0):.0f} s)"
            if x.get("earlier"):
                e = x["earlier"]
                text += f"; first run: {e['status']} ({e.get('wall_s', 0):.0f} s)"
            return text

        share = f" ({100 * s['extracted'] / s['sections']:.0f}%)" if s.get("sections") else ""
        rows.append(
            "| "
            + " | ".join(
                [
                    f"{name} ({r.get('source') or '?'})",
                    f"{s.get('files', '-')} ({s.get('files_rewritten', '-')}/"
                    f"{s.get('files_failed', '-')})",
                    str(s.get("sections", "-")),
                    f"{s.get('extracted', '-')}{share}",
                    str(s.get("kept", "-")),
                    f"{rw.get('wall_s', '-')} (exit {rw.get('exit', '-')})",
                    cell("build-original"),
                    cell("build-rewritten"),
                    cell("test-original"),
                ]
                + [cell(f"test-{a}") for a in ALGORITHMS]
            )
            + " |"
        )
        for reason, n in sorted((s.get("kept_reasons") or {}).items(), key=lambda kv: -kv[1]):
            reasons.append(f"| {name} | {n} | {reason} |")
    md = ["# Real programs: rewrite and own tests per algorithm", ""]
    md += [
        f"Made by `{doc['command']}` (docs/e2e.md) on {doc['machine'].get('usable_cpus')} "
        "CPUs; each cell: status (seconds).  What fails and why: [findings.md](findings.md).",
        "",
    ] + rows
    if reasons:
        md += ["", "Kept sections by reason:", "", "| program | kept | reason |", "|---|---|---|"]
        md += reasons
    (out_dir / "programs.md").write_text("\n".join(md) + "\n")
    return out_dir


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    steps = ["list", "fetch", "build-original", "profile", "rewrite", "build-rewritten", "test"]
    steps += ["all", "bench-rewrite"]
    ap.add_argument("step", choices=[*steps, "table"])
    ap.add_argument("program", nargs="?", help="a recipe's name (`all`: every recipe)")
    ap.add_argument("-w", "--work", type=Path, help="work directory (build/realprog/PROG/work)")
    ap.add_argument("--tree", choices=["original", "rewritten"], default="rewritten")
    ap.add_argument("--algo", help="test: LOCKTUNE_ALGO=default=ALGO")
    ap.add_argument("--algos", default=",".join(ALGORITHMS), help="all: the algorithms")
    ap.add_argument("--rebuild", action="store_true", help="all: build the original again")
    ap.add_argument("--repeats", type=int, default=5, help="bench-rewrite: runs (5)")
    ap.add_argument(
        "--results",
        type=Path,
        help="table: output folder (bench/results/realprog); bench-rewrite: bench/results",
    )
    args = ap.parse_args()
    recipes = every_recipe()
    if args.step == "list":
        for r in recipes.values():
            print(f"{r.name:10} {r.package:10} " + "; ".join(r.covers))
        return 0
    if args.step == "table":
        found = {}
        for name, recipe in recipes.items():
            p = default_work(name) / "result.json"
            if p.exists():
                found[name] = rejudge(recipe, json.loads(p.read_text()))
        print(table(found, args.results or RESULTS))
        return 0
    if args.program not in [*recipes, "all"] or (args.program == "all" and args.step != "all"):
        ap.error(f"program: one of {', '.join(recipes)} (or `all` with the step all)")
    names = list(recipes) if args.program == "all" else [args.program]
    status = 0
    for name in names:
        recipe = recipes[name]
        work = (args.work or default_work(name)).resolve()
        try:
            if args.step == "fetch":
                print(fetch(recipe))
            elif args.step == "build-original":
                print(build_original(recipe, work))
            elif args.step == "profile":
                if not recipe.profile:
                    raise Failed(f"{name}: its recipe has no workload to profile it under")
                print(recipe.profile(work))
            elif args.step == "rewrite":
                profile = work / "profile.json" if recipe.profile else None
                status |= (
                    rewrite(recipe, work, profile if profile and profile.exists() else None)["exit"]
                    != 0
                )
            elif args.step == "build-rewritten":
                print(build_rewritten(recipe, work))
            elif args.step == "bench-rewrite":
                bench_rewrite(
                    recipe, work, args.repeats, args.results or ROOT / "bench" / "results"
                )
            elif args.step == "test":
                rec = run_tests(recipe, work, args.tree, args.algo)
                print("\n".join(rec.get("tail", [])))
                record = work / "result.json"  # a rerun replaces that run in the record
                if record.exists():
                    doc = json.loads(record.read_text())
                    key = f"test-{args.algo or args.tree}"
                    earlier = doc["steps"].get(key)
                    doc["steps"][key] = {**rec, "rerun": True, "earlier": earlier}
                    record.write_text(json.dumps(doc, indent=1) + "\n")
                status |= rec["status"] != "ok"
            else:
                algos = [a.strip() for a in args.algos.split(",") if a.strip()]
                res = run_all(recipe, work, algos, args.rebuild)
                bad = [k for k, v in res["steps"].items() if v["status"] not in GOOD]
                say(f"{name}: " + (f"failed steps: {', '.join(bad)}" if bad else "all green"))
                status |= bool(bad)
        except Failed as e:
            print(f"realprog: error: {e}", file=sys.stderr)
            status = 1
    return int(status)


if __name__ == "__main__":
    sys.exit(main())
