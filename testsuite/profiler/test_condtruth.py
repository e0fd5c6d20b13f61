"""Condition variables and owner changes against ground truth (issue 13, item 5: what
mutrace shows).

programs/condtruth.c counts, itself, every wait (timed or not, and the timeouts), signal and
broadcast it makes per condition variable, which of those found no thread waiting (where it
can know: docs in the program), and the owner changes of its mutexes (inside the critical
sections, after every acquisition).  The profile must have the same counts exactly, and a
wait time no longer than the program's own (its clock brackets the profiler's).
"""

from __future__ import annotations

import json

import pytest
from proftools import build, markers, profile


@pytest.fixture(scope="module")
def run(run_locktune, tmp_path_factory):
    d = tmp_path_factory.mktemp("condtruth")
    exe = build(d, "condtruth")
    res, doc = profile(run_locktune, d, exe)
    assert res.returncode == 0, res.stderr
    truth = {}
    for line in res.stdout.splitlines():
        w = line.split()
        truth[(w[0], w[1])] = {k: int(v) for k, v in (x.split("=") for x in w[2:])}
    path = d / "profile.json"
    path.write_text(json.dumps(doc))
    return doc, truth, path


def _at(entries: list[dict], line: int) -> dict:
    (e,) = [x for x in entries if x["site"]["file"] == "condtruth.c" and x["site"]["line"] == line]
    return e


@pytest.mark.parametrize("name", ["ready", "go", "idle"])
def test_condition_variable_counts(run, name):
    doc, truth, _ = run
    t = truth[("cond", name)]
    cv = _at(doc["condition_variables"], markers("condtruth")[name][0])
    assert cv["waits"] == t["waits"]
    assert cv["timed_waits"] == t["timed"]
    assert cv["timeouts"] == t["timeouts"]
    assert cv["signals"] == t["signals"]
    assert cv["signals_without_waiter"] == t["signals_unwaited"]
    assert cv["broadcasts"] == t["broadcasts"]
    assert cv["broadcasts_without_waiter"] == t["broadcasts_unwaited"]
    # The program's clock readings bracket the profiler's: never more, and not much less.
    # (A preemption between the program's reading and the profiler's, on a loaded machine,
    # is the program's alone: the lower bound is loose; idle's timeouts give a firm one.)
    assert cv["wait_ns"] <= t["wait_ns"] * 1.01 + 100_000
    assert cv["wait_ns"] >= t["wait_ns"] * 0.25
    if name == "idle":
        assert cv["wait_ns"] >= t["timeouts"] * 2_000_000
    assert cv["max_wait_ns"] <= cv["wait_ns"]
    # the same, per process
    (proc,) = doc["processes"]
    assert _at(proc["condition_variables"], cv["site"]["line"])["waits"] == t["waits"]


def test_condition_variables_stay_out_of_the_locks(run):
    doc, _, _ = run
    assert all(lk["kind"] != "cond" for lk in doc["locks"])
    assert doc["totals"]["condition_variables"] == 3
    assert _at(doc["condition_variables"], markers("condtruth")["go"][0])["origin"] == "init"
    assert _at(doc["condition_variables"], markers("condtruth")["ready"][0])["origin"] == "static"


@pytest.mark.parametrize("name", ["qlock", "hot"])
def test_owner_changes(run, name):
    doc, truth, _ = run
    t = truth[("lock", name)]
    lk = _at(doc["locks"], markers("condtruth")[name][0])
    assert lk["acquisitions"] == t["acquisitions"]
    assert lk["owner_changes"] == t["owner_changes"]
    assert lk["owner_change_percent"] == pytest.approx(
        100.0 * t["owner_changes"] / t["acquisitions"], abs=0.001
    )


def test_report_shows_them(run_locktune, run):
    doc, truth, path = run
    res = run_locktune("report", str(path))
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    header = next(ln for ln in lines if ln.startswith("#  site"))
    assert "owner chg" in header
    hot = next(ln for ln in lines if f"condtruth.c:{markers('condtruth')['hot'][0]} " in ln)
    assert f"{truth[('lock', 'hot')]['owner_changes']:,}" in hot.split()
    i = lines.index("condition variables (signals and broadcasts that found no thread waiting)")
    ready = next(ln for ln in lines[i:] if f"condtruth.c:{markers('condtruth')['ready'][0]}" in ln)
    t = truth[("cond", "ready")]
    cells = ready.split()
    assert cells[-4:] == [f"{t['signals']:,}", f"{t['signals_unwaited']:,}"] + [
        f"{t['broadcasts']:,}",
        f"{t['broadcasts_unwaited']:,}",
    ]
    html = path.with_suffix(".html")
    assert run_locktune("report", str(path), "--html", str(html)).returncode == 0
    page = html.read_text()
    assert "<h2>Condition variables</h2>" in page and "owner changes" in page
