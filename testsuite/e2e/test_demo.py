"""The README's demo (scripts/demo.py) on a small workload: every stage runs, every artefact
lands in the one output folder it names, and the folder's commands.sh says how."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest
from conftest import ROOT, clean_env


@pytest.fixture(scope="module")
def demo(tmp_path_factory, locktune_bin):
    out = tmp_path_factory.mktemp("demo") / "out"
    env = clean_env(PATH=f"{os.path.dirname(locktune_bin)}:{os.environ['PATH']}")
    res = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "demo.py"), "--app", "bank", "--quick"]
        + ["--threads", "4", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    return res, out


def test_the_pipeline_runs_end_to_end(demo):
    res, out = demo
    assert res.returncode == 0, res.stdout + res.stderr
    for n in range(1, 8):
        assert f"[{n}/7]" in res.stdout
    assert f"output folder: {out}" in res.stdout
    assert res.stdout.rstrip().endswith(f"artefacts: {out}")
    # the report's table, the rewrite's summary, the hot site's header entry, the ratio
    assert "recommend" in res.stdout and "bank.c:" in res.stdout
    assert "critical sections" in res.stdout and "{LT_SITE_BANK_C_" in res.stdout
    assert "bank now calls liblocktune: " in res.stdout and "lt_execute" in res.stdout
    # the headline is the ratio's 95% interval, with how many rounds made it
    assert re.search(r"runs at \d+\.\d\dx \(95% \d+\.\d\d-\d+\.\d\d", res.stdout), res.stdout
    assert "the original's throughput" in res.stdout
    assert "(rounds: 2, stopped at the 2 rounds asked for)" in res.stdout
    assert "--quick: two short rounds, a smoke test, not a measurement" in res.stdout


def test_every_artefact_is_in_the_output_folder(demo):
    res, out = demo
    assert res.returncode == 0, res.stderr
    for name in (
        "doctor.log",
        "original/bank",
        "original/compile_commands.json",
        "profile.json",
        "report.txt",
        "report.html",
        "rewrite.json",
        "rewritten/locktune_config.h",
        "rewritten/bank",
        "compare/results.json",
        "compare/compare.svg",
        "commands.sh",
    ):
        assert (out / name).exists(), name
    profile = json.loads((out / "profile.json").read_text())
    header = (out / "rewritten" / "locktune_config.h").read_text()
    hot = profile["locks"][0]
    algo = hot["recommendation"]["algorithm"]
    assert f'"{hot["site"]["file"]}", {hot["site"]["line"]},' in header
    assert f'"{algo}", ' in header  # the recommendation is in the header
    compared = json.loads((out / "compare" / "results.json").read_text())
    assert all(r["ok"] for r in compared["runs"]), compared["runs"]
    assert "<svg" in (out / "report.html").read_text()


def test_commands_sh_lists_every_step(demo):
    _res, out = demo
    script = (out / "commands.sh").read_text()
    order = ["bear -- make", "locktune profile", "locktune report", "locktune rewrite"]
    order += ["make CPPFLAGS=", "locktune bench compare"]
    positions = [script.find(s) for s in order]
    assert all(p >= 0 for p in positions), list(zip(order, positions, strict=True))
    assert positions == sorted(positions)


def test_an_unknown_app_is_bad_usage(tmp_path):
    res = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "demo.py"), "--app", "nosuch"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 2
    assert "nosuch" in res.stderr
