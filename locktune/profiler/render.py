"""`locktune report`: a profile ranked for people (table), machines (JSON) and browsers (one
self-contained HTML page with SVG charts, no network)."""

from __future__ import annotations

import time
from html import escape

from locktune import charts
from locktune.profiler import recommend as rec
from locktune.ui import table

REPORT_SCHEMA = "locktune-report/1"


def rerank(profile: dict, thresholds: dict) -> list[dict]:
    """The profile's sites with recommendations recomputed under `thresholds`."""
    meta = profile.get("meta", {})
    machine = {
        "usable_cpus": (meta.get("cpu") or {}).get("usable") or 1,
        "max_threads": meta.get("max_live_threads") or 1,
    }
    sites = []
    for lock in profile.get("locks", []):
        s = dict(lock)
        if "wait_percent" not in s and s.get("cs_ns"):
            s["wait_percent"] = 100.0 * (s.get("wait_ns") or 0) / s["cs_ns"]
        s["recommendation"] = rec.recommend(s, machine, thresholds["values"])
        sites.append(s)
    sites.sort(key=lambda e: (-(e.get("cs_percent") or 0), -(e.get("acquisitions") or 0)))
    return sites


def site_label(s: dict) -> str:
    site = s.get("site") or {}
    if site.get("file") and site.get("line"):
        return f"{site['file']}:{site['line']}"
    mod = site.get("module")
    sym = site.get("symbol") or site.get("function") or "?"
    return f"{mod.rsplit('/', 1)[-1]}!{sym}" if mod else sym


def site_name(s: dict) -> str:
    site = s.get("site") or {}
    name = site.get("symbol") or (f"in {site['function']}()" if site.get("function") else "")
    if site.get("file") is None and name and name in site_label(s):
        return ""
    return name or ""


def locality_cell(s: dict) -> str:
    if s.get("misses_per_cs") is not None:
        return f"{s['misses_per_cs']:.1f}"
    est = (s.get("locality_estimate") or {}).get("extra_ns_per_cs")
    return f"{est:+.0f} ns est." if est is not None else "n/a"


def _ms(ns: float | None) -> str:
    return "0" if not ns else f"{ns / 1e6:.2f}" if ns < 1e10 else f"{ns / 1e9:.1f}s"


def summary_lines(profile: dict, thresholds: dict) -> list[str]:
    meta = profile.get("meta", {})
    totals = profile.get("totals", {})
    ex = meta.get("exit") or {}
    how = (
        f"exit status {ex['status']}"
        if ex.get("status") is not None
        else f"killed by {ex['signal']}"
        if ex.get("signal")
        else "exit unknown"
    )
    cpu = meta.get("cpu") or {}
    args = " ".join([meta.get("program", "?"), *meta.get("arguments", [])])
    lines = [
        f"program      {args} (pid {meta.get('pid')}, {how}, "
        f"{(meta.get('wall_ns') or 0) / 1e9:.2f} s wall, {meta.get('threads')} threads, "
        f"at most {meta.get('max_live_threads')} at once, on {cpu.get('usable')} CPUs)",
        f"in sections  {totals.get('cs_percent', 0):.1f}% of thread time "
        f"({(totals.get('thread_ns') or 0) / 1e9:.2f} s) inside critical sections, "
        f"{totals.get('sites', 0)} lock sites",
    ]
    clock = meta.get("clock") or {}
    timing = meta.get("timing") or {}
    if clock:
        line = f"clock        {clock.get('source', '?').upper()}"
        if clock.get("hz") and clock.get("source") == "tsc":
            line += f" {clock['hz'] / 1e9:.2f} GHz"
        if clock.get("ordo_boundary_ns") is not None:
            line += f"; cores' clocks agree within {clock['ordo_boundary_ns']:.0f} ns (Ordo)"
        period = timing.get("sample_period")
        if period and period > 1:
            line += f"; short uncontended sections timed 1 in {period}, counts exact"
        lines.append(line)
    pmu = meta.get("pmu") or {}
    if pmu.get("available"):
        lines.append(f"counters     {pmu.get('event')}: misses per critical section measured")
    else:
        lines.append(
            f"counters     none: {pmu.get('reason')}; locality column is a software estimate "
            "(extra hold time when the lock comes from another thread)"
        )
    v = thresholds["values"]
    src = thresholds["source"]
    upper = "none" if v["upper_cs_percent"] is None else f"{v['upper_cs_percent']:g}%"
    lines.append(
        f"thresholds   lower {v['lower_cs_percent']:g}%, upper {upper} "
        f"({'documented defaults: run `locktune calibrate` for this machine' if src == 'defaults' else src})"
    )
    for note in meta.get("notes", []):
        lines.append(f"note         {note}")
    return lines


def text(profile: dict, thresholds: dict, top: int | None) -> str:
    sites = rerank(profile, thresholds)
    shown = sites[:top] if top else sites
    rows = []
    for s in shown:
        rows.append(
            [
                s.get("id"),
                site_label(s),
                site_name(s),
                s.get("kind"),
                f"{s.get('cs_percent', 0):.1f}%",
                f"{s.get('contention_percent', 0):.1f}%",
                _ms(s.get("wait_ns")),
                f"{s.get('acquisitions', 0):,}",
                locality_cell(s),
                s.get("instances"),
                s["recommendation"]["algorithm"],
            ]
        )
    out = summary_lines(profile, thresholds)
    out.append("")
    out.append(
        table(
            [
                "#",
                "site",
                "name",
                "kind",
                "in CS",
                "contended",
                "wait ms",
                "acquired",
                "misses/CS",
                "inst",
                "recommend",
            ],
            rows,
            "rlllrrrrrrl",
        )
    )
    if not sites:
        out.append("(the program used no pthread lock)")
    if len(shown) < len(sites):
        out.append(f"({len(sites) - len(shown)} more sites; --top to show more)")
    out.append("")
    for s in shown:
        r = s["recommendation"]
        out.append(f"{s.get('id')}. {site_label(s)} -> {r['algorithm']}: {r['reason']}")
    return "\n".join(out) + "\n"


