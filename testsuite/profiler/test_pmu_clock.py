"""Hardware counters and the clock, tested for real on this machine: the libpfm4 probe and
its reasons, event encoding, the per-thread counting path (where counters exist; skipped
with the reason where not), and the TSC/Ordo probe."""

from __future__ import annotations

import json
import subprocess

import pytest
from proftools import build, profile

from locktune import native


def probe(*args: str) -> dict:
    out = subprocess.run(
        [str(native.bin_path("locktune-probe")), *args], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


@pytest.fixture(scope="module")
def default_event():
    return probe()


@pytest.fixture(scope="module")
def hotcold(tmp_path_factory):
    return build(tmp_path_factory.mktemp("pmu"), "hotcold")


def test_probe_classifies_the_default_event(default_event):
    p = default_event
    assert p["event"]
    if p["available"]:
        assert p["reason"] == "" and p["count"] > 0
    else:
        # Either libpfm4 could not encode it, or the kernel refused it: the reason says which.
        assert p["reason"]
        assert p["pfm_error"] != 0 or p["open_errno"] != 0
        if p["open_errno"] in (2, 19, 95):  # ENOENT, ENODEV, EOPNOTSUPP
            assert "no hardware PMU" in p["reason"]


def test_libpfm4_encodes_and_counts_a_software_event():
    p = probe("--pmu", "perf::PERF_COUNT_SW_TASK_CLOCK")
    assert p["available"], p["reason"]
    assert p["type"] == 1  # PERF_TYPE_SOFTWARE
    assert p["config"] == 1  # PERF_COUNT_SW_TASK_CLOCK
    assert p["count"] > 0  # nanoseconds of the 8 MiB walk
    assert "PERF_COUNT_SW_TASK_CLOCK" in p["encoding"]


def test_unknown_event_names_the_libpfm4_error():
    p = probe("--pmu", "NO_SUCH_EVENT_XYZ")
    assert not p["available"]
    assert p["pfm_error"] != 0
    assert "cannot encode event 'NO_SUCH_EVENT_XYZ'" in p["reason"]


def test_profile_records_why_counters_are_unavailable(
    run_locktune, hotcold, tmp_path, default_event
):
    res, doc = profile(run_locktune, tmp_path, hotcold, "2", "50")
    assert res.returncode == 0, res.stderr
    pmu = doc["meta"]["pmu"]
    if default_event["available"] and pmu["available"]:
        assert all(lk["misses_per_cs"] is not None for lk in doc["locks"])
    elif not default_event["available"]:
        assert pmu == {
            "available": False,
            "event": default_event["event"],
            "reason": default_event["reason"],
        }
        assert all(lk["misses_per_cs"] is None for lk in doc["locks"])
        assert doc["locks"][0]["locality_estimate"]["label"] == "estimate"


def test_pmu_off(run_locktune, hotcold, tmp_path):
    _, doc = profile(run_locktune, tmp_path, hotcold, "2", "50", opts=("--pmu", "off"))
    assert doc["meta"]["pmu"]["available"] is False
    assert doc["meta"]["pmu"]["reason"] == "disabled (--pmu off)"


def test_software_event_opens_per_thread_but_cannot_be_read_with_rdpmc(
    run_locktune, hotcold, tmp_path
):
    """A software event opens on every thread, yet the kernel offers no user-space RDPMC
    for it: the profiler must say so rather than count through read() (a microsecond)."""
    _, doc = profile(
        run_locktune, tmp_path, hotcold, "2", "50", opts=("--pmu", "perf::PERF_COUNT_SW_TASK_CLOCK")
    )
    pmu = doc["meta"]["pmu"]
    assert pmu["event"] == "perf::PERF_COUNT_SW_TASK_CLOCK"
    assert pmu["available"] is False
    assert "RDPMC" in pmu["reason"]


def test_counting_cache_misses_per_section(run_locktune, hotcold, tmp_path, default_event):
    if not default_event["available"]:
        pytest.skip(f"no hardware counters here: {default_event['reason']}")
    _, doc = profile(run_locktune, tmp_path, hotcold, "2", "100")
    if not doc["meta"]["pmu"]["available"]:
        pytest.skip(f"counters open but cannot be read per section: {doc['meta']['pmu']['reason']}")
    hot = doc["locks"][0]
    assert hot["misses_per_cs"] is not None and hot["misses_per_cs"] >= 0


def test_clock_probe():
    c = probe("--clock", "--runs", "500")
    assert isinstance(c["invariant_tsc"], bool)
    assert c["cpus"] >= 1
    if c["clock"] == "tsc":
        assert 1e8 < c["tsc_hz"] < 1e10
        assert 0 <= c["ordo_boundary_cycles"] < 1e8
        if c["cpus"] >= 2 and not c["error"]:
            assert c["pairs"] >= 2
