#!/usr/bin/env python3
"""bench/results/rewrite-programs/: the rewriter on real programs (issue 11, item 8).

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
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "results" / "rewrite-programs"
TARGET = 90.0  # % of the sections whose lock and unlock lie in one function


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
        out.append(f"- **{p['program']}**: " + "; ".join(f"{n} {r}" for r, n in kept))
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
        f"Target: {TARGET:.0f}% of the sections whose lock and unlock lie in one function, "
        "memcached 95% without `--lock-wrapper`: "
        + ("met." if doc["all_programs"]["percent"] >= TARGET else "not met (the kept reasons).")
        + "",
        "",
        "## Kept, by reason",
        "",
        reasons(doc),
        "",
    ]
    (OUT / "programs.md").write_text("\n".join(md))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("what", choices=["render"])
    ap.parse_args()
    doc = json.loads((OUT / "programs.json").read_text())
    render(doc, doc.get("notes", ""))
    print(f"wrote {OUT / 'programs.md'} and {OUT / 'programs.svg'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
