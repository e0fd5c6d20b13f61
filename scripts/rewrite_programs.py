#!/usr/bin/env python3
"""bench/results/rewrite-programs/: the rewriter on real programs (issue 11, item 8).

    scripts/rewrite_programs.py collect "PROGRAM=REPORT" ...
                                           programs.json's entries from rewrite reports (one
                                           per program, in the order given), then render
    scripts/rewrite_programs.py render     programs.json -> programs.md (the table, the kept
                                           reasons) and programs.svg (extracted share per
                                           program, the 90% target drawn)

programs.json holds one entry per program, made from its rewrite report (W/rewrite.json of
scripts/realprog.py or scripts/memcached.py): files, sections found / extracted / kept, the
sections whose lock and unlock lie in one function and how many of those were extracted,
the kept ones by reason, the rewrite's wall time.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "results" / "rewrite-programs"
TARGET = 90.0  # % of the sections whose lock and unlock lie in one function
MEMCACHED_TARGET = 95.0  # the same, for memcached alone


# A kept section's reason, grouped: the first pattern that matches names its group.
BUCKETS = [
    (
        r"not proven to be the lock",
        "the unlock writes the lock another way (not proven the same)",
    ),
    (
        r"in another function|the function ends with .* held",
        "the section begins or ends in another function",
    ),
    (
        r"releases .* without taking it|releases a lock taken before the section",
        "a callee or the section releases a lock taken before it",
    ),
    (
        r"not close a block|is followed by code that stays in the section",
        "unlock/relock that does not close a block",
    ),
    (r"taken again at line \d+ while held", "the lock is taken again while held"),
    (
        r"^returns at line|the goto at line .* leaves with",
        "returns or jumps out with the lock held",
    ),
    (r"^trylock", "trylock shapes"),
    (r"in a header", "in a header (not extracted from headers)"),
    (
        r"another build configuration|every command the build compiles it with",
        "another build configuration gives the section another meaning",
    ),
    (
        r"excluded by the preprocessor",
        "code excluded by the preprocessor uses the section's variables",
    ),
    (r"defined by a macro", "the function is defined by a macro"),
    (r"errno|thread identity", "errno / thread identity"),
    (r"variable arguments", "the section uses the function's variable arguments"),
    (r"overlap", "edits would overlap (kept, internal limit)"),
    (r"one branch only", "lock taken in one branch only"),
    (
        r"belongs to a conditional opened before|is closed after the section",
        "a lock or unlock call in an #if group with other code",
    ),
    (r"depends on its thread", "errno / thread identity"),
]
# Sections whose lock and unlock are not in one function: the target does not count them.
NOT_ONE_FUNCTION = "the section begins or ends in another function"


def bucket(reason: str) -> str:
    for pattern, name in BUCKETS:
        if re.search(pattern, reason):
            return name
    return "other: " + re.sub(r"\d+", "N", reason)[:100]


def entry(program: str, report: dict) -> dict:
    """One program's row, from its rewrite report (locktune/rewrite/report.py)."""
    secs = [s for s in report["critical_sections"] if s.get("kind", "section") == "section"]
    extracted = sum(s["status"] == "extracted" for s in secs)
    kept = Counter(bucket(s.get("reason") or "") for s in secs if s["status"] != "extracted")
    one = len(secs) - kept.get(NOT_ONE_FUNCTION, 0)
    summary = report["summary"]
    return {
        "program": program,
        "files": summary["files"],
        "files_rewritten": summary["files_rewritten"],
        "files_failed": summary["files_failed"],
        "sections": len(secs),
        "extracted": extracted,
        "kept": len(secs) - extracted,
        "extracted_percent": round(100 * extracted / len(secs), 1) if secs else 0.0,
        "lock_and_unlock_in_one_function": one,
        "of_those_extracted": extracted,
        "of_those_extracted_percent": round(100 * extracted / one, 1) if one else 0.0,
        "not_built_lock_calls": sum(
            s.get("kind") == "not-built" for s in report["critical_sections"]
        ),
        "rewrite_s": summary.get("elapsed_s"),
        "kept_by_reason": dict(kept.most_common()),
        "lock_wrappers": sorted(report.get("lock_wrappers") or []),
    }


