"""`locktune report`: a profile ranked for people (table), machines (JSON) and browsers (one
self-contained HTML page with SVG charts, no network)."""

from __future__ import annotations

import time
from html import escape
from pathlib import Path

from locktune import charts
from locktune.profiler import document
from locktune.profiler import recommend as rec
from locktune.ui import table

REPORT_SCHEMA = "locktune-report/1"


def rerank(profile: dict, thresholds: dict, process: dict | None = None) -> list[dict]:
    """The profile's sites (or those of one of its `process`es), ranked, each with its
    recommendation: the one `locktune profile` computed (analyze.py, once), unless
    `thresholds` differ from those the profile recorded (`report --thresholds`, or a later
    calibration): then computed again under them, by the same rule on the same figures."""
    meta = profile.get("meta", {})
    recorded = {k: v for k, v in (meta.get("thresholds") or {}).items() if k != "source"}
    again = recorded != thresholds["values"]
    machine = {
        "usable_cpus": (meta.get("cpu") or {}).get("usable") or 1,
        "max_threads": ((process or profile).get("meta") or {}).get("max_live_threads") or 1,
    }
    sites = []
    for lock in (process or profile).get("locks", []):
        s = dict(lock)
        if "wait_percent" not in s and s.get("cs_ns"):
            s["wait_percent"] = 100.0 * (s.get("wait_ns") or 0) / s["cs_ns"]
        if again or not s.get("recommendation"):
            s["recommendation"] = rec.recommend(s, machine, thresholds["values"])
        sites.append(s)
    sites.sort(key=lambda e: (-(e.get("cs_percent") or 0), -(e.get("acquisitions") or 0)))
    return sites


HOT_SITES = 3  # sites whose critical sections are shown (terminal: also under --top)
HOT_CALLSITES = 3  # callsites shown per hot site


def source_root(profile: dict, given: str | Path | None) -> Path | None:
    """Where the sources are: --source-root, else the profile's meta.source_root."""
    root = given or (profile.get("meta") or {}).get("source_root")
    return Path(root) if root else None


def source_line(root: Path | None, file: str | None, line: int | None) -> str | None:
    """The text of file:line (relative to root, or absolute), stripped; None when not found."""
    if not file or not line:
        return None
    path = Path(file)
    if not path.is_absolute():
        if root is None:
            return None
        path = root / path
    try:
        with open(path, errors="replace") as f:
            for n, text_ in enumerate(f, 1):
                if n == line:
                    return text_.strip()
    except OSError:
        return None
    return None


def callsite_label(c: dict) -> str:
    if c.get("other_callers"):
        return "other callers (past the profiler's table of callers per thread)"
    where = f"{c['file']}:{c['line']}" if c.get("file") and c.get("line") else c.get("symbol")
    where = where or "?"
    return f"{where} in {c['function']}()" if c.get("function") else where


def hot_sections(sites: list[dict], root: Path | None) -> list[dict]:
    """The hot sites' top critical sections (callsites[], by critical-section time), each
    {site (label), callsite, share (of the site's critical-section time), source}; the
    "other callers" entry whenever a site has one, so that it is never silent."""
    out = []
    for s in sites[:HOT_SITES]:
        calls = s.get("callsites") or []
        if not calls or not s.get("cs_ns"):
            continue
        shown = calls[:HOT_CALLSITES]
        shown += [c for c in calls[HOT_CALLSITES:] if c.get("other_callers")]
        for c in shown:
            out.append(
                {
                    "site": site_label(s),
                    "callsite": c,
                    "share": 100.0 * (c.get("cs_ns") or 0) / s["cs_ns"],
                    "source": source_line(root, c.get("file"), c.get("line")),
                    "more": len(calls) - len(shown),
                }
            )
    return out


