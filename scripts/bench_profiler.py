#!/usr/bin/env python3
"""What the profiler costs the program it watches: the same workloads with and without
liblocktune-prof.so, side by side.

    .venv/bin/python scripts/bench_profiler.py --repeats 9 --out bench/results/profiler-overhead

Cases (each skipped, with the reason, when its program is not available):
  pairs          uncontended pthread_mutex_lock/unlock pair, ns (profiler/bench/pairs.c);
                 target: under 25 ns added
  lockbench-2    locktune-lockbench --lock pthread, 2 threads: throughput
  lockbench-16   the same with 16 threads (oversubscribed on a small machine)
  kvcache        testsuite/apps/kvcache -t 4 (modelled on memcached 1.4): throughput
  xz             xz -T2 compressing 48 MiB of generated text (liblzma's threads synchronise
                 with pthread mutexes and condition variables): wall time
  (lockbench and programs: target under 10% slower)

Every case runs as plain / profiled (the default sampling, 1 in 16 uncontended sections
timed) / exact (--sample 1, every section timed), and with `--baseline-lib SO` baseline (the
default sampling with that other build of the library: before / after a change in one run),
interleaved in a shuffled order within each round, `--repeats` rounds.  Overheads are taken within a round (profiled against the plain
run next to it), and reported as min / median / max over the rounds, with the machine
described.  Writes OUT.json and OUT.svg and prints a table.  A run whose output check fails
(lockbench's check, kvcache's self-check, xz's exit status) fails the benchmark.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from locktune import charts, machine, native, ui  # noqa: E402
from locktune.errors import LocktuneError  # noqa: E402
from locktune.profiler import run as runner  # noqa: E402

MODES = ["plain", "profiled", "exact"]
SAMPLE = {"profiled": 16, "exact": 1, "baseline": 16}
BASELINE_LIB: Path | None = None  # --baseline-lib: mode "baseline" preloads it instead


def fail(msg: str) -> None:
    sys.exit(f"bench_profiler: error: {msg}")


def execute(argv: list[str], mode: str, timeout: float, stdin=None) -> tuple[str, float]:
    """Run argv plain or under the profiler; (stdout, wall seconds).  With stdin (a file),
    the output is discarded instead (it may be binary)."""
    start = time.monotonic()
    if mode == "plain":
        res = subprocess.run(
            argv,
            stdin=stdin,
            stdout=subprocess.DEVNULL if stdin else subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            timeout=timeout,
        )
        rc, out, err = res.returncode, res.stdout or "", res.stderr
    else:
        r = runner.run(
            argv,
            capture=stdin is None,
            timeout=timeout,
            sample=SAMPLE[mode],
            stdin=stdin,
            stdout=subprocess.DEVNULL,
            library=BASELINE_LIB if mode == "baseline" else None,
        )
        shutil.rmtree(r.raw_dir, ignore_errors=True)
        rc, out, err = r.returncode, r.stdout or "", ""
    wall = time.monotonic() - start
    if rc != 0:
        fail(f"{' '.join(argv)} ({mode}) exited with {rc}: {err.strip()[-300:]}")
    return out, wall


class Case:
    name: str
    unit: str  # what one run yields
    higher_is_better: bool

    def available(self) -> str | None:  # None, or why not
        return None

    def measure(self, mode: str) -> float:
        raise NotImplementedError


class Pairs(Case):
    name, unit, higher_is_better = "pairs", "ns per lock/unlock pair", False

    def __init__(self, work: Path, quick: bool):
        self.exe = work / "pairs"
        res = subprocess.run(
            ["cc", "-O2", "-pthread", "-o", str(self.exe), str(ROOT / "profiler/bench/pairs.c")],
            capture_output=True,
            text=True,
        )
        if res.returncode != 0:
            fail(f"building pairs.c: {res.stderr}")
        self.args = ["1000000", "3"] if quick else ["5000000", "5"]

    def measure(self, mode: str) -> float:
        out, _ = execute([str(self.exe), *self.args], mode, 300)
        return float(re.search(r"ns_per_pair ([0-9.]+)", out).group(1))


class Lockbench(Case):
    unit, higher_is_better = "operations per second", True

    def __init__(self, threads: int, quick: bool):
        self.name = f"lockbench-{threads}"
        self.threads = threads
        self.duration = "0.3" if quick else "2"
        try:
            self.exe = native.bin_path("locktune-lockbench")
        except LocktuneError as e:
            self.exe, self.why = None, str(e)

    def available(self) -> str | None:
        return None if self.exe else f"locktune-lockbench is not installed ({self.why})"

    def measure(self, mode: str) -> float:
        argv = [str(self.exe), "--threads", str(self.threads), "--duration", self.duration]
        argv += ["--lock", "pthread", "--lines", "1", "--delay", "100", "--json", "--no-probe"]
        doc = json.loads(execute(argv, mode, 300)[0])
        if not (doc.get("check") or {}).get("ok", True):
            fail(f"{self.name} ({mode}): the benchmark's check failed")
        return float(doc["run"]["throughput_ops_s"])


class Kvcache(Case):
    name, unit, higher_is_better = "kvcache", "requests per second", True

    def __init__(self, work: Path, quick: bool):
        src = ROOT / "testsuite" / "apps" / "kvcache"
        self.exe = None
        if src.is_dir():
            shutil.copytree(src, work / "kvcache")
            res = subprocess.run(
                ["make", "-C", str(work / "kvcache")], capture_output=True, text=True
            )
            if res.returncode != 0:
                fail(f"building kvcache: {res.stderr}")
            self.exe = work / "kvcache" / "kvcache"
        self.args = ["-t", "4", "-n", "300000" if quick else "2000000"]

    def available(self) -> str | None:
        return None if self.exe else "testsuite/apps/kvcache is not in this tree"

    def measure(self, mode: str) -> float:
        out, _ = execute([str(self.exe), *self.args], mode, 300)
        return float(re.search(r"^throughput: ([0-9]+) ops/s$", out, re.M).group(1))


class Xz(Case):
    name, unit, higher_is_better = "xz", "seconds (wall)", False

    def __init__(self, work: Path, quick: bool):
        self.xz = shutil.which("xz")
        self.data = work / "input.txt"
        if self.xz:
            rng = random.Random(1)
            words = [
                "".join(rng.choice("etaoinshrdlu") for _ in range(rng.randint(2, 9)))
                for _ in range(5000)
            ]
            size = (8 if quick else 48) << 20
            with open(self.data, "w") as f:
                written = 0
                while written < size:
                    line = " ".join(rng.choice(words) for _ in range(12)) + "\n"
                    f.write(line)
                    written += len(line)

    def available(self) -> str | None:
        return None if self.xz else "xz is not installed"

    def measure(self, mode: str) -> float:
        with open(self.data, "rb") as f:
            _, wall = execute([self.xz, "-T2", "-6", "-c"], mode, 600, stdin=f)
        return wall


def spread(values: list[float]) -> dict:
    return {
        "min": min(values),
        "median": statistics.median(values),
        "max": max(values),
        "runs": values,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=7, help="rounds (default 7)")
    ap.add_argument("--quick", action="store_true", help="small workloads, for a smoke test")
    ap.add_argument(
        "--cases",
        default="pairs,lockbench-2,lockbench-16,kvcache,xz",
        help="comma-separated subset of the cases",
    )
    ap.add_argument("--out", type=Path, help="write OUT.json and OUT.svg")
    ap.add_argument(
        "--baseline-lib",
        type=Path,
        metavar="SO",
        help="another liblocktune-prof.so (an older build): adds the mode `baseline`, the "
        "default sampling with it, interleaved with the others (before / after in one run)",
    )
    args = ap.parse_args()
    if args.repeats < 1:
        fail("--repeats must be at least 1")
    if args.baseline_lib:
        if not args.baseline_lib.is_file():
            fail(f"--baseline-lib {args.baseline_lib}: no such file")
        global BASELINE_LIB
        BASELINE_LIB = args.baseline_lib.resolve()
        MODES.append("baseline")
    compared = [m for m in MODES if m != "plain"]
    # From a source checkout the libraries come from build/stage (locktune/native.py): one
    # that is not the build's measures the last staged tree, not this one.
    staged = native.lib_dir() / "liblocktune-prof.so"
    built = ROOT / "build" / "cmake" / "profiler" / "liblocktune-prof.so"
    if built.is_file() and staged.is_file() and built.read_bytes() != staged.read_bytes():
        fail(
            f"{staged} is not {built}: stage this build first (`cmake --install "
            "build/cmake --prefix build/stage`, or `pip install .`)"
        )

    work = Path(tempfile.mkdtemp(prefix="bench-profiler-"))
    try:
        known = {
            "pairs": lambda: Pairs(work, args.quick),
            "lockbench-2": lambda: Lockbench(2, args.quick),
            "lockbench-16": lambda: Lockbench(16, args.quick),
            "kvcache": lambda: Kvcache(work, args.quick),
            "xz": lambda: Xz(work, args.quick),
        }
        wanted = [c for c in args.cases.split(",") if c]
        for c in wanted:
            if c not in known:
                fail(f"--cases: unknown case {c!r} (known: {', '.join(known)})")
        cases, skipped = [], {}
        for c in wanted:
            case = known[c]()
            why = case.available()
            if why:
                skipped[c] = why
            else:
                cases.append(case)
        results = {c.name: {m: [] for m in MODES} for c in cases}
        order = [(c, m) for c in cases for m in MODES]
        for rnd in range(args.repeats):
            random.shuffle(order)
            for i, (case, mode) in enumerate(order, 1):
                ui.progress(
                    f"round {rnd + 1}/{args.repeats}: {case.name} {mode} ({i}/{len(order)})"
                )
                results[case.name][mode].append(case.measure(mode))
        ui.progress_done()
    finally:
        shutil.rmtree(work, ignore_errors=True)

    doc_cases = {}
    rows = []
    for case in cases:
        r = results[case.name]
        entry = {"unit": case.unit, **{m: spread(r[m]) for m in MODES}}
        for mode in compared:
            pairs = list(zip(r["plain"], r[mode], strict=True))
            if case.name == "pairs":
                entry[f"{mode}_added_ns"] = spread([p - b for b, p in pairs])
            elif case.higher_is_better:
                entry[f"{mode}_slowdown_percent"] = spread([100 * (1 - p / b) for b, p in pairs])
            else:
                entry[f"{mode}_slowdown_percent"] = spread([100 * (p / b - 1) for b, p in pairs])
        doc_cases[case.name] = entry
        key = "added_ns" if case.name == "pairs" else "slowdown_percent"
        unit = "ns" if case.name == "pairs" else "%"
        for mode in compared:
            s = entry[f"{mode}_{key}"]
            rows.append(
                [
                    case.name,
                    f"{mode} (1/{SAMPLE[mode]})",
                    f"{entry['plain']['median']:.4g}",
                    f"{entry[mode]['median']:.4g}",
                    f"{s['min']:.1f} / {s['median']:.1f} / {s['max']:.1f} {unit}",
                ]
            )
    print(
        ui.table(
            ["case", "mode", "plain (median)", "profiled (median)", "added: min / median / max"],
            rows,
            "llrrr",
        )
    )
    for name, why in skipped.items():
        print(f"skipped {name}: {why}")

    if args.out:
        doc = {
            "schema": "locktune-bench-profiler/1",
            "command": " ".join(["scripts/bench_profiler.py", *sys.argv[1:]]),
            "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "machine": machine.describe(),
            "repeats": args.repeats,
            "quick": args.quick,
            "targets": {"pairs_added_ns": 25, "slowdown_percent": 10},
            "baseline_lib": str(BASELINE_LIB) if BASELINE_LIB else None,
            "cases": doc_cases,
            "skipped": skipped,
        }
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.with_suffix(".json").write_text(json.dumps(doc, indent=1) + "\n")
        slow = [c for c in doc_cases if c != "pairs"]
        svg = charts.bar_chart(
            "Profiler overhead (median of rounds; dashed: the 10% target)",
            ["pair (ns)", *slow],
            {
                mode: [
                    doc_cases["pairs"][f"{mode}_added_ns"]["median"]
                    if "pairs" in doc_cases
                    else None,
                    *[doc_cases[c][f"{mode}_slowdown_percent"]["median"] for c in slow],
                ]
                for mode in compared
            },
            y_label="ns added per pair / % slower",
            reference=10.0,
        )
        args.out.with_suffix(".svg").write_text(svg)
        print(f"wrote {args.out.with_suffix('.json')} and {args.out.with_suffix('.svg')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
