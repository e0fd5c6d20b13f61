"""What `locktune bench locks` leaves behind: results.json, one SVG chart per view, and the
tables printed for people."""

from __future__ import annotations

import json
import re
from pathlib import Path

from locktune import charts
from locktune.ui import table

SCHEMA = "locktune-bench-locks/1"


def default_out_dir(machine: dict, root: Path | None = None) -> Path:
    """bench/results/<cpu model>-<N>cpu-<date>, under `root` (the current directory)."""
    model = re.sub(r"\((r|tm)\)|processor|cpu|\d+-core", " ", machine["cpu_model"].lower())
    slug = "-".join(re.findall(r"[a-z0-9]+", model))[:40].strip("-") or "machine"
    date = machine["date"][:19].replace(":", "").replace("-", "").replace("T", "-")
    return (root or Path.cwd()) / "bench" / "results" / f"{slug}-{machine['cpus']}cpu-{date}"


def _median(s: dict | None) -> float | None:
    return s["median"] if s else None


def _labels(sweep: dict) -> list[str]:
    """Locks in table order: glibc, the extra baselines, then the algorithms as they ran."""
    seen: list[str] = []
    for p in sweep["points"]:
        for label in p["locks"]:
            if label not in seen:
                seen.append(label)
    first = [x for x in ("glibc", "bare-ticket", "no-lock", "sequential") if x in seen]
    return first + [x for x in seen if x not in first]


def charts_for(sweep: dict) -> dict[str, str]:
    """SVG documents by file name."""
    out = {}
    everything = _labels(sweep)
    labels = [x for x in everything if x not in ("sequential", "no-lock")]  # locks only
    metric = "cost" if sweep["metric"] == "cost" else "throughput"
    y_ratio = f"{metric} / glibc's (median of rounds)"
    if sweep["axis"] == "":
        p = sweep["points"][0]
        series = {x: [_median(p["locks"].get(x, {}).get("ratio"))] for x in labels}
        out[f"{sweep['name']}.svg"] = charts.bar_chart(
            sweep["title"], ["lock+unlock"], series, y_label=y_ratio, reference=1.0
        )
        net = {x: [_median(p["locks"].get(x, {}).get("net_ratio"))] for x in labels}
        out[f"{sweep['name']}-net.svg"] = charts.bar_chart(
            "Uncontended lock+unlock alone (less the loop without a lock), relative to glibc",
            ["lock+unlock"],
            net,
            y_label="net cost / glibc's (median of rounds)",
            reference=1.0,
        )
        ns = {x: [_median(p["locks"].get(x, {}).get("ns_per_op"))] for x in everything}
        out[f"{sweep['name']}-ns.svg"] = charts.bar_chart(
            "Uncontended: ns per operation (loop + section + lock)", ["ns"], ns, y_label="ns"
        )
        return out
    if sweep["name"] == "delay":
        for lines in sorted({p["lines"] for p in sweep["points"]}):
            pts = [p for p in sweep["points"] if p["lines"] == lines]
            xs = [p["delay_cycles"] for p in pts]
            ratio = {x: [_median(p["locks"].get(x, {}).get("ratio")) for p in pts] for x in labels}
            out[f"delay-{lines}lines.svg"] = charts.line_chart(
                f"{lines} shared line(s): throughput relative to glibc",
                xs,
                ratio,
                y_label="throughput / glibc's",
                x_label="delay between sections (cycles)",
                reference=1.0,
                log_x=True,
                log_y=True,
            )
            lat = {
                x: [_median(p["locks"].get(x, {}).get("cs_latency_cycles")) for p in pts]
                for x in labels
            }
            out[f"delay-{lines}lines-cycles.svg"] = charts.line_chart(
                f"{lines} shared line(s): cycles per critical section, waiting included",
                xs,
                lat,
                y_label="cycles per section (per thread, less its delay)",
                x_label="delay between sections (cycles)",
                log_x=True,
                log_y=True,
            )
        return out
    xs = [p["x"] for p in sweep["points"]]
    ratio = {
        x: [_median(p["locks"].get(x, {}).get("ratio")) for p in sweep["points"]] for x in labels
    }
    out[f"{sweep['name']}.svg"] = charts.bar_chart(
        sweep["title"],
        [str(x) for x in xs],
        ratio,
        y_label=y_ratio,
        x_label=sweep["axis"],
        reference=1.0,
        log=sweep["name"] != "lines",
    )
    if sweep["axis"] == "threads":
        thr = {
            x: [
                _mega(_median(p["locks"].get(x, {}).get("throughput_ops_s")))
                for p in sweep["points"]
            ]
            for x in labels
        }
        out[f"{sweep['name']}-throughput.svg"] = charts.line_chart(
            f"{sweep['name']}: throughput (M sections/s, median of rounds)",
            [float(x) for x in xs],
            thr,
            y_label="M sections / s",
            x_label="threads",
            log_x=True,
            log_y=True,
        )
    return out


