"""Self-contained SVG charts (no network, no plotting library) for benchmark results and the
HTML report.  Two shapes cover what locktune draws: grouped bars and lines over an x axis.

    svg = bar_chart("Throughput vs glibc", ["4", "8"], {"mcs": [1.1, 0.9]}, y_label="ratio")
    Path("chart.svg").write_text(svg)
"""

from __future__ import annotations

import math
from html import escape

PALETTE = [
    "#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
    "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac",
    "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#8c564b", "#17becf",
]  # fmt: skip

WIDTH, HEIGHT = 760, 420
LEFT, RIGHT, TOP, BOTTOM = 70, 170, 40, 60
CHAR_PX = 6.8  # the width of one character at font-size 12, generously
LABEL_MAX = 28  # characters of a vertical x label


def _nice_ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    if hi <= lo:
        hi = lo + 1.0
    raw = (hi - lo) / n
    mag = 10 ** math.floor(math.log10(raw))
    step = min((m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw), default=10 * mag)
    start = math.floor(lo / step) * step
    # Up to the first tick at or above hi: a last tick below the highest value let its bar
    # run out of the plot, over the chart's title (the report's time chart did).
    ticks, t = [round(start, 10)], start
    while ticks[-1] < hi - step * 1e-9:
        t += step
        ticks.append(round(t, 10))
    return ticks


def _fmt(v: float) -> str:
    if v == 0:
        return "0"
    if abs(v) >= 1e6:
        return f"{v / 1e6:g}M"
    if abs(v) >= 1e3:
        return f"{v / 1e3:g}k"
    return f"{v:g}"


def _frame(
    title: str,
    y_label: str,
    x_label: str,
    ticks: list[float],
    scale,
    extra: int = 0,
    legend: list[str] = (),
) -> list[str]:
    """The chart's frame; `extra` pixels below the plot for long (vertical) x labels, and
    room on the right for the longest legend entry (the plot keeps its size)."""
    w, h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    height = HEIGHT + extra
    width = WIDTH + max(0, int(max((len(n) for n in legend), default=0) * CHAR_PX) + 36 - RIGHT)
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
        f'<text x="{WIDTH / 2}" y="22" text-anchor="middle" font-size="15">{escape(title)}</text>',
    ]
    for t in ticks:
        y = scale(t)
        out.append(f'<line x1="{LEFT}" x2="{LEFT + w}" y1="{y:.1f}" y2="{y:.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{_fmt(t)}</text>')
    out.append(f'<line x1="{LEFT}" x2="{LEFT}" y1="{TOP}" y2="{TOP + h}" stroke="#333"/>')
    out.append(f'<line x1="{LEFT}" x2="{LEFT + w}" y1="{TOP + h}" y2="{TOP + h}" stroke="#333"/>')
    out.append(
        f'<text transform="translate(16,{TOP + h / 2}) rotate(-90)" text-anchor="middle">'
        f"{escape(y_label)}</text>"
    )
    out.append(
        f'<text x="{LEFT + w / 2}" y="{height - 14}" text-anchor="middle">{escape(x_label)}</text>'
    )
    return out


def _shorten(label: str, n: int) -> str:
    """At most n characters, keeping the end (a site's file:line ends with what matters)."""
    return label if len(label) <= n else "\u2026" + label[-(n - 1) :]


def _legend(names: list[str]) -> list[str]:
    out = []
    for i, name in enumerate(names):
        y = TOP + 10 + i * 18
        x = WIDTH - RIGHT + 14
        color = PALETTE[i % len(PALETTE)]
        out.append(f'<rect x="{x}" y="{y - 9}" width="12" height="12" fill="{color}"/>')
        out.append(f'<text x="{x + 18}" y="{y + 1}">{escape(name)}</text>')
    return out


def _y_scale(values: list[float], reference: float | None, log: bool = False):
    finite = [v for v in values if v is not None and math.isfinite(v)]
    if reference is not None:
        finite.append(reference)
    h = HEIGHT - TOP - BOTTOM
    if log:
        pos = [v for v in finite if v > 0] or [1.0]
        lo, hi = math.floor(math.log10(min(pos))), math.ceil(math.log10(max(pos)))
        hi = max(hi, lo + 1)
        ticks = [10.0**e for e in range(lo, hi + 1)]

        def scale(v: float) -> float:
            v = max(v, 10.0**lo)
            return TOP + h - (math.log10(v) - lo) / (hi - lo) * h

        return ticks, scale
    lo = min(0.0, min(finite, default=0.0))
    ticks = _nice_ticks(lo, max(finite, default=1.0))
    lo, hi = ticks[0], ticks[-1]

    def scale(v: float) -> float:
        return TOP + h - (v - lo) / (hi - lo) * h

    return ticks, scale


