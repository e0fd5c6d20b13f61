#!/usr/bin/env python3
"""The README's demo: locktune's whole pipeline on a bundled legacy-style program.

    scripts/demo [--app NAME] [--threads N] [--repeats N] [--out DIR] [--quick]

1. what this machine offers (locktune doctor);
2. the original, built by its own Makefile (under bear, which records each file's flags);
3. locktune profile of one run of it;
4. locktune report: the ranked table here, report.html in the output folder;
5. locktune rewrite with the profile: locktune_config.h carries its recommendations;
6. the rewritten tree built by the same Makefile with `locktune flags`;
7. locktune bench compare: both programs on the same workload, interleaved and repeated;
   the ratio of the recommended configuration's throughput to the original's.

Every artefact lands in one folder (default out/demo-TIMESTAMP), printed at the start and the
end; OUT/commands.sh lists every command that made it.  The default app runs oversubscribed
(4 threads per CPU): the case where lock algorithms differ most on a small machine.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

from locktune.bench import compare_report
from locktune.e2e import apps, pipeline

ROOT = Path(__file__).resolve().parent.parent
APPS_DIR = ROOT / "testsuite" / "apps"


DEFAULT_APP = "bank"
COMPARED = "posix,shfl-block"  # beside the recommended header: the rewrite alone, and one more


def say(text: str = "", indent: int = 0) -> None:
    pad = " " * indent
    print("\n".join(pad + ln if ln else ln for ln in text.splitlines()) or "", flush=True)


def step(n: int, total: int, text: str) -> None:
    say(f"\n[{n}/{total}] {text}")


def shown(cmd: str) -> None:
    say(f"$ {cmd}", 4)


def shown_path(path: Path) -> str:
    """A path as a person reads it: relative to the current directory when under it."""
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def usable_cpus() -> int:
    return len(os.sched_getaffinity(0))


def doctor_line(p: pipeline.Pipeline) -> str:
    doc = json.loads(p.run("doctor", [*p.lt, "doctor", "--json"]).stdout)
    cpu, pmu, fifo = doc["cpu"], doc["pmu"], doc["sched_fifo"]
    vm = ", a virtual machine" if cpu.get("hypervisor") else ""
    counters = "yes" if pmu.get("available") else "no"
    why = pmu.get("reason") or ""
    if why and not pmu.get("available"):
        counters += f" ({why.split(': ', 1)[-1]})"
    return (
        f"CPU                {cpu['model']} x{cpu['count']} ({cpu['usable']} usable{vm})\n"
        f"hardware counters  {counters}\n"
        f"SCHED_FIFO         {'yes' if fifo.get('permitted') else 'no'}\n"
        f"toolchain          {doc['toolchain'].get('clang')}, glibc {doc['toolchain'].get('glibc')}"
    )


def header_entry(header: Path, file: str, line: int) -> str:
    """The entry of locktune_config.h for file:line, its comment included."""
    text = header.read_text()
    m = re.search(
        r"(    /\*(?:(?!\*/).)*\*/\n)?    \{LT_SITE_\w+, \""
        + re.escape(file)
        + rf"\", {line},[^\n]*",
        text,
        re.S,
    )
    return m.group(0) if m else ""


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--app",
        default=DEFAULT_APP,
        choices=sorted(apps.APPS),
        help=f"bundled app under testsuite/apps (default: {DEFAULT_APP})",
    )
    ap.add_argument("--threads", type=int, help="worker threads (default: 4 per usable CPU)")
    ap.add_argument(
        "--repeats",
        type=int,
        help="exactly N rounds of the comparison (default: until each ratio's 95%% interval "
        "is within +-5%%, at most --max-time)",
    )
    ap.add_argument(
        "--max-time",
        type=float,
        default=300,
        help="seconds of comparison rounds at most (default 300)",
    )
    ap.add_argument("--out", type=Path, help="output folder (default: out/demo-TIMESTAMP)")
    ap.add_argument("--quick", action="store_true", help="a smaller workload, two rounds")
    args = ap.parse_args()
    app = apps.APPS[args.app]
    cpus = usable_cpus()
    threads = args.threads or 4 * cpus
    if not 1 <= threads <= 1024:
        ap.error("--threads: from 1 to 1024")
    out = (args.out or ROOT / "out" / time.strftime("demo-%Y%m%d-%H%M%S")).resolve()
    argv = app.argv(threads, quick=args.quick)
    p = pipeline.Pipeline(out)
    total = 7
    started = time.monotonic()

    say(
        f"locktune demo: {app.name} ({threads} threads on {cpus} CPUs; "
        f"hot lock {app.hot_lock}, one op = one {app.op})"
    )
    say(f"output folder: {shown_path(out)}")

    step(1, total, "what this machine offers (locktune doctor)")
    say(doctor_line(p), 4)

    step(2, total, f"build the original {app.name} with its own Makefile")
    original = p.copy_source(APPS_DIR / app.name)
    shown("bear -- make")
    p.build_original(original)
    shown(" ".join(argv))
    run = p.run("original-run", argv, cwd=original)
    say(run.stdout.strip(), 6)

    step(3, total, "profile it: every pthread lock, per site, no recompilation")
    shown(f"locktune profile -o profile.json --source-root {original.name} -- {' '.join(argv)}")
    prof = p.profile(original, argv)
    locks = prof.get("locks") or []
    if not locks:
        raise pipeline.StepFailed("profile: no lock site was measured")
    say(
        f"{len(locks)} lock sites, {prof['totals']['cs_percent']:.1f}% of thread time in "
        "critical sections",
        6,
    )

    step(4, total, "report: the sites ranked, an algorithm recommended for each")
    shown("locktune report profile.json --top 5 --html report.html")
    say(p.report().rstrip(), 6)
    say(f"the same with charts: {shown_path(out / 'report.html')}", 6)

    step(5, total, "rewrite it with the profile: critical sections become functions")
    shown(
        "locktune rewrite --compile-commands original/compile_commands.json "
        "--profile profile.json --out rewritten original"
    )
    rewritten, summary = p.rewrite(original)
    say(summary.rstrip(), 6)
    hot = locks[0]
    entry = header_entry(rewritten / "locktune_config.h", hot["site"]["file"], hot["site"]["line"])
    if entry:
        say("the hottest site's entry in rewritten/locktune_config.h:", 6)
        say(entry, 4)

    step(6, total, "build the rewritten tree with the same Makefile and liblocktune")
    shown('make CPPFLAGS="$(locktune flags --cflags)" LDLIBS="$(locktune flags --libs)"')
    p.build_rewritten(rewritten)
    nm = subprocess.run(
        ["nm", "-D", "--undefined-only", str(rewritten / app.name)], capture_output=True, text=True
    ).stdout
    calls = sorted(set(re.findall(r"\b(lt_\w+)", nm)))
    say(f"{app.name} now calls liblocktune: {', '.join(calls) or 'nothing (?)'}", 6)

    step(7, total, "run both on the same workload, interleaved, repeated")
    options = ["--algos", COMPARED]
    if args.quick:
        options += ["--quick"]
    elif args.repeats:
        options += ["--repeats", str(args.repeats)]
    else:
        options += ["--max-time", f"{args.max_time:g}"]
    if app.check != r"^result:":
        options += ["--check", app.check]
    shown(
        f"locktune bench compare original rewritten --no-build {shlex.join(options)} "
        f"-- {shlex.join(argv)}"
    )
    doc, table = p.compare(original, rewritten, argv, options)
    say(table.rstrip(), 6)

    point = doc["points"][0]
    header = point["variants"].get(point["header"] or "", {})
    iv = header.get("interval")
    say()
    if iv:
        best = point["best"]
        best_text = (
            f"; best: {best['variant']} {compare_report.ratio_text(best['interval'])}"
            if best and best["variant"] != point["header"]
            else ""
        )
        rounds = doc["settings"]["rounds"]
        say(
            f"{app.name}, {threads} threads on {cpus} CPUs: the {point['header']} configuration "
            f"runs at {compare_report.ratio_text(iv)} the original's throughput"
            f"{best_text}"
        )
        say(f"({compare_report.rounds_line(rounds)})", 2)
        if args.quick:
            say("(--quick: two short rounds, a smoke test, not a measurement)", 2)
    else:
        errors = "; ".join(header.get("errors") or []) or "no run succeeded"
        say(f"{app.name}: the rewritten program could not be compared: {errors}")
    say(
        f"took {time.monotonic() - started:.0f} s; every command is in "
        f"{shown_path(out / 'commands.sh')}"
    )
    say(f"artefacts: {shown_path(out)}")
    return 0 if iv else 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except pipeline.StepFailed as e:
        print(f"demo: error: {e}", file=sys.stderr)
        sys.exit(1)
    except KeyboardInterrupt:
        sys.exit(130)