def _mega(v: float | None) -> float | None:
    return v / 1e6 if v else None


def _fmt(v: float | None, spec: str) -> str:
    return "-" if v is None else format(v, spec)


def _span(s: dict | None, spec: str = ".2f") -> str:
    if not s:
        return "-"
    return f"{format(s['min'], spec)} / {format(s['median'], spec)} / {format(s['max'], spec)}"


def tables(summary: list[dict]) -> str:
    """The tables people read: one per sweep, one row per lock at each point.

    Columns: the point; the ratio to glibc (min / median / max over rounds, and the median over
    the rounds where both runs were in the same round-trip regime); throughput, RSD and
    distinct threads per 1000 acquisitions (or, uncontended, the cost relative to a bare
    ticket lock and ns per operation); median handover; the run's round trip, how many runs
    were near/far, and ns per operation in round trips; for the delay sweep, throughput as a
    fraction of the section's sequential rate."""
    parts = []
    for sweep in summary:
        cost = sweep["metric"] == "cost"
        headers = ["threads", "lines", "delay", "lock", "vs glibc min/med/max", "same regime"]
        peers = any(s.get("vs_peer") for p in sweep["points"] for s in p["locks"].values())
        if peers:
            headers.append("speed vs CK")
        if cost:
            headers += ["vs bare ticket", "ns/op", "net ns", "net vs glibc", "net vs ticket"]
        else:
            headers += ["M ops/s", "RSD", "thr/1000"]
        headers += ["handover ns", "RT ns", "near/far", "RTs/op"]
        if sweep["name"] == "delay":
            headers.append("of sequential")
        rows = []
        for p in sweep["points"]:
            point = [p["threads"] or "1/CPU", p["lines"], p["delay_cycles"]]
            for label in _labels({"points": [p]}):
                s = p["locks"][label]
                name = label + (f" ({s['failed']} failed)" if s["failed"] else "")
                row = [
                    *point,
                    name,
                    _span(s["ratio"]),
                    _fmt(_median(s["ratio_same_regime"]), ".2f"),
                ]
                if peers:
                    row.append(_span(s.get("vs_peer")))
                if cost:
                    row += [
                        _span(s["vs_bare_ticket"]),
                        _fmt(_median(s["ns_per_op"]), ".2f"),
                        _fmt(_median(s["net_ns_per_op"]), ".2f"),
                        _span(s["net_ratio"]),
                        _span(s["net_vs_bare_ticket"]),
                    ]
                else:
                    row += [
                        _fmt(_mega(_median(s["throughput_ops_s"])), ".3g"),
                        _fmt(_median(s["rsd"]), ".2f"),
                        _fmt(_median(s["distinct_threads"]), ".1f"),
                    ]
                row += [
                    _fmt(_median(s["handover_ns"]), ".0f"),
                    _fmt(_median(s["rt_ns"]), ".0f"),
                    f"{s['regimes']['near']}/{s['regimes']['far']}",
                    _fmt(_median(s["cost_in_round_trips"]), ".2f"),
                ]
                if sweep["name"] == "delay":
                    row.append(_fmt(_median(s["sequential_fraction"]), ".2f"))
                rows.append(row)
                point = ["", "", ""]
        align = "rrrl" + "r" * (len(headers) - 4)
        parts.append(f"{sweep['title']}\n  goal: {sweep['goal']}\n" + table(headers, rows, align))
    return "\n\n".join(parts)


def unavailable_lines(unavailable: dict[str, str]) -> list[str]:
    """One line per reason: "not in this liblocktune: spin, ticket, mcs" rather than fifteen."""
    by_reason: dict[str, list[str]] = {}
    for name, why in unavailable.items():
        if "liblocktune has no algorithm" in why or "unknown algorithm" in why:
            why = "not in this liblocktune"
        by_reason.setdefault(why, []).append(name)
    return [f"unavailable ({why}): {', '.join(names)}" for why, names in by_reason.items()]


def write(out_dir: Path, document: dict, summary: list[dict]) -> list[Path]:
    """results.json and the charts; returns the paths written."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    results = out_dir / "results.json"
    results.write_text(json.dumps(document, indent=1) + "\n")
    written.append(results)
    for sweep in summary:
        for name, svg in charts_for(sweep).items():
            path = out_dir / name
            path.write_text(svg)
            written.append(path)
    return written
