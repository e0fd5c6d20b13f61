"""The command line contract: subcommands exist, usage errors are one line and exit 2."""

from __future__ import annotations

import pytest

SUBCOMMANDS = ["doctor", "profile", "report", "rewrite", "flags", "bench", "calibrate"]


def test_help_lists_every_subcommand(run_locktune):
    res = run_locktune("--help")
    assert res.returncode == 0, res.stderr
    for sub in SUBCOMMANDS:
        assert f"  {sub}" in res.stdout, f"{sub} missing from --help"


def test_bare_command_prints_help(run_locktune):
    res = run_locktune()
    assert res.returncode == 0
    assert "Usage: locktune" in res.stdout


@pytest.mark.parametrize("sub", SUBCOMMANDS)
def test_subcommand_help(run_locktune, sub):
    res = run_locktune(sub, "--help")
    assert res.returncode == 0, res.stderr
    assert f"Usage: locktune {sub}" in res.stdout


BAD_USAGE = [
    ["no-such-command"],
    ["doctor", "--no-such-option"],
    ["profile", "--pmu"],
    ["profile"],
    ["report"],
    ["report", "/nonexistent/profile.json"],
    ["report", "--top", "0", "/nonexistent.json"],
    ["rewrite"],
    ["rewrite", "/nonexistent/src"],
    ["flags", "--frobnicate"],
    ["bench", "no-such-bench"],
    ["bench", "locks", "--repeats", "0"],
    ["calibrate", "extra-argument"],
]


@pytest.mark.parametrize("args", BAD_USAGE, ids=lambda a: " ".join(a))
def test_bad_usage_is_one_line_exit_2(run_locktune, args):
    res = run_locktune(*args)
    assert res.returncode == 2, (res.returncode, res.stdout, res.stderr)
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1, res.stderr
    assert lines[0].startswith("locktune"), lines[0]
    assert "error:" in lines[0]
    assert "Traceback" not in res.stderr


def test_version(run_locktune):
    from locktune import __version__

    res = run_locktune("--version")
    assert res.returncode == 0
    assert __version__ in res.stdout


# Subcommands whose issue has not landed: they must say so in one line and exit 2.
# Each issue removes its entries when it lands.
PENDING: list[tuple[list[str], int]] = []


@pytest.mark.parametrize(
    "args,issue", PENDING, ids=lambda a: " ".join(a) if isinstance(a, list) else ""
)
def test_pending_subcommands_say_so(run_locktune, args, issue):
    from pathlib import Path

    res = run_locktune(*args, cwd=Path(__file__).resolve().parents[2])
    assert res.returncode == 2
    line = res.stderr.strip()
    assert "\n" not in line
    assert "not implemented yet" in line and f"#{issue}" in line
