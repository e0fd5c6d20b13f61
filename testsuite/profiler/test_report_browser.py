"""The HTML report in a real browser (issue 13, item 6): Debian's chromium, headless, renders
the page `locktune report --html` wrote for a real profile (condtruth: several mutexes and
condition variables) and a multi-process one (procs: forked workers).  A script added to a
copy of the page (the page itself runs none) reports from inside the browser:

  - every JavaScript error and console error (none allowed);
  - every element whose box ends beyond the window's width, and the page's own width (nothing
    may run off the page: the summary block did);
  - in each chart, the title's box against every bar's (a bar covered the first chart's
    title), the x-axis labels against each other, and every text against the chart's frame
    (a long legend entry was cut);
  - the x-axis labels themselves, which must name the sites (they read `#1`, `#2`).

A screenshot of each page is kept under build/test-artifacts/ (scripts/test keeps the build
folder), for a person to look at.
"""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import ROOT
from proftools import build, profile

WIDTH = 1280
ARTIFACTS = ROOT / "build" / "test-artifacts"

CHECK = """<script>
(function () {
  var errors = [];
  window.addEventListener('error', function (e) { errors.push('error: ' + e.message); });
  window.addEventListener('unhandledrejection', function (e) { errors.push('rejection: ' + e.reason); });
  var ce = console.error;
  console.error = function () { errors.push('console.error: ' + Array.from(arguments).join(' ')); ce.apply(console, arguments); };
  function box(el) { var r = el.getBoundingClientRect(); return {l: r.left, r: r.right, t: r.top, b: r.bottom}; }
  function meets(a, b) { return a.l < b.r - 0.5 && b.l < a.r - 0.5 && a.t < b.b - 0.5 && b.t < a.b - 0.5; }
  function what(el) { return el.tagName.toLowerCase() + ': ' + (el.textContent || '').trim().slice(0, 60); }
  window.addEventListener('load', function () {
    var width = window.innerWidth, off = [], overlaps = [], labels = [];
    document.querySelectorAll('body *').forEach(function (el) {
      if (el.closest('svg') && el.tagName.toLowerCase() !== 'svg') return;
      var b = box(el);
      if (b.r > width + 1 && b.r > b.l) off.push(what(el) + ' ends at ' + Math.round(b.r));
      else if (el.clientWidth && el.scrollWidth > el.clientWidth + 1 &&
               getComputedStyle(el).overflowX === 'visible')
        off.push(what(el) + ': its content is ' + el.scrollWidth + ' px wide in ' + el.clientWidth);
    });
    document.querySelectorAll('svg').forEach(function (svg, k) {
      var texts = Array.from(svg.querySelectorAll('text'));
      var title = texts.find(function (t) { return t.getAttribute('font-size') === '15'; });
      var bars = Array.from(svg.querySelectorAll('rect')).filter(function (r) {
        return r.querySelector('title');
      });
      if (title) bars.forEach(function (r) {
        if (meets(box(title), box(r))) overlaps.push('chart ' + k + ': a bar covers the title');
      });
      var frame = box(svg);
      texts.forEach(function (t) {
        var b = box(t);
        if (b.r > frame.r + 1 || b.l < frame.l - 1 || b.b > frame.b + 1 || b.t < frame.t - 1)
          overlaps.push('chart ' + k + ': text cut by its frame: ' + t.textContent.slice(0, 40));
      });
      var xl = texts.filter(function (t) { return t.getAttribute('data-axis') === 'x'; });
      labels.push(xl.map(function (t) { return t.textContent; }));
      for (var i = 0; i < xl.length; i++)
        for (var j = i + 1; j < xl.length; j++)
          if (meets(box(xl[i]), box(xl[j])))
            overlaps.push('chart ' + k + ': labels ' + xl[i].textContent + ' and ' + xl[j].textContent + ' overlap');
    });
    document.body.setAttribute('data-check', JSON.stringify({
      errors: errors, off: off, overlaps: overlaps, labels: labels,
      page_width: document.documentElement.scrollWidth, window_width: width,
      charts: document.querySelectorAll('svg').length
    }));
  });
})();
</script>"""


def chromium() -> str:
    exe = shutil.which("chromium")
    assert exe, "Debian's chromium is installed by scripts/bootstrap"
    return exe


def browse(page: Path, tmp: Path, shot: Path) -> dict:
    """Render a copy of `page` with the checking script; what the script found."""
    copy = tmp / f"checked-{page.name}"
    text = page.read_text()
    copy.write_text(text.replace("<head>", "<head>" + CHECK, 1))
    common = [
        chromium(), "--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
        f"--user-data-dir={tmp / 'chromium-profile'}", "--virtual-time-budget=5000",
    ]  # fmt: skip
    res = subprocess.run(
        [*common, f"--window-size={WIDTH},1000", "--dump-dom", copy.as_uri()],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert res.returncode == 0, res.stderr[-2000:]
    m = re.search(r'data-check="([^"]*)"', res.stdout)
    assert m, "the page's load handler never ran: " + res.stdout[:500]
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [*common, f"--window-size={WIDTH},4000", f"--screenshot={shot}", page.as_uri()],
        capture_output=True,
        timeout=180,
        check=True,
    )
    assert shot.stat().st_size > 10_000, shot
    return json.loads(html.unescape(m.group(1)))


@pytest.fixture(scope="module")
def pages(run_locktune, tmp_path_factory):
    d = tmp_path_factory.mktemp("browser")
    out = {}
    for name, args in (("condtruth", []), ("procs", ["fork", "3", "20000"])):
        exe = build(d, name)
        res, doc = profile(run_locktune, d, exe, *args)
        assert res.returncode == 0, res.stderr
        prof = d / f"{name}.json"
        prof.write_text(json.dumps(doc))
        page = d / f"{name}.html"
        rep = run_locktune("report", str(prof), "--html", str(page))
        assert rep.returncode == 0, rep.stderr
        out[name] = page
    return d, out


@pytest.mark.parametrize("name", ["condtruth", "procs"])
def test_the_report_renders_cleanly_in_chromium(pages, name):
    d, out = pages
    found = browse(out[name], d, ARTIFACTS / f"report-{name}.png")
    assert found["errors"] == [], found["errors"]
    assert found["charts"] == 3, found
    assert found["off"] == [], found["off"][:10]
    assert found["page_width"] <= found["window_width"], found
    assert found["overlaps"] == [], found["overlaps"]
    for labels in found["labels"]:
        assert labels and all(f"{name}.c:" in x for x in labels), labels
