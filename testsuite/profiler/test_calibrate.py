"""`locktune calibrate` runs the lock benchmark under the profiler.  Without the benchmark
(issue #3) it must say so in one line; with it, a quick sweep must produce thresholds."""

from __future__ import annotations

import json

import pytest

from locktune import native
from locktune.errors import LocktuneError


def lockbench_present() -> bool:
    try:
        native.bin_path("locktune-lockbench")
        return True
    except LocktuneError:
        return False


def test_calibrate(run_locktune, tmp_path):
    out = tmp_path / "thresholds.json"
    res = run_locktune("calibrate", "--quick", "--duration", "0.1", "-o", str(out))
    if not lockbench_present():
        assert res.returncode == 1
        lines = res.stderr.strip().splitlines()
        assert len(lines) == 1 and "locktune-lockbench" in lines[0]
        assert "default thresholds" in lines[0]
        assert not out.exists()
        return
    assert res.returncode == 0, res.stderr
    doc = json.loads(out.read_text())
    assert doc["schema"] == "locktune-thresholds/1"
    t = doc["thresholds"]
    assert 0 <= t["lower_cs_percent"] <= 100
    assert t["upper_cs_percent"] is None or 0 <= t["upper_cs_percent"] <= 100
    assert len(doc["calibration"]["sweep"]) == 4
    report = run_locktune("report", "--help")
    assert report.returncode == 0


def test_calibrate_rejects_bad_delays(run_locktune):
    if not lockbench_present():
        pytest.skip("locktune-lockbench is not installed (issue #3)")
    res = run_locktune("calibrate", "--delays", "abc")
    assert res.returncode == 2 and len(res.stderr.strip().splitlines()) == 1
