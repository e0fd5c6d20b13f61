"""`locktune bench locks`: end to end with --quick (valid JSON, SVG charts, tables, unknown
algorithms reported), and the runner's plan and ratios checked on synthetic runs."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections import Counter

import pytest
from click.testing import CliRunner

from locktune.bench import lockbench, report, runner, sweeps
from locktune.bench.lockbench import GLIBC, Lock, RunFailed


@pytest.fixture(scope="module")
def quick(run_locktune, tmp_path_factory):
    out = tmp_path_factory.mktemp("bench") / "quick"
    res = run_locktune(
        "bench", "locks", "--quick", "--sweep", "all", "--algos", "posix,no-such-algo",
        "--out", str(out),
    )  # fmt: skip
    return res, out


def test_quick_runs_every_sweep(quick):
    res, out = quick
    assert res.returncode == 0, res.stderr
    doc = json.loads((out / "results.json").read_text())
    assert doc["schema"] == "locktune-bench-locks/1"
    assert [s["name"] for s in doc["sweeps"]] == sweeps.NAMES
    for key in ("cpu_model", "cpus", "hardware_counters", "kernel", "date", "load_average"):
        assert key in doc["machine"], key
    assert doc["settings"]["repeats"] == 2 and doc["settings"]["quick"] is True
    assert doc["algorithms"]["ran"] == ["posix"]
    assert "no-such-algo" in doc["algorithms"]["unavailable"]
    assert all(r["ok"] for r in doc["runs"]), [r["error"] for r in doc["runs"] if not r["ok"]]

    for sweep in doc["sweeps"]:
        for point in sweep["points"]:
            glibc = point["locks"]["glibc"]
            assert glibc["ratio"]["median"] == 1.0 and glibc["ratio"]["n"] == 2
            posix = point["locks"]["posix"]
            assert posix["runs"] == 2 and posix["ratio"]["n"] == 2
            assert posix["ratio"]["min"] <= posix["ratio"]["median"] <= posix["ratio"]["max"]
            assert posix["throughput_ops_s"]["median"] > 0
            if sweep["name"] == "uncontended":
                assert point["locks"]["bare-ticket"]["vs_bare_ticket"]["median"] == 1.0
                assert posix["vs_bare_ticket"]["n"] == 2
                assert point["locks"]["no-lock"]["ratio"] is None  # not a lock
                assert posix["net_ns_per_op"]["n"] == 2
            if sweep["name"] == "delay":
                assert point["locks"]["sequential"]["throughput_ops_s"]["median"] > 0
                assert posix["sequential_fraction"]["n"] == 2
    # Interleaved: every (sweep, point, lock) once per round, rounds in different orders.
    per_round = Counter((r["sweep"], r["point"], r["lock"], r["round"]) for r in doc["runs"])
    assert set(per_round.values()) == {1}
    rounds = [
        [(r["sweep"], r["point"], r["lock"]) for r in doc["runs"] if r["round"] == k]
        for k in (0, 1)
    ]
    assert sorted(rounds[0]) == sorted(rounds[1]) and rounds[0] != rounds[1]


def test_ck_peers_beside_ours(run_locktune, tmp_path):
    """Issue 12, item 8: Concurrency Kit's MCS, CLH and ticket locks run in the same rounds as
    ours, uncontended and at 2 threads, and each of ours is reported against its peer."""
    out = tmp_path / "peers"
    res = run_locktune(
        "bench", "locks", "--quick", "--sweep", "uncontended", "--sweep", "lines",
        "--lines", "1", "--algos", "mcs,clh,ticket", "--out", str(out),
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    doc = json.loads((out / "results.json").read_text())
    assert not [k for k in doc["algorithms"]["unavailable"] if k.startswith("ck-")], doc
    for sweep in doc["sweeps"]:
        for point in sweep["points"]:
            for ours, theirs in (("mcs", "ck-mcs"), ("clh", "ck-clh"), ("ticket", "ck-ticket")):
                peer = point["locks"][theirs]
                assert peer["runs"] == 2 and peer["ratio"]["n"] == 2, (sweep["name"], peer)
                mine = point["locks"][ours]["vs_peer"]
                assert mine["n"] == 2 and mine["median"] > 0, (sweep["name"], ours)
            assert point["locks"]["glibc"]["vs_peer"] is None
    assert "speed vs CK" in res.stdout


def test_quick_writes_charts(quick):
    res, out = quick
    svgs = sorted(p.name for p in out.glob("*.svg"))
    for name in (
        "uncontended.svg",
        "uncontended-net.svg",
        "oversubscribed.svg",
        "lines.svg",
        "delay-1lines.svg",
        "scaling.svg",
    ):
        assert name in svgs, svgs
    for name in svgs:
        root = ET.parse(out / name).getroot()
        assert root.tag.endswith("svg")
        assert "posix" in (out / name).read_text()


def test_quick_prints_tables(quick):
    res, _ = quick
    for title in (
        "Uncontended lock+unlock",
        "Oversubscribed",
        "Two threads",
        "Delay between",
        "Thread sweep",
    ):
        assert title in res.stdout
    assert "unavailable (" in res.stdout and "no-such-algo" in res.stdout
    assert "wrote " in res.stdout


def test_json_flag_prints_the_document(run_locktune, tmp_path):
    res = run_locktune(
        "bench", "locks", "--quick", "--sweep", "uncontended", "--algos", "posix", "--json",
        "--out", str(tmp_path / "j"),
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    assert doc == json.loads((tmp_path / "j" / "results.json").read_text())


def test_a_waiting_policy_is_benchmarked_beside_the_default(run_locktune, tmp_path):
    """`--algos mcs,mcs:spin` runs mcs under its default policy and under pure spin, side by
    side (issue 12: the before/after of the waiting policy); an unknown policy is reported as
    unavailable, as an unknown algorithm is."""
    res = run_locktune(
        "bench", "locks", "--quick", "--sweep", "uncontended", "--algos", "mcs,mcs:spin,mcs:nap",
        "--json", "--out", str(tmp_path / "w"),
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    assert doc["algorithms"]["ran"] == ["mcs", "mcs:spin"]
    assert list(doc["algorithms"]["unavailable"]) == ["mcs:nap"]
    assert "no policy of that name" in doc["algorithms"]["unavailable"]["mcs:nap"]
    envs = {r["lock"]: r["env"].get("LOCKTUNE_ALGO") for r in doc["runs"] if r["kind"] == "lt"}
    assert envs["mcs:spin"] == "default=mcs:spin"


@pytest.mark.parametrize(
    "args",
    [
        ["--repeats", "0"],
        ["--threads", "four"],
        ["--lines", "-1"],
        ["--sweep", "everything"],
        ["--algos", ","],
        ["--algos", "mcs:"],
        ["--algos", ":spin"],
        ["--duration", "0"],
    ],
    ids=lambda a: " ".join(a),
)
def test_bad_usage_is_one_line_exit_2(run_locktune, args):
    res = run_locktune("bench", "locks", *args)
    assert res.returncode == 2, (res.returncode, res.stderr)
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("locktune bench") and "error:" in lines[0]


def test_a_failed_run_is_recorded_and_the_command_fails(monkeypatch, tmp_path):
    """One lock's runs fail: the sweep goes on, results.json is written, exit status 1."""
    real = lockbench.run

    def flaky(args, env=None, timeout=600):
        if "--lock" in args and args[args.index("--lock") + 1] == "ticket":
            raise RunFailed("the run did not finish within 61 s")
        return real(args, env=env, timeout=timeout)

    monkeypatch.setattr(lockbench, "run", flaky)
    from locktune.cli import cli

    out = tmp_path / "r"
    res = CliRunner().invoke(
        cli,
        [
            "bench",
            "locks",
            "--quick",
            "--sweep",
            "uncontended",
            "--algos",
            "posix",
            "--out",
            str(out),
        ],
    )
    assert res.exit_code == 1, res.output
    doc = json.loads((out / "results.json").read_text())
    failed = [r for r in doc["runs"] if not r["ok"]]
    assert {r["lock"] for r in failed} == {"bare-ticket"} and len(failed) == 2
    posix = doc["sweeps"][0]["points"][0]["locks"]["posix"]
    assert posix["ratio"]["n"] == 2 and posix["vs_bare_ticket"] is None


