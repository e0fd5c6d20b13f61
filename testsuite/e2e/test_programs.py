"""Real programs from Debian source packages (issue 11, item 7), one recipe each in
scripts/realprog.py: fetched at test time, built by their own build under `bear`, rewritten
with nothing but their compile commands, built again with `locktune flags`, and their own
tests run on the original and under each lock algorithm.  The fetch, builds and rewrite run
once per program (a session-scoped cache); a failed step fails every test that needs it with
its message.  Marker `programs`; how long each takes: docs/e2e.md.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest
from conftest import script_module

from locktune.rewrite import report as rewrite_report

pytestmark = pytest.mark.programs


RP = script_module("realprog.py", "realprog")
# README's test command (scripts/test) runs the programs that fit CI's 90 minutes (today all
# five; zstd and sqlite3 with the part of their own tests their recipes name); a program left
# out would carry the marker `programs_full` too, which scripts/test deselects unless asked
# for (`scripts/test -m programs` runs them all; times in docs/e2e.md).
IN_CI = {"xz-utils", "libuv1", "zstd", "sqlite3", "libmicrohttpd"}
PROGRAMS = [
    pytest.param(n, marks=[] if n in IN_CI else [pytest.mark.programs_full]) for n in RP.RECIPES
]


class Prepared:
    """One program's work folder and the outcome of each step run so far."""

    def __init__(self, recipe, work):
        self.recipe, self.work = recipe, work
        self.steps: dict[str, dict] = {}

    def step(self, name, fn, *args):
        if name not in self.steps:
            try:
                rec = fn(*args) or {}
                rec.setdefault("status", "ok")
            except RP.Failed as e:
                rec = {"status": "failed", "error": str(e)}
            self.steps[name] = rec
            (self.work / "pytest-steps.json").write_text(json.dumps(self.steps, indent=1))
        rec = self.steps[name]
        if rec["status"] != "ok":
            pytest.fail(f"{self.recipe.name}: {name} failed: {rec.get('error', rec)}")
        return rec


@pytest.fixture(scope="session")
def prepared(locktune_bin):
    # A recipe whose suite refuses root (libuv) runs it as nobody, and the suite runs its own
    # executable by path: every folder above the tree must be traversable by nobody, which
    # pytest's temporary folders (0700) are not - libuv's spawn, fork and path cases all
    # failed on the original there.  So the work folders live in a 0755 folder of their own.
    base = Path(tempfile.mkdtemp(prefix="locktune-programs-"))
    base.chmod(0o755)
    cache: dict[str, Prepared] = {}

    def get(name: str) -> Prepared:
        if name not in cache:
            recipe = RP.RECIPES[name]
            try:
                RP.fetch(recipe)
            except RP.Failed as e:
                pytest.skip(str(e))  # no deb-src entries on this machine (like memcached)
            work = base / name
            work.mkdir()
            cache[name] = Prepared(recipe, work)
        return cache[name]

    yield get
    shutil.rmtree(base, ignore_errors=True)


def _rewritten(p: Prepared) -> dict:
    p.step("build-original", RP.build_original, p.recipe, p.work)

    def rewrite():
        rec = RP.rewrite(p.recipe, p.work)
        if rec["exit"] != 0:
            raise RP.Failed("\n".join(RP.summary_lines(p.recipe.name, rec)))
        return rec

    return p.step("rewrite", rewrite)


def _baseline(p: Prepared) -> dict:
    """Its own tests on the original, run once (TAP recipes judge the rewritten runs by it)."""
    p.step("build-original", RP.build_original, p.recipe, p.work)
    if "test-original" not in p.steps:
        p.steps["test-original"] = RP.run_tests(p.recipe, p.work, "original", None)
    return p.steps["test-original"]


@pytest.mark.parametrize("name", PROGRAMS)
def test_its_own_tests_pass_on_the_original(prepared, name):
    rec = _baseline(prepared(name))
    assert rec["status"] == "ok", "\n".join(rec.get("tail", []))


@pytest.mark.parametrize("name", PROGRAMS)
def test_rewrites_with_its_compile_commands_only(prepared, name):
    p = prepared(name)
    rec = _rewritten(p)
    s = rec["summary"]
    for line in RP.summary_lines(name, rec):
        print(line)
    assert s["files_failed"] == 0, rec["failed_files"]
    assert s["sections"] > 0, f"{name}: no critical section found"
    assert s["extracted"] + s["kept"] == s["sections"], s
    report = rewrite_report.read(p.work / "rewrite.json")
    kept = [x for x in report["critical_sections"] if x["status"] == "kept"]
    assert all(x["reason"] for x in kept), [x for x in kept if not x["reason"]]


@pytest.mark.parametrize("name", PROGRAMS)
def test_builds_with_its_own_build_system(prepared, name):
    p = prepared(name)
    _rewritten(p)
    p.step("build-rewritten", RP.build_rewritten, p.recipe, p.work)


@pytest.mark.parametrize("algo", RP.ALGORITHMS)
@pytest.mark.parametrize("name", PROGRAMS)
def test_its_own_tests_pass_under_each_algorithm(prepared, name, algo):
    from locktune.bench import lockbench

    unavailable = lockbench.available([algo], len(os.sched_getaffinity(0))).unavailable
    if algo in unavailable:
        pytest.skip(f"{algo}: {unavailable[algo]}")
    p = prepared(name)
    base = _baseline(p) if p.recipe.by_case else None
    _rewritten(p)
    p.step("build-rewritten", RP.build_rewritten, p.recipe, p.work)
    rec = RP.run_tests(p.recipe, p.work, "rewritten", algo, base)
    assert rec["status"] == "ok", f"{name} under {algo}:\n" + "\n".join(rec.get("tail", []))
