"""memcached (the Debian source package, fetched at test time) rewritten with every lock
selected, built with its own build system (configure adds -Werror -pedantic), and its own
test suite run against the rewritten binaries.  The recipe is scripts/memcached.py.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess

import corpus_build as cb
import pytest
from conftest import ROOT, clean_env

pytestmark = pytest.mark.memcached

ALGORITHMS = ["mcs", "shfl-block", "ccsynch", "rcl"]  # posix runs the whole suite


def _recipe():
    spec = importlib.util.spec_from_file_location(
        "memcached_recipe", ROOT / "scripts" / "memcached.py"
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def mc(tmp_path_factory, locktune_bin):
    recipe = _recipe()
    try:
        recipe.fetch()
    except recipe.Failed as e:
        pytest.skip(str(e))
    work = tmp_path_factory.mktemp("memcached")
    try:
        recipe.build_original(work)
        report = recipe.rewrite(work)
    except recipe.Failed as e:
        pytest.fail(str(e))
    return recipe, work, report


@pytest.fixture(scope="module")
def built(mc):
    recipe, work, _report = mc
    try:
        return recipe.build_rewritten(work)
    except recipe.Failed as e:
        pytest.fail(str(e))


def test_every_file_rewritten_and_sections_accounted_for(mc):
    _recipe_mod, work, rep = mc
    s = rep["summary"]
    assert s["files_failed"] == 0, [f for f in rep["files"] if f["status"] == "failed"]
    # memcached has about 200 lock calls outside the proxy: sections are found, each one
    # either extracted or kept with a reason.
    assert s["sections"] > 150, s
    assert s["extracted"] + s["kept"] == s["sections"]
    assert all(x["reason"] for x in rep["critical_sections"] if x["status"] == "kept")
    # Every lock comes to life somewhere: the main ones have their site.
    names = {n for site in rep["sites"] for n in site["name"].split(", ")}
    for lock in ("slabs_lock", "lru_locks[i]", "item_locks[i]", "stats_lock", "cq->lock"):
        assert lock in names, (lock, sorted(names))
    header = (work / "rewritten" / "locktune_config.h").read_text()
    assert "LT_CONFIG_REGISTER(lt_config_sites)" in header
    assert len(re.findall(r"^\s*\{LT_SITE_\w+,", header, re.M)) == s["sites"]


def test_no_pthread_lock_left_in_the_sources(mc):
    from locktune.rewrite import residue

    _recipe_mod, work, rep = mc
    left = []
    for f in rep["files"]:
        if f["status"] == "rewritten":
            text = (work / "rewritten" / f["file"]).read_text()
            left += [f"{f['file']}:{t.line}: {t.text}" for t in residue.leftovers(text)]
    assert left == []


def test_builds_with_its_own_build_system(built):
    for exe in ("memcached", "memcached-debug"):
        path = built / exe
        assert path.exists(), f"{exe} was not built"
        undefined = subprocess.run(
            ["nm", "-D", "--undefined-only", str(path)], capture_output=True, text=True
        ).stdout
        assert "lt_mutex_lock" in undefined, f"{exe} does not call liblocktune"
        for name in ("pthread_mutex_lock", "pthread_mutex_unlock", "pthread_cond_wait"):
            assert not re.search(rf"\b{name}\b", undefined), f"{exe} still calls {name}"


def test_its_own_test_suite_passes(mc, built):
    recipe, _work, _rep = mc
    try:
        summary = recipe.run_tests(built, jobs=4, env=clean_env())
    except recipe.Failed as e:
        pytest.fail(str(e))
    assert "Result: PASS" in summary


@pytest.fixture(scope="module")
def registered(tmp_path_factory):
    from locktune.commands import flags

    exe = cb.probe(tmp_path_factory.mktemp("probe"), flags.cflags() + flags.libs())
    return cb.registered(exe, ALGORITHMS, clean_env)


@pytest.mark.parametrize("algo", ALGORITHMS)
def test_quick_suite_under_each_algorithm(mc, built, algo, registered):
    if registered[algo]:
        pytest.skip(registered[algo])
    recipe, _work, _rep = mc
    try:
        summary = recipe.run_tests(
            built, quick=True, jobs=2, env=clean_env(LOCKTUNE_ALGO=f"default={algo}")
        )
    except recipe.Failed as e:
        pytest.fail(str(e))
    assert "Result: PASS" in summary
