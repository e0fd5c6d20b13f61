"""What `locktune bench compare` leaves behind: results.json, SVG charts, and the tables people
read."""

from __future__ import annotations

import json
import re
from pathlib import Path

from locktune import charts
from locktune.bench import interval
from locktune.bench.compare import ORIGINAL
from locktune.ui import table


def default_out_dir(program: str, machine: dict, root: Path | None = None) -> Path:
    """bench/results/compare-<program>-<N>cpu-<date>, under `root` (the current directory)."""
    name = re.sub(r"[^A-Za-z0-9_.-]+", "-", Path(program).name).strip("-") or "program"
    date = machine["date"][:19].replace(":", "").replace("-", "").replace("T", "-")
    return (
        (root or Path.cwd()) / "bench" / "results" / f"compare-{name}-{machine['cpus']}cpu-{date}"
    )


def _median(s: dict | None) -> float | None:
    return s["median"] if s else None


def _span(s: dict | None, spec: str = ".2f") -> str:
    if not s:
        return "-"
    if s["min"] == s["max"]:
        return format(s["median"], spec)
    return f"{format(s['min'], spec)} / {format(s['median'], spec)} / {format(s['max'], spec)}"


def _rate(v: float | None) -> str:
    if v is None:
        return "-"
    for div, unit in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(v) >= div:
            return f"{v / div:.3g}{unit}"
    return f"{v:.3g}"


def _label(p: dict) -> str:
    return "as given" if p["threads"] is None else f"{p['threads']} threads"


def tables(summary: list[dict], unit: str = "ops/s") -> str:
    """One table: a block of rows per point, one row per variant, best first after the
    original and the header; then one line per point naming the best variant."""
    headers = [
        "point",
        "variant",
        "vs original (95%)",
        "min/med/max",
        "same regime",
        unit,
        "wall s",
        "RT ns",
        "near/far",
        "what",
    ]
    rows = []
    for p in summary:
        label = _label(p)
        vs = p["variants"]
        fixed = [n for n in vs if n == ORIGINAL or vs[n]["kind"] == "header"]
        rest = sorted(
            (n for n in vs if n not in fixed),
            key=lambda n: -(_median(vs[n]["ratio"]) or -1.0),
        )
        for name in fixed + rest:
            s = vs[name]
            shown = name
            if s["failed"]:
                shown += f" ({s['failed']} failed)"
            if s["timed_out"]:
                shown += " (timed out)"
            if p["best"] and p["best"]["variant"] == name:
                shown += " *"
            rows.append(
                [
                    label,
                    shown,
                    "1" if name == ORIGINAL and s["runs"] else _interval(s.get("interval")),
                    "" if name == ORIGINAL else _span(s["ratio"]),
                    "" if name == ORIGINAL else _fmt(_median(s["ratio_same_regime"])),
                    _rate(_median(s["throughput"])),
                    _fmt(_median(s["wall_s"])),
                    _fmt(_median(s["rt_ns"]), ".0f"),
                    f"{s['regimes']['near']}/{s['regimes']['far']}",
                    s["what"],
                ]
            )
            label = ""
    return table(headers, rows, "llrrrrrrrl")


def _fmt(v: float | None, spec: str = ".2f") -> str:
    return "-" if v is None else format(v, spec)


def _interval(iv: dict | None) -> str:
    """`1.27 (1.21-1.32)`; the centre alone with one round; `-` without a ratio."""
    if iv is None:
        return "-"
    if iv["lo"] is None:
        return f"{iv['centre']:.2f}"
    return f"{iv['centre']:.2f} ({iv['lo']:.2f}-{iv['hi']:.2f})"


def ratio_text(iv: dict | None) -> str:
    """`1.31x (95% 1.25-1.37)`, and `, no different from the original` when the interval
    holds 1."""
    if iv is None:
        return "no ratio"
    if iv["lo"] is None:
        return f"{iv['centre']:.2f}x (one round: no interval)"
    text = f"{iv['centre']:.2f}x (95% {iv['lo']:.2f}-{iv['hi']:.2f})"
    if interval.verdict(iv) == "no different":
        text += ", no different from the original"
    return text


def verdict_lines(summary: list[dict]) -> list[str]:
    """One line per point: the best variant and the header's own configuration, each with
    its 95% interval."""
    out = []
    for p in summary:
        parts = []
        best = p["best"]
        if best and best["variant"] == p["header"]:
            parts.append(f"{p['header']} {ratio_text(best.get('interval'))} (the best)")
        else:
            if best:
                parts.append(f"best {best['variant']} {ratio_text(best.get('interval'))}")
            if p["header"] and p.get("header_interval"):
                parts.append(f"{p['header']} {ratio_text(p['header_interval'])}")
        if parts:
            out.append(f"{_label(p)}: " + "; ".join(parts) + " (throughput / the original's)")
    return out


def thread_count_lines(summary: list[dict]) -> list[str]:
    """When the best configuration is not the same at every thread count measured, say so
    and name `auto` (issue 14: a choice that depends on the thread count)."""
    bests = [(p["threads"], p["best"]["variant"]) for p in summary if p["best"]]
    if len({b for _t, b in bests}) < 2 or any(t is None for t, _b in bests):
        return []
    each = ", ".join(f"{t} threads: {b}" for t, b in bests)
    return [
        f"the best configuration changes with the thread count ({each}): `auto` switches "
        'each lock at run time (LOCKTUNE_ALGO=default=auto, or "auto" in locktune_config.h)'
    ]


def rounds_line(rounds: dict) -> str:
    """How many rounds ran and why the last was the last."""
    return f"rounds: {rounds['run']}, stopped at {rounds['stopped']}"


def charts_for(summary: list[dict], title: str) -> dict[str, str]:
    """compare.svg: each variant's median ratio to the original, grouped by point;
    compare-throughput.svg (several thread counts): throughput over threads."""
    names: list[str] = []
    for p in summary:
        for n in p["variants"]:
            if n != ORIGINAL and n not in names:
                names.append(n)
    groups = [_label(p) for p in summary]
    ratio = {n: [_median(p["variants"].get(n, {}).get("ratio")) for p in summary] for n in names}
    spread = [v for vs in ratio.values() for v in vs if v]
    log = bool(spread) and max(spread) / min(spread) > 50  # spin locks collapse 1000x
    out = {
        "compare.svg": charts.bar_chart(
            f"{title}: throughput relative to the original (median of rounds)",
            groups,
            ratio,
            y_label="throughput / original's",
            reference=1.0,
            log=log,
        )
    }
    threads = [p["threads"] for p in summary]
    if len(summary) > 1 and all(t is not None for t in threads):
        thr = {
            n: [_median(p["variants"].get(n, {}).get("throughput")) for p in summary]
            for n in [ORIGINAL, *names]
        }
        out["compare-throughput.svg"] = charts.line_chart(
            f"{title}: throughput (median of rounds)",
            [float(t) for t in threads],
            thr,
            y_label="throughput",
            x_label="threads",
            log_x=True,
            log_y=log,
        )
    return out


def write(out_dir: Path, document: dict, title: str) -> list[Path]:
    """results.json and the charts; returns the paths written."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written = [out_dir / "results.json"]
    written[0].write_text(json.dumps(document, indent=1) + "\n")
    for name, svg in charts_for(document["points"], title).items():
        path = out_dir / name
        path.write_text(svg)
        written.append(path)
    return written
