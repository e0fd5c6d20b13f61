"""The rewriter corpus (testsuite/rewrite/corpus/, one program per directory): each program
is rewritten, compiled with -Wall -Wextra -Werror against liblocktune, and run under every
algorithm the runtime registers among posix, mcs, shfl-block, ccsynch, rcl and auto; its output
must equal the original's (expected.txt).  Plus the expected shape of the rewritten code
(CHECK lines) and idempotency (a second rewrite changes nothing, byte for byte,
locktune_config.h included, without and with a profile).
"""

from __future__ import annotations

import os
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor

import corpus_build as cb
import filecheck
import pytest
from conftest import clean_env

ALGORITHMS = ["posix", "mcs", "shfl-block", "ccsynch", "rcl", "auto"]
PROGRAMS = cb.programs()
# Run time every algorithm may spend on the whole corpus (each program takes well under a
# second on posix): a lock that makes the programs crawl fails the rest of its runs quickly
# instead of stretching CI (the corpus's budget is 10 minutes for all algorithms).
ALGO_BUDGET_S = 90.0
RUN_TIMEOUT_S = 20.0


@pytest.fixture(scope="session")
def runtime_flags():
    from locktune import native

    return native.cflags() + native.libs()


@pytest.fixture(scope="session")
def probe(tmp_path_factory, runtime_flags):
    return cb.probe(tmp_path_factory.mktemp("probe"), runtime_flags)


@pytest.fixture(scope="session")
def registered(probe) -> dict[str, str | None]:
    return cb.registered(probe, ALGORITHMS, clean_env)


@pytest.fixture(scope="session")
def spent() -> dict[str, float]:
    return {}


@pytest.fixture(scope="session")
def capabilities(probe) -> dict[str, bool]:
    caps = {}
    for cap in ("recursive", "errorcheck"):
        res = subprocess.run([str(probe), cap], capture_output=True, timeout=30, env=clean_env())
        caps[cap] = res.returncode == 0
    return caps


@pytest.fixture(scope="session")
def corpus(tmp_path_factory, locktune_bin, runtime_flags) -> dict[str, cb.Built]:
    work = tmp_path_factory.mktemp("corpus")
    jobs = max(1, min(2, os.cpu_count() or 1))
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        built = pool.map(lambda n: cb.build(n, work, locktune_bin, runtime_flags), PROGRAMS)
        return {b.name: b for b in built}


def _built(name: str, corpus, capabilities) -> cb.Built:
    """The program, rewritten and compiled; skips when it needs what the runtime lacks."""
    b = corpus[name]
    missing = [n for n in cb.directives(name, "NEEDS") if not capabilities.get(n)]
    if b.failure and b.failure.startswith("rewritten program does not compile") and missing:
        pytest.skip(f"needs {', '.join(missing)} mutexes, which the runtime does not offer yet")
    assert b.failure is None, b.failure
    return b


def _expected(name: str) -> str:
    return (cb.CORPUS / name / "expected.txt").read_text()


def test_corpus_is_large_enough():
    assert len(PROGRAMS) >= 40, PROGRAMS


@pytest.mark.parametrize("name", PROGRAMS)
def test_original_output(name, corpus):
    b = corpus[name]
    assert b.orig_exe is not None, b.failure
    res = cb.run_program(b.orig_exe, clean_env())
    assert res.returncode == 0, res.stderr
    assert res.stdout == _expected(name)


@pytest.mark.parametrize("name", PROGRAMS)
def test_rewrite_compiles(name, corpus, capabilities):
    b = _built(name, corpus, capabilities)
    assert b.report["summary"]["files_failed"] == 0


@pytest.mark.parametrize("name", PROGRAMS)
def test_second_rewrite_changes_nothing(name, corpus, capabilities):
    b = _built(name, corpus, capabilities)
    assert b.second_run_diff == []


@pytest.mark.parametrize("name", PROGRAMS)
def test_rewritten_shape(name, corpus, capabilities):
    b = _built(name, corpus, capabilities)
    files = {str(p.relative_to(b.out)): p.read_text() for p in b.out.rglob("*") if p.is_file()}
    failures = []
    for src in sorted((cb.CORPUS / name).glob("*.[ch]")):
        checks = filecheck.parse(src.read_text())
        failures += filecheck.run(checks, files, src.name)
    assert failures == []


@pytest.mark.parametrize("name", PROGRAMS)
def test_sections_report(name, corpus, capabilities):
    """Every kept section says why; programs state which reasons they expect."""
    b = _built(name, corpus, capabilities)
    sections = b.report["critical_sections"]
    assert all(s["reason"] for s in sections if s["status"] == "kept")
    if b.report["tools"]["extract"] != "extract":
        pytest.skip(b.report["tools"]["extract_unavailable_reason"])
    for text in cb.directives(name, "KEPT"):
        assert any(text in (s["reason"] or "") for s in sections if s["status"] == "kept"), (
            text,
            sections,
        )
    for n in cb.directives(name, "EXTRACTED"):
        assert sum(s["status"] == "extracted" for s in sections) == int(n), sections
    for n in cb.directives(name, "ROTATED"):
        assert sum(bool(s.get("rotated")) for s in sections) == int(n), sections
    for n in cb.directives(name, "SITES"):
        assert len(b.report["sites"]) == int(n), b.report["sites"]
    notes = [n["message"] for n in b.report["notes"]]
    for text in cb.directives(name, "NOTE"):
        assert any(text in n for n in notes), (text, notes)


@pytest.mark.parametrize(
    "name", [n for n in PROGRAMS if cb.directives(n, "OTHER-CONFIG")] or ["(none)"]
)
def test_other_configuration(name, corpus, capabilities):
    """The rewriter analyses the configuration being compiled; code that #if leaves out
    must mean the same rewritten when another configuration compiles it."""
    assert name != "(none)", "no corpus program has an OTHER-CONFIG directive"
    b = _built(name, corpus, capabilities)
    assert b.other_configs
    for flags, orig, new in b.other_configs:
        want = cb.run_program(orig, clean_env())
        assert want.returncode == 0, want.stderr
        for algo in ("posix", "rcl"):
            got = cb.run_program(new, clean_env(LOCKTUNE_ALGO=f"default={algo}"))
            assert got.returncode == 0, got.stderr
            assert got.stdout == want.stdout, (flags, algo)


@pytest.mark.parametrize("algo", ALGORITHMS)
@pytest.mark.parametrize("name", PROGRAMS)
def test_runs_like_the_original(name, algo, corpus, registered, capabilities, spent):
    if registered[algo]:
        pytest.skip(registered[algo])
    b = _built(name, corpus, capabilities)
    for need in cb.directives(name, "NEEDS"):
        if not capabilities.get(need):
            pytest.skip(f"the runtime does not support {need} mutexes yet")
    left = ALGO_BUDGET_S - spent.get(algo, 0.0)
    if left <= 0:
        pytest.fail(f"{algo}: the corpus has used up its {ALGO_BUDGET_S:.0f} s of run time")
    t0 = time.monotonic()
    try:
        res = cb.run_program(
            b.new_exe, clean_env(LOCKTUNE_ALGO=f"default={algo}"), min(RUN_TIMEOUT_S, left)
        )
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"{name} under {algo} ran longer than {e.timeout:.0f} s")
    finally:
        spent[algo] = spent.get(algo, 0.0) + time.monotonic() - t0
    assert res.returncode == 0, res.stderr
    assert res.stdout == _expected(name)