def hot_lines(sites: list[dict], root: Path | None) -> list[str]:
    rows = hot_sections(sites, root)
    if not rows:
        return []
    out = ["", "hot critical sections (where the hot sites are taken: the caller of lock, trylock,"]
    out.append("timedlock or condition wait; share of the site's critical-section time)")
    last = None
    for h in rows:
        c = h["callsite"]
        if h["site"] != last:
            last = h["site"]
            more = h["more"]
            more = f" ({more} more caller{'s' if more > 1 else ''})" if more else ""
            out.append(f"{h['site']}{more}")
        out.append(
            f"  {h['share']:5.1f}%  {callsite_label(c)}: {c.get('acquisitions', 0):,} acquired, "
            f"{c.get('contended', 0):,} contended, wait {_ms(c.get('wait_ns'))} ms, "
            f"hold {_ms(c.get('hold_ns'))} ms"
        )
        if h["source"]:
            out.append(f"          | {h['source']}")
    return out


def site_label(s: dict) -> str:
    site = s.get("site") or {}
    if site.get("file") and site.get("line"):
        return f"{site['file']}:{site['line']}"
    mod = (site.get("module") or "").rsplit("/", 1)[-1]
    sym = site.get("symbol") or site.get("function") or "?"
    if not mod or sym.startswith(mod + "+"):  # "sp+0x1273 (no debug information)": named
        return sym
    return f"{mod}!{sym}"


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


def process_label(meta: dict) -> str:
    """pid 123 (fork of 122) ./app --worker"""
    how = meta.get("started_by") or "?"
    origin = {
        "launch": "launched",
        "fork": f"fork of {meta.get('parent_pid')}",
        "exec": f"exec'd, parent {meta.get('parent_pid')}",
    }.get(how, how)
    cmd = " ".join(
        [meta.get("program") or meta.get("executable") or "?", *meta.get("arguments", [])]
    )
    if len(cmd) > 60:
        cmd = cmd[:57] + "..."
    return f"pid {meta.get('pid')} ({origin}) {cmd}"


def ranked_processes(profile: dict) -> list[dict]:
    """The processes that used a lock or a condition variable, busiest first (time in
    critical sections, then acquisitions)."""
    procs = [
        p for p in document.processes(profile) if p.get("locks") or p.get("condition_variables")
    ]
    return sorted(
        procs,
        key=lambda p: (
            -((p["meta"].get("share") or {}).get("cs_percent") or 0),
            -((p.get("totals") or {}).get("acquisitions") or 0),
        ),
    )


def processes_line(profile: dict) -> str:
    every = document.processes(profile)
    active = ranked_processes(profile)
    if not active:
        return f"{len(every)} profiled, none used a lock"
    top = active[0]["meta"]
    share = top.get("share") or {}
    return (
        f"{len(every)} profiled, {len(active)} used locks; the work was done by "
        f"{process_label(top)}: {share.get('cs_percent', 0):.1f}% of the critical-section "
        f"time, {share.get('acquisitions_percent', 0):.1f}% of the acquisitions "
        "(sections per process below)"
    )


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
    nproc = meta.get("processes") or 1
    lines = [
        f"program      {args} (pid {meta.get('pid')}, {how}, "
        f"{(meta.get('wall_ns') or 0) / 1e9:.2f} s wall, {meta.get('threads')} threads"
        + (f" in {nproc} processes" if nproc > 1 else "")
        + f", at most {meta.get('max_live_threads')} at once, on {cpu.get('usable')} CPUs)",
        f"in sections  {totals.get('cs_percent', 0):.1f}% of thread time "
        f"({(totals.get('thread_ns') or 0) / 1e9:.2f} s) inside critical sections, "
        f"{totals.get('sites', 0)} lock sites"
        + (" (summed over the processes)" if nproc > 1 else ""),
    ]
    if nproc > 1:
        lines.append(f"processes    {processes_line(profile)}")
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
        if period and period > 1 and timing.get("lost_cpu_seen") is False:
            lines.append(
                "timing       sections that lost their CPU are not seen "
                f"({timing.get('lost_cpu_unseen_why')}): under load a preemption in one "
                "sampled section counts for many; --sample 1 times every section"
            )
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


