#!/usr/bin/env python3
"""The end-to-end results of issue 7 for the bundled apps: each app profiled, rewritten with
its profile, built, and compared with its original by `locktune bench compare`.

    .venv/bin/python scripts/bench_e2e.py                     every app, the committed settings
    .venv/bin/python scripts/bench_e2e.py --app kvcache --quick

For each app (testsuite/apps/, docs/apps.md), in a work folder:
  1. the original built by its Makefile under bear;
  2. `locktune profile` of one run at --profile-threads (default 4 per CPU: oversubscribed,
     where lock algorithms differ most on a small machine);
  3. `locktune rewrite --profile`: locktune_config.h carries the recommendations;
  4. the rewritten tree built by the same Makefile with `locktune flags`;
  5. `locktune bench compare` at each thread count (default: 1, 4 and 16 per CPU): the
     original, the recommended header, every lock on each algorithm, and the hottest site on
     each algorithm alone, interleaved, shuffled, repeated.

Writes OUT/<app>/ (compare's results.json and charts, with the profile, the report and the
header it compared) and OUT/summary.json + summary.svg: per app and thread count, the ratio
of the recommended configuration and of the best one to the original (median of rounds).
OUT defaults to bench/results/e2e-<N>cpu-<date>.  Check `uptime` first: the command warns
when the machine is busy.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from locktune import charts, machine
from locktune.e2e import apps, pipeline
from locktune.ui import table

ROOT = Path(__file__).resolve().parent.parent
APPS_DIR = ROOT / "testsuite" / "apps"


def say(text: str) -> None:
    print(f"bench_e2e: {text}", file=sys.stderr, flush=True)


def one_app(app: apps.App, work: Path, dest: Path, args, threads: list[int]) -> dict:
    p = pipeline.Pipeline(work)
    say(f"{app.name}: build, profile at {args.profile_threads} threads, rewrite, build")
    original = p.copy_source(APPS_DIR / app.name)
    p.build_original(original)
    p.profile(original, app.argv(args.profile_threads, quick=args.quick))
    p.report(top=10)
    rewritten, _ = p.rewrite(original)
    p.build_rewritten(rewritten)
    options = [
        "--threads",
        ",".join(map(str, threads)),
        "--repeats",
        str(args.repeats),
        "--timeout",
        str(args.timeout),
        "--check",
        app.check,
        "--site",
        "hot",
    ]
    if args.algos:
        options += ["--algos", args.algos]
    say(f"{app.name}: locktune bench compare {' '.join(options)}")
    doc, table_text = p.compare(
        original, rewritten, app.argv("{threads}", quick=args.quick), options
    )
    print(f"\n== {app.name}\n{table_text}", flush=True)
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(work / "compare", dest)
    for name in ("profile.json", "report.txt", "rewrite.json", "commands.sh"):
        shutil.copy2(work / name, dest / name)
    shutil.copy2(rewritten / "locktune_config.h", dest / "locktune_config.h")
    return summarize(app, doc, dest, args)


def summarize(app: apps.App, doc: dict, dest: Path, args) -> dict:
    """An app's summary row from its comparison (results.json)."""
    rows = []
    for point in doc["points"]:
        header = point["variants"].get(point["header"] or "", {})
        rows.append(
            {
                "threads": point["threads"],
                "recommended": header.get("ratio"),
                "recommended_interval": header.get("interval"),
                "best": point["best"],
                # every configuration's 95% interval of its ratio to the original
                "intervals": {
                    n: v.get("interval") for n, v in point["variants"].items() if n != "original"
                },
                "original_throughput": point["variants"]["original"]["throughput"],
            }
        )
    return {
        "app": app.name,
        "op": app.op,
        "hot_lock": app.hot_lock,
        "profile_threads": args.profile_threads,
        "recommended": {
            s["file"] + ":" + str(s["line"]): s["algorithm"]
            for s in doc["sites"]
            if s["algorithm"] != "posix"
        },
        "points": rows,
        "failed_runs": sum(1 for r in doc["runs"] if not r["ok"] and not r.get("timed_out")),
        "results": str(dest.relative_to(dest.parent.parent)),
    }


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--app", action="append", choices=sorted(apps.APPS), help="(repeatable)")
    ap.add_argument("--threads", help="thread counts (default: 1, 4 and 16 per usable CPU)")
    ap.add_argument("--profile-threads", type=int, help="threads of the profiled run (4/CPU)")
    ap.add_argument("--algos", help="bench compare --algos (default: every algorithm)")
    ap.add_argument("--repeats", type=int, default=5, help="rounds (default 5)")
    ap.add_argument("--timeout", type=float, default=60, help="seconds a run may take (60)")
    ap.add_argument("--quick", action="store_true", help="small workloads, 2 rounds, 2 points")
    ap.add_argument("--out", type=Path, help="results folder (default bench/results/e2e-...)")
    ap.add_argument("--work", type=Path, help="keep the work folders here (default: temporary)")
    ap.add_argument(
        "--resume",
        action="store_true",
        help="an app whose results are complete in --out is summarised from them, not rerun "
        "(finishing an interrupted run, possibly with other --algos)",
    )
    args = ap.parse_args()
    cpus = len(os.sched_getaffinity(0))
    if args.threads:
        threads = [int(t) for t in args.threads.split(",")]
    else:
        threads = [cpus, 4 * cpus] if args.quick else [cpus, 4 * cpus, 16 * cpus]
    args.profile_threads = args.profile_threads or 4 * cpus
    if args.quick:
        args.repeats = min(args.repeats, 2)
    desc = machine.describe()
    date = desc["date"][:19].replace(":", "").replace("-", "").replace("T", "-")
    out = (args.out or ROOT / "bench" / "results" / f"e2e-{desc['cpus']}cpu-{date}").resolve()
    names = args.app or list(apps.APPS)
    started = time.monotonic()
    tmp = None
    if args.work is None:
        tmp = tempfile.TemporaryDirectory(prefix="locktune-e2e-")
        work_root = Path(tmp.name)
    else:
        work_root = args.work.resolve()
    summary = []
    try:
        for name in names:
            done = out / name / "results.json"
            if args.resume and done.exists() and (out / name / "locktune_config.h").exists():
                say(f"{name}: already in {out / name}: summarised from its results.json")
                doc = json.loads(done.read_text())
                summary.append(summarize(apps.APPS[name], doc, out / name, args))
                continue
            summary.append(one_app(apps.APPS[name], work_root / name, out / name, args, threads))
    except pipeline.StepFailed as e:
        print(f"bench_e2e: error: {e}", file=sys.stderr)
        return 1
    finally:
        if tmp is not None:
            tmp.cleanup()
    document = {
        "schema": "locktune-bench-e2e/1",
        "command": "scripts/bench_e2e.py " + " ".join(sys.argv[1:]),
        "machine": desc,
        "threads": threads,
        "repeats": args.repeats,
        "quick": args.quick,
        "apps": summary,
        "wall_s": round(time.monotonic() - started, 1),
    }
    out.mkdir(parents=True, exist_ok=True)
    (out / "summary.json").write_text(json.dumps(document, indent=1) + "\n")
    groups = [f"{a['app']} {pt['threads']}t" for a in summary for pt in a["points"]]
    rec = [(pt["recommended"] or {}).get("median") for a in summary for pt in a["points"]]
    best = [(pt["best"] or {}).get("ratio") for a in summary for pt in a["points"]]
    (out / "summary.svg").write_text(
        charts.bar_chart(
            "Rewritten vs original: throughput ratio (median of rounds)",
            groups,
            {"recommended header": rec, "best configuration": best},
            y_label="throughput / original's",
            reference=1.0,
        )
    )
    rows = []
    for a in summary:
        for pt in a["points"]:
            r = pt["recommended"]
            b = pt["best"] or {}
            rows.append(
                [
                    a["app"],
                    pt["threads"],
                    "-" if not r else f"{r['min']:.2f} / {r['median']:.2f} / {r['max']:.2f}",
                    f"{b.get('ratio', 0):.2f} {b.get('variant', '-')}",
                    ", ".join(f"{k}={v}" for k, v in a["recommended"].items()) or "posix",
                ]
            )
    print()
    print(
        table(
            ["app", "threads", "recommended min/med/max", "best (median)", "header"],
            rows,
            "lrrll",
        )
    )
    say(f"wrote {out} ({document['wall_s']:.0f} s)")
    return 1 if any(a["failed_runs"] for a in summary) else 0


if __name__ == "__main__":
    sys.exit(main())
