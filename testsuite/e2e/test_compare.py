"""`locktune bench compare`: the plumbing on a scripted program whose throughput each
configuration fixes (exact ratios, result checks, timeouts, usage errors), then the real
thing on the bundled `bank` app: original and rewritten trees built by their Makefile, an
edited header rebuilt, every configuration's result equal to the original's."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import textwrap

import pytest
from conftest import ROOT

APP = ROOT / "testsuite" / "apps" / "bank"
BANK_CHECK = "^total "


@pytest.fixture(scope="module")
def trees(tmp_path_factory, run_locktune):
    """bank: the original built under bear, profiled, rewritten with the profile."""
    base = tmp_path_factory.mktemp("compare")
    original = base / "bank"
    shutil.copytree(APP, original)
    subprocess.run(["make", "-s", "clean"], cwd=original, capture_output=True)
    res = subprocess.run(["bear", "--", "make", "-s"], cwd=original, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    prof = base / "profile.json"
    res = run_locktune(
        "profile",
        "-o",
        str(prof),
        "--source-root",
        str(original),
        "--",
        "./bank",
        "4",
        "20000",
        cwd=original,
    )
    assert res.returncode == 0, res.stderr
    rewritten = base / "bank-locktune"
    res = run_locktune(
        "rewrite", "--compile-commands", str(original / "compile_commands.json"),
        "--profile", str(prof), "--out", str(rewritten), str(original),
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    subprocess.run(["make", "-s", "clean"], cwd=rewritten, capture_output=True)
    return base, original, rewritten


# A program whose throughput each configuration fixes: the ratios are known exactly.
SCRIPTED = textwrap.dedent(
    """\
    case "${LOCKTUNE_ALGO:-}" in
      "") t=200 ;;
      default=posix) t=300 ;;
      default=shfl-block) t=100 ;;
      *) t=250 ;;
    esac
    echo "result: same for everyone"
    echo "throughput: $t ops/s"
    """
)


def compare(run_locktune, original, rewritten, *args, command=None, out=None):
    cmd = ["bench", "compare", str(original), str(rewritten), *args]
    if out is not None:
        cmd += ["--out", str(out)]
    return run_locktune(*cmd, "--", *(command or ["sh", "-c", SCRIPTED]))


def test_ratios_are_taken_within_a_round(run_locktune, trees, tmp_path):
    _base, original, rewritten = trees
    out = tmp_path / "out"
    res = compare(
        run_locktune, original, rewritten,
        "--no-build", "--algos", "posix,shfl-block", "--config", "mine:default=mcs",
        "--repeats", "3", "--no-probe", out=out,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    doc = json.loads((out / "results.json").read_text())
    assert doc["schema"] == "locktune-bench-compare/1"
    assert doc["machine"]["cpus"] >= 1 and "cpu_model" in doc["machine"]
    v = doc["points"][0]["variants"]
    assert set(v) == {"original", "recommended", "posix", "shfl-block", "mine"}
    expected = {"posix": 1.5, "shfl-block": 0.5, "mine": 1.25, "recommended": 1.0}
    for name, ratio in expected.items():
        assert v[name]["ratio"] == {"min": ratio, "median": ratio, "max": ratio, "n": 3}, name
    assert doc["points"][0]["best"] == {"variant": "posix", "ratio": 1.5}
    # 5 variants x 3 rounds, each round a shuffled order of all five
    runs = doc["runs"]
    assert len(runs) == 15 and all(r["ok"] for r in runs)
    rounds = [[r["variant"] for r in runs if r["round"] == k] for k in range(3)]
    assert all(sorted(r) == sorted(v) for r in rounds)
    assert len({tuple(r) for r in rounds}) > 1, "the order is not shuffled between rounds"
    assert v["mine"]["what"] == "LOCKTUNE_ALGO=default=mcs"
    assert (out / "compare.svg").read_text().startswith("<svg")
    assert "best posix 1.50x" in res.stdout and "recommended 1.00x" in res.stdout


def test_a_different_result_fails_the_run(run_locktune, trees, tmp_path):
    _base, original, rewritten = trees
    script = 'echo "result: ${LOCKTUNE_ALGO:-none}"; echo "throughput: 10 ops/s"'
    res = compare(
        run_locktune, original, rewritten, "--no-build", "--algos", "posix", "--quick",
        "--no-probe", command=["sh", "-c", script], out=tmp_path / "o",
    )  # fmt: skip
    assert res.returncode == 1
    line = res.stderr.strip()
    assert "\n" not in line and "result differs from the original's" in line
    assert "result: default=posix" in line
    # With --check '' nothing is compared and the runs stand.
    res = compare(
        run_locktune, original, rewritten, "--no-build", "--algos", "posix", "--quick",
        "--no-probe", "--check", "", command=["sh", "-c", script], out=tmp_path / "o2",
    )  # fmt: skip
    assert res.returncode == 0, res.stderr


def test_a_slow_variant_is_stopped_and_not_run_again(run_locktune, trees, tmp_path):
    _base, original, rewritten = trees
    script = '[ -n "${LOCKTUNE_ALGO:-}" ] && sleep 30; echo "throughput: 10 ops/s"'
    out = tmp_path / "o"
    res = compare(
        run_locktune, original, rewritten, "--no-build", "--algos", "posix", "--repeats", "3",
        "--timeout", "0.5", "--no-probe", command=["sh", "-c", script], out=out,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr  # a timeout is a result, not a failure
    doc = json.loads((out / "results.json").read_text())
    posix = [r for r in doc["runs"] if r["variant"] == "posix"]
    assert sum(1 for r in posix if not r.get("skipped")) == 1  # run once, then skipped
    assert all(r["timed_out"] for r in posix)
    assert doc["points"][0]["variants"]["posix"]["timed_out"] == 3
    assert "posix (timed out)" in res.stdout
    assert max(r.get("wall_s", 0) for r in posix) < 10


def test_unavailable_algorithms_are_reported_not_run(run_locktune, trees, tmp_path):
    _base, original, rewritten = trees
    res = compare(
        run_locktune, original, rewritten, "--no-build", "--algos", "posix,nosuchlock",
        "--quick", "--no-probe", out=tmp_path / "o",
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert "unavailable (not in this liblocktune): nosuchlock" in res.stdout
    doc = json.loads((tmp_path / "o" / "results.json").read_text())
    assert "nosuchlock" in doc["unavailable"]
    assert {r["variant"] for r in doc["runs"]} == {"original", "recommended", "posix"}


@pytest.mark.parametrize(
    "args,message",
    [
        (["--no-build", "--", "./bank", "{threads}"], "give the counts with --threads"),
        (["--no-build", "--threads", "2,4", "--", "./bank", "4"], "needs {threads}"),
        (["--no-build", "--header", "h.h", "--", "./bank"], "cannot go with --no-build"),
        (["--no-build", "--config", "nope.c:1=mcs", "--", "./bank"], "nope.c:1: no such site"),
        (["--no-build", "--config", "default", "--", "./bank"], "expected SITE=ALGORITHM"),
        (["--no-build", "--metric", "throughput", "--", "./bank"], "needs a group"),
        (["--no-build", "--site", "99", "--", "./bank"], "--site 99: no such site"),
    ],
)
def test_bad_usage_is_one_line_and_exit_2(run_locktune, trees, args, message):
    _base, original, rewritten = trees
    res = run_locktune("bench", "compare", str(original), str(rewritten), *args)
    assert res.returncode == 2, res.stderr
    line = res.stderr.strip()
    assert "\n" not in line and message in line, line


def test_rewritten_tree_without_a_header(run_locktune, trees, tmp_path):
    _base, original, _rewritten = trees
    res = run_locktune("bench", "compare", str(original), str(original), "--", "./bank")
    assert res.returncode == 2
    assert "locktune_config.h: missing" in res.stderr and "\n" not in res.stderr.strip()


def test_bank_built_and_compared_end_to_end(run_locktune, trees, tmp_path):
    """Both trees built by bank's own Makefile, an edited header rebuilt, one site tried on
    each algorithm: every configuration's result line is the original's."""
    base, original, rewritten = trees
    edited = tmp_path / "all_spin.h"
    text = (rewritten / "locktune_config.h").read_text()
    edited.write_text(re.sub(r'"[a-z-]+", (-?\d+)\}', r'"spin", \1}', text))
    assert edited.read_text().count('"spin",') == text.count("{LT_SITE_")
    out, builds = tmp_path / "out", tmp_path / "builds"
    res = compare(
        run_locktune, original, rewritten,
        "--algos", "posix,shfl-block", "--site", "hot", "--header", f"spin:{edited}",
        "--threads", "1,3", "--quick", "--check", BANK_CHECK, "--keep-builds", str(builds),
        command=["./bank", "{threads}", "20000"], out=out,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr + res.stdout
    doc = json.loads((out / "results.json").read_text())
    names = {v["name"] for v in doc["variants"]}
    assert {"original", "recommended", "posix", "shfl-block", "spin"} <= names
    assert any(v["kind"] == "site" for v in doc["variants"]), names
    assert all(r["ok"] for r in doc["runs"]), [r["error"] for r in doc["runs"] if not r["ok"]]
    # the result was compared: every run printed the original's line at its thread count
    for p, point in enumerate(doc["points"]):
        lines = {tuple(r["check_lines"]) for r in doc["runs"] if r["point"] == p}
        assert len(lines) == 1 and lines.pop()[0].startswith("total 64000"), point
    # the builds: the original calls no liblocktune, the rewritten ones do, and the edited
    # header went into its build (its algorithm names are compiled into the program)
    assert b"lt_mutex" not in (builds / "original" / "bank").read_bytes()
    assert b"lt_execute" in (builds / "rewritten" / "bank").read_bytes()
    assert b"spin\0" in (builds / "header-spin" / "bank").read_bytes()
    assert b"spin\0" not in (builds / "rewritten" / "bank").read_bytes()
    assert (out / "compare-throughput.svg").exists()
    assert "1 threads" in res.stdout and "3 threads" in res.stdout
