"""`locktune report`: the ranked table, --json, --top, self-contained --html, thresholds, and
one-line errors on bad input."""

from __future__ import annotations

import json

import pytest
from proftools import build, profile

from locktune.algorithms import names as algorithm_names


@pytest.fixture(scope="module")
def prof(run_locktune, tmp_path_factory):
    d = tmp_path_factory.mktemp("report")
    exe = build(d, "hotcold")
    res, doc = profile(run_locktune, d, exe, "3", "150")
    assert res.returncode == 0, res.stderr
    path = d / "profile.json"
    path.write_text(json.dumps(doc))
    return path


@pytest.fixture
def no_config(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.delenv("LOCKTUNE_THRESHOLDS", raising=False)


def test_table(run_locktune, prof, no_config):
    res = run_locktune("report", str(prof))
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    header = next(i for i, ln in enumerate(lines) if ln.startswith("#  site"))
    for col in ("site", "name", "in CS", "contended", "wait ms", "misses/CS", "inst", "recommend"):
        assert col in lines[header]
    first = lines[header + 2]
    assert "hotcold.c:" in first and " hot " in first
    assert "documented defaults" in res.stdout
    recs = [ln for ln in lines if ln[:1].isdigit() and " -> " in ln]
    assert len(recs) == 2
    for ln in recs:
        algorithm = ln.split(" -> ")[1].split(":")[0]
        assert algorithm in algorithm_names()


def test_json_and_top(run_locktune, prof, no_config):
    res = run_locktune("report", str(prof), "--json")
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    assert doc["schema"] == "locktune-report/1"
    assert doc["thresholds"]["source"] == "defaults"
    shares = [s["cs_percent"] for s in doc["sites"]]
    assert shares == sorted(shares, reverse=True) and len(shares) == 2
    for s in doc["sites"]:
        assert s["recommendation"]["algorithm"] in algorithm_names()
    top = json.loads(run_locktune("report", str(prof), "--json", "--top", "1").stdout)
    assert [s["site"]["symbol"] for s in top["sites"]] == ["hot"]


def test_html_is_self_contained(run_locktune, prof, tmp_path, no_config):
    page = tmp_path / "report.html"
    res = run_locktune("report", str(prof), "--html", str(page))
    assert res.returncode == 0, res.stderr
    text = page.read_text()
    assert text.startswith("<!DOCTYPE html>") and text.count("<svg") == 3
    assert "hotcold.c:" in text
    for ref in ("src=", "href=", "@import", "url("):
        assert ref not in text
    stripped = text.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert "http://" not in stripped and "https://" not in stripped


def test_thresholds_file_changes_the_recommendation(run_locktune, prof, tmp_path, no_config):
    doc = json.loads(run_locktune("report", str(prof), "--json").stdout)
    cold = doc["sites"][1]
    assert cold["recommendation"]["algorithm"] == "posix"
    t = tmp_path / "t.json"
    t.write_text(
        json.dumps(
            {
                "schema": "locktune-thresholds/1",
                "thresholds": {"lower_cs_percent": 0.0, "min_contention_percent": 0.0},
            }
        )
    )
    doc2 = json.loads(run_locktune("report", str(prof), "--json", "--thresholds", str(t)).stdout)
    assert doc2["thresholds"]["source"] == str(t)
    assert doc2["sites"][1]["recommendation"]["algorithm"] != "posix"


@pytest.mark.parametrize(
    "content,message",
    [
        ("{not json", "not JSON"),
        ('{"schema": "something-else"}', "not a locktune profile"),
    ],
)
def test_bad_profile_is_one_line(run_locktune, tmp_path, content, message):
    p = tmp_path / "bad.json"
    p.write_text(content)
    res = run_locktune("report", str(p))
    assert res.returncode == 1
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0] and str(p) in lines[0]


def test_bad_thresholds_file_is_one_line(run_locktune, prof, tmp_path):
    t = tmp_path / "t.json"
    t.write_text('{"schema": "wrong"}')
    res = run_locktune("report", str(prof), "--thresholds", str(t))
    assert res.returncode == 1 and len(res.stderr.strip().splitlines()) == 1
    assert "not a thresholds file" in res.stderr


def test_the_recommendation_is_the_profiles_unless_thresholds_change(
    run_locktune, prof, tmp_path, no_config
):
    """Issue 15: the recommendation is computed once, by `locktune profile`; the report shows
    that one (here edited by hand, to tell the two apart), and computes again only under
    thresholds other than those the profile recorded."""
    doc = json.loads(prof.read_text())
    doc["locks"][0]["recommendation"] = {"algorithm": "twa", "reason": "set by hand"}
    edited = tmp_path / "edited.json"
    edited.write_text(json.dumps(doc))
    shown = json.loads(run_locktune("report", str(edited), "--json").stdout)
    assert shown["sites"][0]["recommendation"] == {"algorithm": "twa", "reason": "set by hand"}
    t = tmp_path / "t.json"
    t.write_text(
        json.dumps({"schema": "locktune-thresholds/1", "thresholds": {"lower_cs_percent": 99.0}})
    )
    again = json.loads(run_locktune("report", str(edited), "--json", "--thresholds", str(t)).stdout)
    assert again["sites"][0]["recommendation"]["algorithm"] == "posix", again["sites"][0]