def bar_chart(
    title: str,
    groups: list[str],
    series: dict[str, list[float | None]],
    y_label: str = "",
    x_label: str = "",
    reference: float | None = None,
    log: bool = False,
) -> str:
    """Grouped bars: one group per x label, one bar per series.  `reference` draws a dashed
    horizontal line (e.g. 1.0 for ratios to a baseline)."""
    values = [v for vs in series.values() for v in vs if v is not None]
    ticks, scale = _y_scale(values, reference, log)
    w = WIDTH - LEFT - RIGHT
    gw = w / max(1, len(groups))
    # Labels wider than their group are written vertically, shortened, below the plot.
    vertical = any(len(str(g)) * CHAR_PX > gw * 0.95 for g in groups)
    texts = [_shorten(str(g), LABEL_MAX) if vertical else str(g) for g in groups]
    extra = int(max(len(t) for t in texts) * CHAR_PX) - (BOTTOM - 36) if vertical else 0
    out = _frame(title, y_label, x_label, ticks, scale, max(0, extra), list(series))
    bw = gw * 0.8 / max(1, len(series))
    base = scale(ticks[0] if log else max(0.0, ticks[0]))
    for g, label in enumerate(groups):
        x0 = LEFT + g * gw + gw * 0.1
        cx, y = LEFT + g * gw + gw / 2, HEIGHT - BOTTOM + 10
        if vertical:
            out.append(
                f'<text transform="translate({cx + 4:.1f},{y}) rotate(-90)" text-anchor="end" '
                f'data-axis="x">{escape(texts[g])}<title>{escape(str(label))}</title></text>'
            )
        else:
            out.append(
                f'<text x="{cx:.1f}" y="{y + 6}" text-anchor="middle" data-axis="x">'
                f"{escape(texts[g])}</text>"
            )
        for s, (name, vs) in enumerate(series.items()):
            v = vs[g] if g < len(vs) else None
            if v is None:
                continue
            y = scale(v)
            top, height = min(y, base), abs(base - y)
            color = PALETTE[s % len(PALETTE)]
            out.append(
                f'<rect x="{x0 + s * bw:.1f}" y="{top:.1f}" width="{bw * 0.92:.1f}" '
                f'height="{height:.1f}" fill="{color}"><title>{escape(name)} {label}: {v:.4g}'
                "</title></rect>"
            )
    if reference is not None:
        y = scale(reference)
        out.append(
            f'<line x1="{LEFT}" x2="{LEFT + w}" y1="{y:.1f}" y2="{y:.1f}" stroke="#000" '
            'stroke-dasharray="5,4"/>'
        )
    out += _legend(list(series))
    out.append("</svg>")
    return "\n".join(out) + "\n"


def line_chart(
    title: str,
    xs: list[float],
    series: dict[str, list[float | None]],
    y_label: str = "",
    x_label: str = "",
    reference: float | None = None,
    log_x: bool = False,
    log_y: bool = False,
) -> str:
    """Lines over a numeric x axis (optionally logarithmic), one per series."""
    values = [v for vs in series.values() for v in vs if v is not None]
    ticks, scale = _y_scale(values, reference, log_y)
    out = _frame(title, y_label, x_label, ticks, scale, legend=list(series))
    w = WIDTH - LEFT - RIGHT
    fx = [math.log10(x) if log_x else x for x in xs]
    lo, hi = min(fx, default=0.0), max(fx, default=1.0)
    hi = hi if hi > lo else lo + 1

    def sx(i: int) -> float:
        return LEFT + (fx[i] - lo) / (hi - lo) * w

    for i, x in enumerate(xs):
        out.append(
            f'<text x="{sx(i):.1f}" y="{HEIGHT - BOTTOM + 16}" text-anchor="middle">{_fmt(x)}</text>'
        )
    for s, (name, vs) in enumerate(series.items()):
        color = PALETTE[s % len(PALETTE)]
        pts = [(sx(i), scale(v)) for i, v in enumerate(vs) if v is not None and i < len(xs)]
        if len(pts) > 1:
            d = " ".join(f"{x:.1f},{y:.1f}" for x, y in pts)
            out.append(
                f'<polyline points="{d}" fill="none" stroke="{color}" stroke-width="2">'
                f"<title>{escape(name)}</title></polyline>"
            )
        for x, y in pts:
            out.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{color}"/>')
    if reference is not None:
        y = scale(reference)
        out.append(
            f'<line x1="{LEFT}" x2="{LEFT + w}" y1="{y:.1f}" y2="{y:.1f}" stroke="#000" '
            'stroke-dasharray="5,4"/>'
        )
    out += _legend(list(series))
    out.append("</svg>")
    return "\n".join(out) + "\n"