def as_json(profile: dict, thresholds: dict, top: int | None, source: str) -> dict:
    sites = rerank(profile, thresholds)
    return {
        "schema": REPORT_SCHEMA,
        "profile": source,
        "meta": profile.get("meta", {}),
        "totals": profile.get("totals", {}),
        "thresholds": {
            "source": thresholds["source"],
            **thresholds["values"],
            "calibration": thresholds.get("calibration"),
        },
        "sites": sites[:top] if top else sites,
    }


_CSS = """
body { font-family: sans-serif; margin: 2em; color: #222; max-width: 1200px; }
h1 { font-size: 1.4em; } h2 { font-size: 1.15em; margin-top: 1.6em; }
table { border-collapse: collapse; font-size: 0.9em; }
th, td { border-bottom: 1px solid #ddd; padding: 4px 8px; text-align: left; vertical-align: top; }
td.n { text-align: right; font-variant-numeric: tabular-nums; }
.est { color: #8a5a00; } .note { color: #555; } pre { background: #f6f6f6; padding: 8px; }
.chart { margin: 1em 0; }
"""


def html(profile: dict, thresholds: dict, top: int | None, source: str) -> str:
    sites = rerank(profile, thresholds)
    shown = sites[: top or 20]
    labels = [f"#{s['id']}" for s in shown]
    v = thresholds["values"]
    cs_chart = charts.bar_chart(
        "Share of thread time in each site's critical sections",
        labels,
        {"in critical sections (%)": [s.get("cs_percent") for s in shown]},
        y_label="% of thread time",
        x_label="site (see the table)",
        reference=v["lower_cs_percent"],
    )
    time_chart = charts.bar_chart(
        "Where the critical-section time goes",
        labels,
        {
            "waiting to acquire (ms)": [(s.get("wait_ns") or 0) / 1e6 for s in shown],
            "holding (ms)": [(s.get("hold_ns") or 0) / 1e6 for s in shown],
        },
        y_label="milliseconds, all threads",
        x_label="site",
    )
    pmu = (profile.get("meta") or {}).get("pmu") or {}
    if pmu.get("available"):
        loc_chart = charts.bar_chart(
            "Cache misses per critical section",
            labels,
            {pmu.get("event") or "misses": [s.get("misses_per_cs") for s in shown]},
            y_label="misses per section",
            x_label="site",
            reference=v["misses_poor"],
        )
    else:
        loc_chart = charts.bar_chart(
            "Locality estimate: extra hold time when the lock comes from another thread",
            labels,
            {
                "estimate (ns per section)": [
                    (s.get("locality_estimate") or {}).get("extra_ns_per_cs") for s in shown
                ]
            },
            y_label="ns per section (estimate)",
            x_label="site",
            reference=v["locality_poor_ns"],
        )
    rows = []
    for s in sites[:top] if top else sites:
        r = s["recommendation"]
        rows.append(
            "<tr>"
            f"<td class=n>{s['id']}</td><td>{escape(site_label(s))}</td>"
            f"<td>{escape(site_name(s))}</td><td>{escape(str(s.get('kind')))}</td>"
            f"<td class=n>{s.get('cs_percent', 0):.2f}%</td>"
            f"<td class=n>{s.get('contention_percent', 0):.1f}%</td>"
            f"<td class=n>{_ms(s.get('wait_ns'))}</td><td class=n>{_ms(s.get('hold_ns'))}</td>"
            f"<td class=n>{s.get('acquisitions', 0):,}</td>"
            f"<td class=n>{s.get('trylock_failures', 0):,}</td>"
            f"<td class=n>{s.get('cond_waits', 0):,}</td>"
            f"<td class='n{'' if s.get('misses_per_cs') is not None else ' est'}'>"
            f"{escape(locality_cell(s))}</td>"
            f"<td class=n>{s.get('instances')}</td>"
            f"<td><b>{escape(r['algorithm'])}</b><br><span class=note>{escape(r['reason'])}</span></td>"
            "</tr>"
        )
    summary = "\n".join(escape(line) for line in summary_lines(profile, thresholds))
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>locktune report: {escape(str((profile.get("meta") or {}).get("program", "")))}</title>
<style>{_CSS}</style></head><body>
<h1>locktune report</h1>
<p class=note>{escape(source)}, written {escape(time.strftime("%Y-%m-%d %H:%M"))}</p>
<pre>{summary}</pre>
<h2>Lock sites, ranked</h2>
<table><tr><th>#</th><th>site</th><th>name</th><th>kind</th><th>in CS</th><th>contended</th>
<th>wait ms</th><th>hold ms</th><th>acquired</th><th>trylock fails</th><th>cond waits</th>
<th>misses/CS</th><th>instances</th><th>recommendation</th></tr>
{"".join(rows)}
</table>
<div class=chart>{cs_chart}</div>
<div class=chart>{time_chart}</div>
<div class=chart>{loc_chart}</div>
</body></html>
"""
