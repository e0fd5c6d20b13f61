"""summary.json and uncontended.svg of this folder from its runs (run.sh): each lock's cost
against glibc within a round, pooled over the three runs (15 rounds) before and after, and
bank's throughput against the original within a round (10 rounds)."""

import json
import statistics as st
import sys
from pathlib import Path

from locktune import charts

out = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).parent)
locks: dict[str, dict[str, list[float]]] = {}
for v in ("before", "after"):
    for run in sorted(out.glob(f"{v}-*/results.json")):
        doc = json.loads(run.read_text())
        ok = [r for r in doc["runs"] if r["ok"]]
        glibc = {r["round"]: r["ns_per_op"] for r in ok if r["lock"] == "glibc"}
        for r in ok:
            locks.setdefault(r["lock"], {}).setdefault(v, []).append(
                r["ns_per_op"] / glibc[r["round"]]
            )


def summary(xs: list[float]) -> dict:
    q = st.quantiles(xs, n=4)
    return {"n": len(xs), "median": round(st.median(xs), 3), "q1": round(q[0], 3),
            "q3": round(q[2], 3), "min": round(min(xs), 3), "max": round(max(xs), 3)}


doc = {"uncontended_cost_vs_glibc": {k: {v: summary(xs) for v, xs in d.items()}
                                     for k, d in locks.items()}}
rows: dict[str, list[float]] = {}
for line in (out / "bank-1-thread.txt").read_text().split("\n"):
    if line.strip():
        k, val = line.split()
        rows.setdefault(k, []).append(float(val))
orig = rows.pop("orig")
doc["bank_1_thread_vs_original"] = {
    k: summary([x / o for x, o in zip(xs, orig, strict=True)]) for k, xs in rows.items()
}
(out / "summary.json").write_text(json.dumps(doc, indent=2) + "\n")
shown = [k for k in locks if k not in ("glibc", "no-lock", "bare-ticket")]
svg = charts.bar_chart(
    "Uncontended lock+unlock against glibc, before and after the inline fast paths (median of 15 rounds)",
    shown,
    {v: [st.median(locks[k][v]) for k in shown] for v in ("before", "after")},
    y_label="cost / glibc's",
    reference=1.0,
)
(out / "uncontended.svg").write_text(svg)
for k in shown:
    print(f"{k:12} before {doc['uncontended_cost_vs_glibc'][k]['before']['median']:.2f}"
          f"  after {doc['uncontended_cost_vs_glibc'][k]['after']['median']:.2f}")
for k, s in doc["bank_1_thread_vs_original"].items():
    print(f"bank {k:16} {s['median']:.2f} ({s['min']:.2f}-{s['max']:.2f})")