def _where_cell(s: dict) -> str:
    """The processes a site was used in: a pid, or pids, busiest part first."""
    procs = sorted(s.get("processes") or [], key=lambda q: -(q.get("cs_ns") or 0))
    pids = [str(q["pid"]) for q in procs]
    return ",".join(pids[:2]) + (f",+{len(pids) - 2}" if len(pids) > 2 else "")


def _changes_cell(s: dict) -> str:
    n = s.get("owner_changes")
    return "n/a" if n is None else f"{n:,}"


def site_table(sites: list[dict], with_processes: bool) -> str:
    headers = ["#", "site", "name", "kind", "in CS", "contended", "wait ms", "acquired"]
    headers += ["owner chg", "misses/CS", "inst"]
    align = "rlllrrrrrrr"
    if with_processes:
        headers.append("pids")
        align += "l"
    headers.append("recommend")
    align += "l"
    rows = []
    for s in sites:
        row = [
            s.get("id"),
            site_label(s),
            site_name(s),
            s.get("kind"),
            f"{s.get('cs_percent', 0):.1f}%",
            f"{s.get('contention_percent', 0):.1f}%",
            _ms(s.get("wait_ns")),
            f"{s.get('acquisitions', 0):,}",
            _changes_cell(s),
            locality_cell(s),
            s.get("instances"),
        ]
        if with_processes:
            row.append(_where_cell(s))
        row.append(s["recommendation"]["algorithm"])
        rows.append(row)
    return table(headers, rows, align)


def cond_rows(conds: list[dict]) -> tuple[list[str], list[list], str]:
    headers = ["#", "condition variable", "name", "waits", "timed", "timeouts", "wait ms"]
    headers += ["signals", "no waiter", "broadcasts", "no waiter"]
    rows = [
        [
            c.get("id"),
            site_label(c),
            site_name(c),
            f"{c.get('waits', 0):,}",
            f"{c.get('timed_waits', 0):,}",
            f"{c.get('timeouts', 0):,}",
            _ms(c.get("wait_ns")),
            f"{c.get('signals', 0):,}",
            f"{c.get('signals_without_waiter', 0):,}",
            f"{c.get('broadcasts', 0):,}",
            f"{c.get('broadcasts_without_waiter', 0):,}",
        ]
        for c in conds
    ]
    return headers, rows, "rllrrrrrrrr"


def text(profile: dict, thresholds: dict, top: int | None, root: str | Path | None = None) -> str:
    sites = rerank(profile, thresholds)
    shown = sites[:top] if top else sites
    multi = len(document.processes(profile)) > 1
    out = summary_lines(profile, thresholds)
    out.append("")
    out.append(site_table(shown, multi))
    if not sites:
        out.append("(the program used no pthread lock)")
    if len(shown) < len(sites):
        out.append(f"({len(sites) - len(shown)} more sites; --top to show more)")
    out.append("")
    for s in shown:
        r = s["recommendation"]
        out.append(f"{s.get('id')}. {site_label(s)} -> {r['algorithm']}: {r['reason']}")
    out += hot_lines(shown, source_root(profile, root))
    conds = profile.get("condition_variables") or []
    if conds:
        cshown = conds[:top] if top else conds
        out.append("")
        out.append("condition variables (signals and broadcasts that found no thread waiting)")
        out.append(table(*cond_rows(cshown)))
        if len(cshown) < len(conds):
            out.append(f"({len(conds) - len(cshown)} more; --top to show more)")
    if multi:
        per = 3 if top is None else top
        for p in ranked_processes(profile):
            m, t = p["meta"], p.get("totals") or {}
            share = m.get("share") or {}
            out.append("")
            out.append(f"process {process_label(m)}{'  <- busiest' if m.get('busiest') else ''}")
            out.append(
                f"  {m.get('threads')} threads, {t.get('acquisitions', 0):,} acquisitions "
                f"({share.get('acquisitions_percent', 0):.1f}% of the run's), "
                f"{share.get('cs_percent', 0):.1f}% of the run's critical-section time, "
                f"{t.get('cs_percent', 0):.1f}% of its own thread time in critical sections"
            )
            psites = rerank(profile, thresholds, p)
            if psites:
                out.append(_indent(site_table(psites[:per], False)))
                if len(psites) > per:
                    out.append(f"  ({len(psites) - per} more sites in this process)")
            pconds = p.get("condition_variables") or []
            if pconds:
                out.append(
                    f"  condition variables: {len(pconds)}, "
                    f"{sum(c.get('waits', 0) for c in pconds):,} waits, "
                    f"{sum(c.get('signals', 0) for c in pconds):,} signals, "
                    f"{sum(c.get('broadcasts', 0) for c in pconds):,} broadcasts"
                )
    return "\n".join(out) + "\n"


