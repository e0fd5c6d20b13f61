"""locktune-lockbench, the program: protected counters add up under every lock the runtime has
(and do not without a lock), its JSON document has the documented shape and sane values, and
bad usage is one line on stderr with exit status 2."""

from __future__ import annotations

import json
import os
import subprocess

import pytest
from conftest import clean_env

from locktune import native
from locktune.algorithms import names as algorithm_names
from locktune.bench import lockbench


@pytest.fixture(scope="module")
def program() -> str:
    return str(native.bin_path("locktune-lockbench"))


def run(program: str, *args: str, env: dict[str, str] | None = None, timeout: float = 120):
    return subprocess.run(
        [program, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=clean_env(**(env or {})),
    )


def document(res: subprocess.CompletedProcess) -> dict:
    assert res.returncode == 0, (res.returncode, res.stderr)
    doc = json.loads(res.stdout)
    assert lockbench.validate(doc) == [], lockbench.validate(doc)
    return doc


@pytest.fixture(scope="module")
def runtime_algorithms() -> list[str]:
    """Every algorithm this liblocktune has, asked of the program itself."""
    avail = lockbench.available(algorithm_names(), len(os.sched_getaffinity(0)))
    assert "posix" in avail.available, avail.unavailable  # never an empty list
    return sorted(avail.available)


@pytest.mark.parametrize("mode", ["lock", "execute"])
def test_counters_add_up_under_every_algorithm(program, runtime_algorithms, mode):
    """6 threads on this machine's CPUs, 5 lines per section: every line's counter must equal
    the number of sections run.  Time-bounded (--duration), so a FIFO spin lock that collapses
    when oversubscribed still finishes."""
    for algo in runtime_algorithms:
        res = run(
            program,
            *("--lock", "lt", "--mode", mode, "--threads", "6", "--lines", "5"),
            *("--delay", "50", "--duration", "0.25", "--warmup", "0.05", "--no-probe", "--json"),
            env={"LOCKTUNE_ALGO": f"default={algo}"},
        )
        doc = document(res)
        assert doc["config"]["algorithm"] == algo
        assert doc["check"]["ok"] is True, (algo, doc["check"])
        assert doc["check"]["expected"] == doc["run"]["ops_all_phases"] > 0, algo


@pytest.mark.parametrize("lock", ["pthread", "ticket", "lt", "ck-mcs", "ck-clh", "ck-ticket"])
def test_fixed_work_is_counted_exactly(program, lock):
    """Every lock, the Concurrency Kit peers included (libck-dev is installed by
    scripts/bootstrap: a build without it fails here), excludes: no update lost."""
    res = run(program, "--lock", lock, "--threads", "2", "--ops", "20000", "--lines", "3", "--json")
    doc = document(res)
    assert doc["run"]["per_thread_ops"] == [20000, 20000]
    assert doc["run"]["ops"] == doc["run"]["ops_all_phases"] == 40000
    assert doc["check"] == {"ok": True, "expected": 40000}
    assert doc["fairness"]["rsd"] == 0 and doc["fairness"]["gini"] == 0
    assert doc["fairness"]["min_max_ratio"] == 1


def test_no_lock_loses_updates_and_says_so(program):
    """The check can fail: without a lock, 4 threads on 2 CPUs lose updates.  A fixed amount
    of work (--ops), not a wall-clock duration: on a busy machine half a second may hold too
    few time slices of ours for two threads to meet inside a section (it failed so once)."""
    res = run(
        program,
        *("--lock", "none", "--threads", "4", "--lines", "20", "--delay", "0"),
        *("--ops", "2000000", "--no-probe", "--json"),
    )
    assert res.returncode == 1, res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "mutual exclusion failed" in lines[0], res.stderr
    doc = json.loads(res.stdout)
    assert doc["check"]["ok"] is False
    assert doc["check"]["counted"] < doc["check"]["expected"]


def test_document_shape_and_values(program):
    res = run(
        program,
        *("--lock", "pthread", "--threads", "3", "--lines", "5", "--delay", "200"),
        *("--duration", "0.3", "--json"),
    )
    doc = document(res)
    cfg = doc["config"]
    assert (cfg["mode"], cfg["lock"], cfg["threads"], cfg["lines"]) == ("lock", "pthread", 3, 5)
    assert cfg["delay_cycles"] == 200 and cfg["delay_ns"] > 0
    assert doc["tsc"]["hz"] > 1e8
    r = doc["run"]
    assert r["throughput_ops_s"] > 0 and r["ns_per_op"] > 0
    assert abs(r["throughput_ops_s"] * r["elapsed_s"] - r["ops"]) < 1
    assert 0.29 < r["elapsed_s"] < 2  # 0.3 s asked; a loaded machine wakes the timer late
    assert r["ops_all_phases"] >= r["ops"]
    f = doc["fairness"]
    assert 0 <= f["gini"] <= 1 and f["rsd"] >= 0 and 0 <= f["min_max_ratio"] <= 1
    assert 0.5 <= f["fairness_factor"] <= 1
    d = doc["distinct_threads"]
    assert d["window"] == 1000 and d["windows"] > 0
    assert 1 <= d["min"] <= d["mean"] <= d["max"] <= 3
    assert d["duplicate_ranks"] == 0
    h = doc["handover"]
    assert h["sampled"] == h["handovers"] + h["same_thread"] > 0
    if h["handovers"]:
        ns = h["ns"]
        assert 0 <= ns["min"] <= ns["median"] <= ns["p90"] <= ns["p99"] <= ns["max"]
    assert doc["cpu"]["utilisation"] > 0
    if len(os.sched_getaffinity(0)) >= 2:
        # The probe needs both CPUs to run its threads within a second; on a busy shared
        # machine one may not, and the probe says so (any other failure is a bug).
        sides = [doc["probe"][side] for side in ("before", "after")]
        for p in sides:
            if p["ok"]:
                assert p["ns_median"] > 0, p
            else:
                assert "waited more than a second" in p["why"], p
        if any(p["ok"] for p in sides):
            assert lockbench.round_trip_ns(doc) > 0


def test_validate_rejects_a_broken_document(program):
    doc = document(run(program, "--threads", "1", "--ops", "1000", "--json"))
    assert lockbench.validate(doc) == []
    del doc["fairness"]["gini"]
    doc["run"]["per_thread_ops"].append(5)
    problems = lockbench.validate(doc)
    assert any("gini" in p for p in problems)
    assert any("per_thread_ops" in p for p in problems)
    assert lockbench.validate({"schema": "other/1"})


def test_single_thread_sees_one_thread_per_window(program):
    doc = document(
        run(program, "--threads", "1", "--lines", "0", "--delay", "0", "--ops", "200000", "--json")
    )
    d = doc["distinct_threads"]
    assert d["windows"] > 10 and d["mean"] == d["min"] == d["max"] == 1
    assert doc["handover"]["handovers"] == 0
    assert doc["handover"]["same_thread"] > 0


def test_sequential_mode(program):
    doc = document(
        run(
            program,
            "--mode",
            "sequential",
            "--lines",
            "5",
            "--delay",
            "0",
            "--duration",
            "0.1",
            "--json",
        )
    )
    assert doc["config"]["threads"] == 1 and doc["config"]["lock"] == "none"
    assert doc["run"]["throughput_ops_s"] > 1e6
    assert doc["check"]["ok"]


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs")
def test_roundtrip_mode(program):
    doc = document(run(program, "--mode", "roundtrip", "--roundtrips", "20000", "--json"))
    rt = doc["roundtrip"]
    assert rt["ok"] and rt["cpus"][0] != rt["cpus"][1]
    assert 0 < rt["ns_min"] <= rt["ns_median"] <= rt["ns_max"]


def test_info_mode_names_the_bound_algorithm(program):
    doc = document(run(program, "--mode", "info", "--lock", "lt", "--json"))
    assert doc["info"]["algorithm"] == "posix"  # nothing configured: the default
    assert doc["info"]["lt_mutex_bytes"] > 0 and doc["info"]["usable_cpus"]


@pytest.mark.parametrize(
    "how",
    [{"env": {"LOCKTUNE_ALGO": "default=no-such-algo"}}, {"args": ["--algo", "no-such-algo"]}],
)
def test_unknown_algorithm_is_one_line_exit_2(program, how):
    res = run(program, "--lock", "lt", "--ops", "10", *how.get("args", []), env=how.get("env"))
    assert res.returncode == 2, res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "no-such-algo" in lines[0], res.stderr
    assert res.stdout == ""


BAD = [
    ["--threads", "0"],
    ["--threads", "many"],
    ["--threads"],
    ["--lines", "-1"],
    ["--lines", "5000"],
    ["--lock", "spinlock"],
    ["--mode", "fast"],
    ["--pin", "sometimes"],
    ["--cpus", "4096"],
    ["--cpus", "1-0"],
    ["--duration", "0"],
    ["--duration", "1", "--ops", "5"],
    ["--sample-period", "3"],
    ["--probe-cpus", "0"],
    ["--mode", "sequential", "--threads", "4"],
    ["--algo", "mcs,rcl"],
    ["--lock", "ticket", "--algo", "mcs"],
    ["--no-such-option"],
    ["stray-argument"],
]


@pytest.mark.parametrize("args", BAD, ids=lambda a: " ".join(a))
def test_bad_usage_is_one_line_exit_2(program, args):
    res = run(program, *args)
    assert res.returncode == 2, (res.returncode, res.stderr)
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("locktune-lockbench: error: "), res.stderr
    assert res.stdout == ""


def test_help(program):
    res = run(program, "--help")
    assert res.returncode == 0
    for option in ("--threads", "--duration", "--lines", "--delay", "--lock", "--mode", "--json"):
        assert option in res.stdout
