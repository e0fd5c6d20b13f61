"""The profiler against a bundled app's own instrumentation (testsuite/apps, -DAPP_LOCKSTATS):
in one run, both count the same acquisitions of the same locks, and agree on hold times.

lockstats reports when the workers are done; the app's self-check takes a few locks after
that (kvcache: cache_lock once, each worker's stats mutex once), which only the profiler sees:
at most EXTRA acquisitions per lock."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from proftools import profile

APPS = Path(__file__).resolve().parents[1] / "apps"
EXTRA = 4


def lockstats(stderr: str) -> dict[str, dict]:
    out = {}
    for line in stderr.splitlines():
        if line.startswith("lockstats:"):
            kv = dict(re.findall(r"(\w+)=(\S+)", line))
            out[kv["name"]] = {k: float(v) for k, v in kv.items() if k != "name"}
    return out


def test_kvcache_counts_match_its_lockstats(run_locktune, tmp_path):
    src = APPS / "kvcache"
    if not src.is_dir():
        pytest.skip("testsuite/apps/kvcache is not in this tree")
    app = tmp_path / "kvcache"
    shutil.copytree(src, app)
    subprocess.run(["make", "-s", "CPPFLAGS=-DAPP_LOCKSTATS"], cwd=app, check=True)
    res, doc = profile(run_locktune, tmp_path, app / "kvcache", "-t", "4", "-n", "200000")
    assert res.returncode == 0, res.stderr
    truth = lockstats(res.stderr)
    assert truth, res.stderr
    by_symbol = {lk["site"]["symbol"]: lk for lk in doc["locks"]}
    for name in ("cache_lock", "slabs_lock", "stats_lock", "init_lock"):
        lock, t = by_symbol[name], truth[name]
        # A condition wait's return re-acquires the mutex: the profiler counts it as an
        # acquisition, lockstats as a cond_wait.
        extra = lock["acquisitions"] - (t["acquisitions"] + t["cond_waits"])
        assert 0 <= extra <= EXTRA, (name, lock["acquisitions"], t)
        assert lock["cond_waits"] == t["cond_waits"], name
    hot = by_symbol["cache_lock"]
    assert doc["locks"][0] is hot  # the hot lock ranks first
    # Waits: both time the same blocking lock calls.  Holds: the profiler's interval encloses
    # lockstats' (lockstats' own clock reads and bookkeeping, and an uncontended lock call,
    # are inside it), which matters for sections of a few hundred nanoseconds.
    t = truth["cache_lock"]
    assert hot["wait_ns"] == pytest.approx(t["wait_ns"], rel=0.1, abs=2e6)
    assert t["hold_ns"] * 0.8 <= hot["hold_ns"] <= t["hold_ns"] * 2.0 + 5e6
    # thread_stats.mutex: one lock per worker, initialised in a loop: one site, 4 instances.
    (per_thread,) = [lk for lk in doc["locks"] if lk["instances"] == 4]
    extra = per_thread["acquisitions"] - truth["thread_stats.mutex"]["acquisitions"]
    assert 0 <= extra <= EXTRA