# ---- the runner on synthetic runs ---------------------------------------------------------


def _run(lock, rnd, thr, rt=100.0, ok=True, sweep="lines", kind=None):
    return {
        "sweep": sweep, "point": 0, "round": rnd, "lock": lock, "kind": kind or "lt",
        "ok": ok, "error": None if ok else "boom", "throughput_ops_s": thr, "ns_per_op": 1e9 / thr,
        "cs_latency_cycles": 1.0, "rsd": 0.0, "gini": 0.0, "min_max_ratio": 1.0,
        "distinct_threads": 2.0, "handover_ns": 100.0, "same_thread_fraction": 0.5,
        "cpu_utilisation": 2.0, "rt_ns": rt,
    }  # fmt: skip


def test_ratios_are_taken_within_a_round():
    sweep = sweeps.Sweep("lines", "t", "lines", [sweeps.Point(2, 1, 100)])
    runs = [
        _run("glibc", 0, 100.0, kind="pthread"),
        _run("glibc", 1, 200.0, rt=400.0, kind="pthread"),
        _run("mcs", 0, 50.0),
        _run("mcs", 1, 300.0, rt=100.0),  # round 1: mcs near, glibc far
        _run("mcs", 2, 999.0),  # no glibc in round 2: no ratio
        _run("mcs", 3, 1.0, ok=False),
    ]
    s = runner.summarise([sweep], runs)[0]["points"][0]["locks"]
    mcs = s["mcs"]
    assert mcs["ratio"] == {"min": 0.5, "median": 1.0, "max": 1.5, "n": 2}
    assert mcs["ratio_same_regime"] == {"min": 0.5, "median": 0.5, "max": 0.5, "n": 1}
    assert mcs["runs"] == 3 and mcs["failed"] == 1 and mcs["errors"] == ["boom"]
    assert mcs["regimes"] == {"near": 3, "far": 0, "unknown": 0}
    assert s["glibc"]["regimes"] == {"near": 1, "far": 1, "unknown": 0}
    assert mcs["cost_in_round_trips"]["n"] == 3


