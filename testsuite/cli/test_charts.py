"""The SVG charts are well-formed and draw what they are given."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from locktune.charts import bar_chart, line_chart

NS = "{http://www.w3.org/2000/svg}"


def test_bar_chart_draws_one_bar_per_value():
    svg = bar_chart(
        "t", ["4", "8", "16"], {"a": [1.0, 2.0, None], "b": [0.5, 0.7, 3.0]}, reference=1.0
    )
    root = ET.fromstring(svg)
    bars = [r for r in root.iter(f"{NS}rect") if r.find(f"{NS}title") is not None]
    assert len(bars) == 5
    heights = {r.find(f"{NS}title").text: float(r.get("height")) for r in bars}
    assert heights["b 16: 3"] > heights["a 8: 2"] > heights["a 4: 1"] > heights["b 4: 0.5"]


def test_line_chart_log_axes():
    svg = line_chart("t", [100, 1000, 10000], {"x": [1.0, 10.0, 100.0]}, log_x=True, log_y=True)
    root = ET.fromstring(svg)
    pts = [c for c in root.iter(f"{NS}circle")]
    assert len(pts) == 3
    xs = [float(c.get("cx")) for c in pts]
    ys = [float(c.get("cy")) for c in pts]
    # Equal ratios on both log axes: equally spaced points on a straight line.
    assert abs((xs[1] - xs[0]) - (xs[2] - xs[1])) < 0.5
    assert abs((ys[0] - ys[1]) - (ys[1] - ys[2])) < 0.5
