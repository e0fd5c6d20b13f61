"""Per critical section (issue 13, item 2): where each lock is taken.

programs/callers.c takes one lock from four functions (lock, trylock, timedlock), with
sections of different lengths, and measures each caller's acquisitions, wait, hold and
critical-section time itself; the profile's `callsites[]` of that lock must name each
caller's lock call (file:line, function) with exact counts and times within the tolerance
of the truth tests (test_truth.py).  A second lock taken from 10 places has more callers
than the profiler's per-thread table: the rest is one "other callers" entry, said in the
report.
"""

from __future__ import annotations

import re

import pytest
from proftools import PROGRAMS, build, profile
from test_truth import REL, SLACK_NS

NAMES = ("short_path", "long_path", "try_path", "timed_path")


def call_lines() -> dict[str, int]:
    found = {}
    for n, line in enumerate((PROGRAMS / "callers.c").read_text().splitlines(), 1):
        for m in re.finditer(r"CALL:(\w+)", line):
            found[m.group(1)] = n
    return found


def parse(stdout: str) -> tuple[int, dict[str, dict[str, int]], int]:
    life, callers, many = 0, {}, 0
    for line in stdout.splitlines():
        w = line.split()
        if w[:2] == ["truth", "life_ns"]:
            life = int(w[2])
        elif w[:2] == ["truth", "caller"]:
            callers[w[2]] = dict(zip(w[3::2], map(int, w[4::2]), strict=True))
        elif w[:2] == ["truth", "many"]:
            many = int(w[3])
    return life, callers, many


def lock_named(doc: dict, name: str) -> dict:
    return next(lk for lk in doc["locks"] if lk["site"]["symbol"] == name)


@pytest.fixture(scope="module")
def callers_exe(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("callers")
    return build(tmp, "callers")


@pytest.fixture(scope="module")
def callers_run(run_locktune, callers_exe):
    tmp = callers_exe.parent
    res, doc = profile(run_locktune, tmp, callers_exe, "2", "400")
    assert res.returncode == 0, res.stderr
    return res, doc, tmp


@pytest.mark.parametrize("sample", ["16", "1"])
def test_each_caller_exact_counts_and_times(run_locktune, callers_exe, tmp_path, sample):
    """Counts exact.  Times: with every section timed (--sample 1), within the truth tests'
    tolerance; with the default sampling, also within the error of the site's own estimate
    (a preemption in an untimed uncontended section is lost to the site as a whole, the
    open case of docs/profiler.md "Accuracy"): the split among callers adds none."""
    res, doc = profile(run_locktune, tmp_path, callers_exe, "2", "400", opts=("--sample", sample))
    assert res.returncode == 0, res.stderr
    life, truth, _ = parse(res.stdout)
    assert life > 0 and set(truth) == set(NAMES)
    lines = call_lines()
    lock = lock_named(doc, "cs_lock")
    sites = lock["callsites"]
    errors, figures = [], []
    site_error = abs(lock["cs_ns"] - sum(t["cs_ns"] for t in truth.values()))
    if sample == "1":
        site_error = 0
    for name in NAMES:
        t = truth[name]
        found = [c for c in sites if c["file"] == "callers.c" and c["line"] == lines[name]]
        if len(found) != 1:
            errors.append(f"{name}: {len(found)} callsites at callers.c:{lines[name]}: {sites}")
            continue
        c = found[0]
        figures.append(
            f"{name}: {c['acquisitions']} acq (true {t['acquisitions']}), "
            f"cs {c['cs_ns'] / 1e6:.3f} ms (true {t['cs_ns'] / 1e6:.3f}), "
            f"hold {c['hold_ns'] / 1e6:.3f} (true {t['hold_ns'] / 1e6:.3f}), "
            f"wait {c['wait_ns'] / 1e6:.3f} (true {t['wait_ns'] / 1e6:.3f})"
        )
        if c["function"] != name:
            errors.append(f"{name}: function {c['function']!r}")
        if c["acquisitions"] != t["acquisitions"]:
            errors.append(f"{name}: {c['acquisitions']} acquisitions, true {t['acquisitions']}")
        allowed = REL * t["cs_ns"] + SLACK_NS * t["acquisitions"] + t["slow_release_ns"]
        allowed += site_error
        if abs(c["cs_ns"] - t["cs_ns"]) > allowed:
            errors.append(
                f"{name}: cs {c['cs_ns'] / 1e6:.3f} ms, true {t['cs_ns'] / 1e6:.3f} ms "
                f"(allowed +-{allowed / 1e6:.3f})"
            )
        if c["hold_ns"] + c["wait_ns"] > c["cs_ns"] * 1.001 + 1000:
            errors.append(f"{name}: hold + wait exceed the critical-section time")
    # The callers add up to the lock, and come by critical-section time.
    if sum(c["acquisitions"] for c in sites) != lock["acquisitions"]:
        errors.append("callsites' acquisitions do not add up to the lock's")
    if sum(c["contended"] for c in sites) != lock["contended"]:
        errors.append("callsites' contended acquisitions do not add up to the lock's")
    if [c["cs_ns"] for c in sites] != sorted((c["cs_ns"] for c in sites), reverse=True):
        errors.append("callsites not sorted by critical-section time")
    if len(sites) != len(NAMES):
        errors.append(f"{len(sites)} callsites, expected {len(NAMES)}")
    assert not errors, "\n".join(errors + figures + [str(lock.get("timing"))])


def test_callers_past_the_table_are_other_callers(callers_run, run_locktune):
    res, doc, tmp = callers_run
    _, _, many = parse(res.stdout)
    lock = lock_named(doc, "many_lock")
    sites = lock["callsites"]
    named = [c for c in sites if not c.get("other_callers")]
    other = [c for c in sites if c.get("other_callers")]
    assert len(named) == 7, sites  # LT_CALLSITES - 1 in the profiler's table
    assert {c["function"] for c in named} == {f"many_{i}" for i in range(7)}
    assert len(other) == 1 and other[0]["acquisitions"] == 300 and other[0]["file"] is None
    assert sum(c["acquisitions"] for c in sites) == lock["acquisitions"] == many
    # ... and the report says so, never silently.
    path = next(tmp.glob("callers-*.json"))
    rep = run_locktune("report", str(path), "--top", "5")
    assert rep.returncode == 0, rep.stderr
    assert "other callers" in rep.stdout, rep.stdout


def test_report_shows_hot_sections_with_source(callers_run, run_locktune):
    res, doc, tmp = callers_run
    lines = call_lines()
    path = next(tmp.glob("callers-*.json"))
    rep = run_locktune("report", str(path), "--source-root", str(PROGRAMS))
    assert rep.returncode == 0, rep.stderr
    hot = lock_named(doc, "cs_lock")["callsites"][0]
    # the hottest section of the hottest site: its place, function and source line text
    assert f"callers.c:{hot['line']}" in rep.stdout, rep.stdout
    assert f"in {hot['function']}()" in rep.stdout, rep.stdout
    text = (PROGRAMS / "callers.c").read_text().splitlines()[hot["line"] - 1].strip()
    assert text in rep.stdout, rep.stdout
    assert hot["line"] in lines.values()
    js = run_locktune("report", str(path), "--json")
    assert js.returncode == 0
    html = tmp / "r.html"
    rep = run_locktune("report", str(path), "--html", str(html), "--source-root", str(PROGRAMS))
    assert rep.returncode == 0, rep.stderr
    page = html.read_text()
    assert f"callers.c:{hot['line']}" in page
    assert (
        "pthread_mutex_lock(&amp;cs_lock)" in page or "pthread_mutex_trylock(&amp;cs_lock)" in page
    )