def _indent(text_: str) -> str:
    return "\n".join("  " + line for line in text_.splitlines())


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
        "condition_variables": profile.get("condition_variables") or [],
        "processes": [
            {
                "meta": p.get("meta") or {},
                "totals": p.get("totals") or {},
                "sites": rerank(profile, thresholds, p)[: top or None],
                "condition_variables": p.get("condition_variables") or [],
            }
            for p in document.processes(profile)
        ],
    }


_CSS = """
body { font-family: sans-serif; margin: 2em; color: #222; max-width: 1200px; }
h1 { font-size: 1.4em; } h2 { font-size: 1.15em; margin-top: 1.6em; }
table { border-collapse: collapse; font-size: 0.9em; }
th, td { border-bottom: 1px solid #ddd; padding: 4px 8px; text-align: left; vertical-align: top; }
td.n { text-align: right; font-variant-numeric: tabular-nums; }
.est { color: #8a5a00; } .note { color: #555; }
pre { background: #f6f6f6; padding: 8px; white-space: pre-wrap; overflow-wrap: anywhere; }
td.n { white-space: nowrap; } td { overflow-wrap: break-word; }
svg { max-width: 100%; height: auto; }
.chart { margin: 1em 0; }
"""


def html(
    profile: dict, thresholds: dict, top: int | None, source: str, root: str | Path | None = None
) -> str:
    sites = rerank(profile, thresholds)
    shown = sites[: top or 20]
    labels = [site_label(s) for s in shown]
    v = thresholds["values"]
    cs_chart = charts.bar_chart(
        "Share of thread time in each site's critical sections",
        labels,
        {"in critical sections (%)": [s.get("cs_percent") for s in shown]},
        y_label="% of thread time",
        x_label="site",
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
            f"<td class=n>{escape(_changes_cell(s))}</td>"
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
<th>wait ms</th><th>hold ms</th><th>acquired</th><th>owner changes</th><th>trylock fails</th>
<th>cond waits</th>
<th>misses/CS</th><th>instances</th><th>recommendation</th></tr>
{"".join(rows)}
</table>
{_html_hot(shown, source_root(profile, root))}
{_html_conds(profile, top)}
{_html_processes(profile, thresholds)}
<div class=chart>{cs_chart}</div>
<div class=chart>{time_chart}</div>
<div class=chart>{loc_chart}</div>
</body></html>
"""


def _html_hot(sites: list[dict], root: Path | None) -> str:
    rows = []
    for h in hot_sections(sites, root):
        c = h["callsite"]
        src = f"<br><code>{escape(h['source'])}</code>" if h["source"] else ""
        rows.append(
            f"<tr><td>{escape(h['site'])}</td><td>{escape(callsite_label(c))}{src}</td>"
            f"<td class=n>{h['share']:.1f}%</td><td class=n>{c.get('acquisitions', 0):,}</td>"
            f"<td class=n>{c.get('contended', 0):,}</td><td class=n>{_ms(c.get('wait_ns'))}</td>"
            f"<td class=n>{_ms(c.get('hold_ns'))}</td></tr>"
        )
    if not rows:
        return ""
    return (
        "<h2>Hot critical sections</h2><p class=note>Where the hot sites are taken (the caller "
        "of lock, trylock, timedlock or condition wait), by share of the site's "
        "critical-section time.</p><table><tr><th>site</th><th>taken at</th>"
        "<th>share of site</th><th>acquired</th><th>contended</th><th>wait ms</th>"
        f"<th>hold ms</th></tr>{''.join(rows)}</table>"
    )


def _html_table(headers: list[str], rows: list[list], align: str) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = "".join(
        "<tr>"
        + "".join(
            f"<td{' class=n' if a == 'r' else ''}>{escape('' if c is None else str(c))}</td>"
            for c, a in zip(r, align, strict=True)
        )
        + "</tr>"
        for r in rows
    )
    return f"<table><tr>{head}</tr>{body}</table>"


def _html_conds(profile: dict, top: int | None) -> str:
    conds = profile.get("condition_variables") or []
    if not conds:
        return ""
    headers, rows, align = cond_rows(conds[:top] if top else conds)
    return (
        "<h2>Condition variables</h2>\n<p class=note>Per site: waits (timed ones and their "
        "timeouts), the time waited, and signals and broadcasts, with those that found no "
        "thread waiting.</p>\n" + _html_table(headers, rows, align)
    )


def _html_processes(profile: dict, thresholds: dict) -> str:
    procs = document.processes(profile)
    if len(procs) < 2:
        return ""
    active = ranked_processes(profile)
    rows = []
    for p in procs:
        m, t = p["meta"], p.get("totals") or {}
        share = m.get("share") or {}
        rows.append(
            [
                m.get("pid"),
                m.get("started_by"),
                m.get("parent_pid"),
                " ".join([m.get("program") or "?", *m.get("arguments", [])]),
                m.get("threads"),
                f"{t.get('acquisitions', 0):,}",
                f"{share.get('cs_percent', 0):.1f}%",
                f"{share.get('acquisitions_percent', 0):.1f}%",
                "busiest" if m.get("busiest") else "",
            ]
        )
    parts = [
        "<h2>Processes</h2>",
        f"<p>{escape(processes_line(profile))}</p>",
        _html_table(
            [
                "pid",
                "started by",
                "parent",
                "command",
                "threads",
                "acquired",
                "share of CS time",
                "share of acquisitions",
                "",
            ],
            rows,
            "rllllrrrl",
        ),
    ]
    for p in active:
        m = p["meta"]
        parts.append(f"<h2>{escape('Process ' + process_label(m))}</h2>")
        sites = rerank(profile, thresholds, p)
        if sites:
            srows = [
                [
                    s.get("id"),
                    site_label(s),
                    site_name(s),
                    s.get("kind"),
                    f"{s.get('cs_percent', 0):.2f}%",
                    f"{s.get('contention_percent', 0):.1f}%",
                    _ms(s.get("wait_ns")),
                    _ms(s.get("hold_ns")),
                    f"{s.get('acquisitions', 0):,}",
                    _changes_cell(s),
                    s["recommendation"]["algorithm"],
                ]
                for s in sites
            ]
            parts.append(
                _html_table(
                    [
                        "#",
                        "site",
                        "name",
                        "kind",
                        "in CS (its threads)",
                        "contended",
                        "wait ms",
                        "hold ms",
                        "acquired",
                        "owner changes",
                        "recommendation",
                    ],
                    srows,
                    "rlllrrrrrrl",
                )
            )
        if p.get("condition_variables"):
            parts.append(_html_table(*cond_rows(p["condition_variables"])))
    return "\n".join(parts)