def collect(pairs: list[str], doc: dict) -> dict:
    programs = []
    for pair in pairs:
        name, _, path = pair.partition("=")
        programs.append(entry(name, json.loads(Path(path).read_text())))
    one = sum(p["lock_and_unlock_in_one_function"] for p in programs)
    ext = sum(p["of_those_extracted"] for p in programs)
    doc.update(
        date=datetime.date.today().isoformat(),
        machine={
            **doc.get("machine", {}),
            "cpus": os.cpu_count(),
            "kernel": platform.release(),
        },
        programs=programs,
        all_programs={
            "lock_and_unlock_in_one_function": one,
            "extracted": ext,
            "percent": round(100 * ext / one, 1) if one else 0.0,
        },
    )
    return doc


def table(doc: dict) -> str:
    rows = [
        "| program | files (rewritten / failed) | sections | extracted | kept "
        "| lock and unlock in one function: extracted | rewrite s |",
        "|---|---|---|---|---|---|---|",
    ]
    for p in doc["programs"]:
        rows.append(
            f"| {p['program']} | {p['files']} ({p['files_rewritten']} / {p['files_failed']}) "
            f"| {p['sections']} | {p['extracted']} ({p['extracted_percent']}%) | {p['kept']} "
            f"| {p['of_those_extracted']} of {p['lock_and_unlock_in_one_function']} "
            f"({p['of_those_extracted_percent']}%) | {p['rewrite_s']} |"
        )
    a = doc["all_programs"]
    rows.append(
        f"| all | | | | | {a['extracted']} of {a['lock_and_unlock_in_one_function']} "
        f"({a['percent']}%) | |"
    )
    return "\n".join(rows)


def reasons(doc: dict) -> str:
    out = []
    for p in doc["programs"]:
        kept = sorted(p["kept_by_reason"].items(), key=lambda kv: -kv[1])
        listed = "; ".join(f"{n} {r}" for r, n in kept) or "none kept"
        out.append(f"- **{p['program']}**: {listed}")
    return "\n".join(out)


def chart(doc: dict) -> str:
    sys.path.insert(0, str(ROOT))
    from locktune import charts

    names = [p["program"] for p in doc["programs"]]
    return charts.bar_chart(
        "Sections with lock and unlock in one function: extracted (%)",
        names,
        {"extracted (%)": [p["of_those_extracted_percent"] for p in doc["programs"]]},
        y_label="% extracted",
        x_label="program (dashed: the 90% target)",
        reference=TARGET,
    )


def render(doc: dict, prose: str) -> None:
    (OUT / "programs.svg").write_text(chart(doc))
    md = [
        "# The rewriter on real programs (issue 11, item 8)",
        "",
        f"{doc['date']}, {doc['machine']['note']}. Made by `scripts/rewrite_programs.py render`"
        " from programs.json; chart: [programs.svg](programs.svg).",
        "",
        table(doc),
        "",
        prose,
        "",
        targets(doc),
        "",
        "## Kept, by reason",
        "",
        reasons(doc),
        "",
    ]
    (OUT / "programs.md").write_text("\n".join(md))


def targets(doc: dict) -> str:
    """Each target, met or not, with its figure."""
    share = doc["all_programs"]["percent"]
    memcached = [p for p in doc["programs"] if p["program"].startswith("memcached")]
    out = [
        f"Target: {TARGET:.0f}% of the sections whose lock and unlock lie in one function: "
        + (f"met ({share}%)." if share >= TARGET else f"not met ({share}%; the kept reasons).")
    ]
    if memcached:
        m = memcached[0]["of_those_extracted_percent"]
        out.append(
            f"memcached {MEMCACHED_TARGET:.0f}% without `--lock-wrapper`: "
            + (f"met ({m}%)." if m >= MEMCACHED_TARGET else f"not met ({m}%; the kept reasons).")
        )
    return " ".join(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("what", choices=["collect", "render"])
    ap.add_argument("reports", nargs="*", metavar="PROGRAM=REPORT")
    ap.add_argument("--notes", help="the prose under the table (collect)")
    args = ap.parse_args()
    doc = json.loads((OUT / "programs.json").read_text())
    if args.what == "collect":
        doc = collect(args.reports, doc)
        if args.notes is not None:
            doc["notes"] = args.notes
        (OUT / "programs.json").write_text(json.dumps(doc, indent=1) + "\n")
    render(doc, doc.get("notes", ""))
    print(f"wrote {OUT / 'programs.md'} and {OUT / 'programs.svg'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