def test_cost_ratio_is_ns_per_op():
    sweep = sweeps.Sweep("uncontended", "t", "", [sweeps.Point(1, 0, 0)], metric="cost")
    runs = [  # 20 ns, 10 ns, 12.5 ns per operation; 5 ns of it is the loop without a lock
        _run("glibc", 0, 50e6, sweep="uncontended", kind="pthread"),
        _run("bare-ticket", 0, 100e6, sweep="uncontended", kind="ticket"),
        _run("no-lock", 0, 200e6, sweep="uncontended", kind="none"),
        _run("mcs", 0, 80e6, sweep="uncontended"),
    ]
    locks = runner.summarise([sweep], runs)[0]["points"][0]["locks"]
    mcs = locks["mcs"]
    assert mcs["ratio"]["median"] == pytest.approx(50 / 80)
    assert mcs["vs_bare_ticket"]["median"] == pytest.approx(100 / 80)
    assert mcs["net_ns_per_op"]["median"] == pytest.approx(7.5)
    assert mcs["net_ratio"]["median"] == pytest.approx(7.5 / 15)
    assert mcs["net_vs_bare_ticket"]["median"] == pytest.approx(7.5 / 5)
    assert locks["no-lock"]["ratio"] is None and locks["no-lock"]["net_ratio"] is None


def test_plan_interleaves_and_shuffles():
    chosen = sweeps.build(["oversubscribed", "lines"], quick=False)
    settings = runner.Settings(repeats=3, seed=7)
    order = runner.plan(chosen, ["mcs", "posix"], settings)
    # oversubscribed: glibc, mcs, posix at 4 points; lines: those and the 3 CK peers at 3
    assert len(order) == 3 * (4 * 3 + 3 * 6)
    assert order == runner.plan(chosen, ["mcs", "posix"], settings)  # the seed decides
    assert order != runner.plan(chosen, ["mcs", "posix"], runner.Settings(repeats=3, seed=8))
    # Within a round, each point's locks run back to back (ratios within a round).
    blocks: list[list] = []
    for entry in order:
        if blocks and blocks[-1][0][:3] == entry[:3]:
            blocks[-1].append(entry)
        else:
            blocks.append([entry])
    assert len(blocks) == 3 * (4 + 3)  # each (round, sweep, point) one contiguous block
    peers = ["ck-clh", "ck-mcs", "ck-ticket"]
    for block in blocks:
        want = ["glibc", "mcs", "posix"] + (peers if block[0][1].name == "lines" else [])
        assert sorted(lock.label for *_, lock in block) == sorted(want)
    firsts = [block[0][3].label for block in blocks]
    assert len(set(firsts)) > 1  # not always glibc first


def test_command_for_each_kind_of_lock():
    settings = runner.Settings(duration=0.5, tsc_hz=2e9, usable_cpus=(0, 1, 2, 3))
    p = sweeps.Point(None, 5, 1000)
    args, env = runner.command(p, GLIBC, settings)
    assert args[args.index("--threads") + 1] == "4" and env == {}
    assert args[args.index("--mode") + 1] == "lock"
    args, env = runner.command(p, Lock("lt", "mcs"), settings)
    assert env == {"LOCKTUNE_ALGO": "default=mcs"}
    args, env = runner.command(p, Lock("lt", "rcl"), settings)
    assert env == {"LOCKTUNE_ALGO": "default=rcl", "LOCKTUNE_SERVERS": "3"}
    assert args[args.index("--cpus") + 1] == "0,1,2"
    assert args[args.index("--threads") + 1] == "3"
    assert args[args.index("--mode") + 1] == "execute"
    args, env = runner.command(p, lockbench.SEQUENTIAL, settings)
    assert args[args.index("--mode") + 1] == "sequential" and "--threads" not in args
    assert args[args.index("--delay") + 1] == "0"
    forced = runner.Settings(mode="lock", usable_cpus=(0, 1))
    args, _ = runner.command(p, Lock("lt", "rcl"), forced)
    assert args[args.index("--mode") + 1] == "lock"


def test_default_out_dir_names_machine_and_date(tmp_path):
    d = report.default_out_dir(
        {
            "cpu_model": "AMD EPYC 9R14 96-Core Processor",
            "cpus": 2,
            "date": "2026-11-21T10:15:00+0000",
        },
        root=tmp_path,
    )
    assert d == tmp_path / "bench" / "results" / "amd-epyc-9r14-2cpu-20261121-101500"


def test_unavailable_algorithms_are_grouped_by_reason():
    lines = report.unavailable_lines(
        {
            "mcs": "LOCKTUNE_ALGO='default=mcs': unknown algorithm 'mcs' (known: posix)",
            "twa": "LOCKTUNE_ALGO asks for algorithm 'twa' but liblocktune bound 'posix': this "
            "liblocktune has no algorithm 'twa'",
            "rcl": "needs a server CPU and a client CPU; 1 CPU is usable",
        }
    )
    assert lines == [
        "unavailable (not in this liblocktune): mcs, twa",
        "unavailable (needs a server CPU and a client CPU; 1 CPU is usable): rcl",
    ]
