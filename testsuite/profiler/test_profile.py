"""`locktune profile` end to end on programs with known behaviour (testsuite/profiler/programs):
the profiled program's output and exit status are unchanged, counts are exact, shares of
time match what the program measures itself, and sites land on the right file:line at -O2."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from proftools import PROGRAMS, build, markers, plain, profile, site_at

from locktune.algorithms import names as algorithm_names


@pytest.fixture(scope="module")
def bins(tmp_path_factory):
    out = tmp_path_factory.mktemp("profiler-programs")
    names = [
        "counts",
        "hotcold",
        "sites",
        "condq",
        "rwspin",
        "manythreads",
        "exits",
        "forks",
        "pshared",
        "shortcs",
        "churn",
    ]
    return {n: build(out, n) for n in names}


@pytest.fixture
def out(tmp_path):
    return tmp_path


UNCHANGED = [
    ("counts", ()),
    ("condq", ()),
    ("rwspin", ()),
    ("manythreads", ()),
    ("sites", ()),
    ("forks", ("plain",)),
    ("forks", ("exec",)),
    ("pshared", ()),
    ("exits", ("worker",)),
    ("exits", ("_exit",)),
    ("churn", ("churn",)),
]


@pytest.mark.parametrize("name,args", UNCHANGED, ids=[" ".join([n, *a]) for n, a in UNCHANGED])
def test_output_and_exit_status_unchanged(run_locktune, bins, out, name, args):
    before = plain(bins[name], *args)
    res, doc = profile(run_locktune, out, bins[name], *args)
    assert res.stdout == before.stdout
    assert doc is not None, res.stderr
    assert doc["meta"]["exit"] == {"status": before.returncode, "signal": None}
    # locktune profile: 0 when the program succeeded, 1 (one line, profile written) otherwise.
    if before.returncode == 0:
        assert res.returncode == 0, res.stderr
    else:
        assert res.returncode == 1
        err = [ln for ln in res.stderr.splitlines() if "error:" in ln]
        assert len(err) == 1 and f"status {before.returncode}" in err[0]
    for lock in doc["locks"]:
        assert lock["recommendation"]["algorithm"] in algorithm_names()
        assert lock["recommendation"]["reason"]


def test_counts_are_exact(run_locktune, bins, out):
    res, doc = profile(run_locktune, out, bins["counts"])
    assert res.returncode == 0, res.stderr
    (lock,) = doc["locks"]
    assert lock["acquisitions"] == 4 * 10000 + 1
    assert lock["trylock_failures"] == 37
    assert lock["origin"] == "static"
    assert (lock["site"]["file"], lock["site"]["symbol"]) == ("counts.c", "m")
    assert doc["meta"]["threads_created"] == 5  # every pthread_create was intercepted
    assert lock["threads"] == 6


@pytest.mark.parametrize("sample", [1, 16])
def test_hot_lock_share_matches_the_programs_own_measure(run_locktune, bins, out, sample):
    res, doc = profile(
        run_locktune, out, bins["hotcold"], "3", "300", opts=("--sample", str(sample))
    )
    assert res.returncode == 0, res.stderr
    words = res.stdout.split()
    hot_truth, cold_truth = float(words[1]), float(words[3])
    hot, cold = doc["locks"][0], doc["locks"][1]
    assert hot["site"]["symbol"] == "hot" and cold["site"]["symbol"] == "cold"
    assert abs(hot["cs_percent"] - hot_truth) <= max(3.0, 0.1 * hot_truth), (hot, hot_truth)
    assert cold["cs_percent"] < 1.0 and cold_truth < 1.0
    assert doc["totals"]["cs_percent"] >= hot["cs_percent"] - 0.5
    assert hot["instances"] == 1 and hot["threads"] == 3


def test_sampling_estimates_short_sections(run_locktune, bins, out):
    """Short uncontended sections are timed 1 in N at random; the estimate of their share
    must agree with timing every one of them.  On a busy machine timing every one also counts
    the preemptions inside them, which the estimate leaves out (their time on a CPU only):
    the sampled share may then fall below the exact one, never far above it."""
    _, exact = profile(run_locktune, out, bins["shortcs"], opts=("--sample", "1"))
    _, sampled = profile(run_locktune, out, bins["shortcs"], opts=("--sample", "16"))
    (e,), (s,) = exact["locks"], sampled["locks"]
    assert e["acquisitions"] == s["acquisitions"] == 200000
    assert e["timed_acquisitions"] == 200000 and e["timing"] == "exact"
    assert exact["meta"]["timing"]["sample_period"] == 1
    assert sampled["meta"]["timing"]["sample_period"] == 16
    if s["timing"].startswith("sampled"):
        assert s["timed_acquisitions"] < 200000 // 4
    assert 20.0 < e["cs_percent"] < 90.0
    busy = [d["meta"]["timing"]["waited_for_cpu_per_cpu_second"] for d in (exact, sampled)]
    assert all(b is not None for b in busy)  # schedstat was read for every run
    if max(busy) < 0.2:
        assert 0.7 * e["cs_percent"] <= s["cs_percent"] <= 1.3 * e["cs_percent"]
    else:  # busy: exact timing also counts the preemptions the estimate leaves out
        assert 0.2 * e["cs_percent"] <= s["cs_percent"] <= 1.3 * e["cs_percent"]


def _sites(doc):
    return {(lk["site"]["file"], lk["site"]["line"]): lk for lk in doc["locks"]}


def test_sites_resolve_to_their_lines_at_O2(run_locktune, bins, out):
    res, doc = profile(
        run_locktune,
        out,
        bins["sites"],
        opts=("--wrapper", "my_init", "--wrapper", "app_lock_init"),
    )
    assert res.returncode == 0, res.stderr
    found = _sites(doc)
    for name, (line, count) in markers("sites").items():
        if name in ("inner", "ninner"):
            continue  # wrappers named: their callers are the sites
        lock = found.get(("sites.c", line))
        assert lock is not None, f"SITE:{name} (sites.c:{line}) missing from {sorted(found)}"
        assert lock["acquisitions"] == count, name
    m = markers("sites")
    assert found[("sites.c", m["loop"][0])]["instances"] == 4
    assert found[("sites.c", m["array"][0])]["instances"] == 8
    assert found[("sites.c", m["array"][0])]["site"]["symbol"] == "g_array[]"
    assert found[("sites.c", m["member"][0])]["site"]["symbol"] == "s_struct.lock"
    assert found[("sites.c", m["static"][0])]["origin"] == "static"
    assert found[("sites.c", m["init"][0])]["origin"] == "init"
    assert found[("sites.c", m["init"][0])]["site"]["function"] == "make_object"
    assert found[("sites.c", m["firstuse"][0])]["origin"] == "first-use"


def test_static_sites_resolve_with_clang_dwarf5(run_locktune, out):
    """clang's DWARF 5 places a static variable with DW_OP_addrx (an index into .debug_addr),
    not DW_OP_addr: statically initialised locks still land on their definition's line."""
    exe = build(out, "sites", ["-gdwarf-5"], out="sites-clang", compiler="clang")
    res, doc = profile(run_locktune, out, exe, opts=("--wrapper", "my_init"))
    assert res.returncode == 0, res.stderr
    found = _sites(doc)
    m = markers("sites")
    for name in ("static", "array", "member"):
        line, count = m[name]
        lock = found.get(("sites.c", line))
        assert lock is not None, f"SITE:{name} (sites.c:{line}) missing from {sorted(found)}"
        assert lock["origin"] == "static" and lock["acquisitions"] == count, name
    assert found[("sites.c", m["array"][0])]["site"]["symbol"] == "g_array[]"


def test_without_wrapper_names_the_init_call_inside_the_wrapper(run_locktune, bins, out):
    res, doc = profile(run_locktune, out, bins["sites"])
    assert res.returncode == 0, res.stderr
    found = _sites(doc)
    m = markers("sites")
    assert found[("sites.c", m["inner"][0])]["acquisitions"] == m["inner"][1]
    assert found[("sites.c", m["ninner"][0])]["acquisitions"] == m["ninner"][1]
    assert found[("sites.c", m["ninner"][0])]["instances"] == 2
    assert ("sites.c", m["wrapA"][0]) not in found


def test_init_reached_through_a_tail_call_is_the_init_calls_line(run_locktune, out):
    """`pthread_mutex_init` as a function's last statement: gcc -O2 jumps to it, so its
    return address is in the caller.  The site is still the init call's line (the one the
    rewriter names), through a chain of tail calls too, and the two calls of one init
    function are one site with two instances."""
    exe = build(out, "tailinit", compiler="gcc")
    dis = subprocess.run(["objdump", "-d", str(exe)], capture_output=True, text=True).stdout
    assert any(  # really a tail call
        "jmp" in ln and "<pthread_mutex_init@plt>" in ln for ln in dis.splitlines()
    )
    res, doc = profile(run_locktune, out, exe)
    assert res.returncode == 0, res.stderr
    found = _sites(doc)
    m = markers("tailinit")
    assert sorted(found) == [("tailinit.c", m["account"][0]), ("tailinit.c", m["queue"][0])]
    account = found[("tailinit.c", m["account"][0])]
    assert account["site"]["function"] == "account_init"
    assert account["instances"] == 2 and account["acquisitions"] == 2000
    queue = found[("tailinit.c", m["queue"][0])]
    assert queue["site"]["function"] == "queue_lock_init" and queue["acquisitions"] == 2000
    assert [f["function"] for f in queue["backtrace"][:3]] == [
        "queue_lock_init",
        "queue_setup",
        "main",
    ]


def test_rewrite_finds_every_site_of_a_tail_call_profile(run_locktune, out):
    """The profile of tailinit lands in the rewriter's header: no profiled site left over
    (before, the tail-called inits were profiled at their callers' lines: 3 sites not
    found)."""
    exe = build(out, "tailinit", compiler="gcc")
    res, doc = profile(run_locktune, out, exe)
    assert res.returncode == 0, res.stderr
    prof = out / "tail-profile.json"
    prof.write_text(json.dumps(doc))
    src = out / "src"
    src.mkdir()
    (src / "tailinit.c").write_text((PROGRAMS / "tailinit.c").read_text())
    res = run_locktune("rewrite", str(src), "--out", str(out / "o"), "--profile", str(prof))
    assert res.returncode == 0, res.stderr
    assert "not found in the sources" not in res.stdout
    assert "warning:" not in res.stderr
    header = (out / "o" / "locktune_config.h").read_text()
    m = markers("tailinit")
    for name in ("account", "queue"):
        assert f'"tailinit.c", {m[name][0]},' in header


def test_condition_variable_queue(run_locktune, bins, out):
    res, doc = profile(run_locktune, out, bins["condq"])
    assert res.returncode == 0, res.stderr
    (lock,) = doc["locks"]
    assert lock["site"]["symbol"] == "q_lock"
    waits = lock["cond_waits"]
    assert waits > 0 and lock["cond_wait_ns"] > 0
    # 12000 puts and 12000 takes lock once each, plus each thread's last lock (3 + 3);
    # each wait ends a section and its return starts another.
    assert lock["acquisitions"] == 2 * 3 * 4000 + 3 + 3 + waits
    assert doc["meta"]["untracked"]["unlocks_not_held"] == 0


def test_rwlocks_and_spinlocks(run_locktune, bins, out):
    res, doc = profile(run_locktune, out, bins["rwspin"])
    assert res.returncode == 0, res.stderr
    by_kind = {lk["kind"]: lk for lk in doc["locks"]}
    rw, spin = by_kind["rwlock"], by_kind["spinlock"]
    assert rw["acquisitions"] == 4 * 3000 + 500 + 1
    assert rw["read_acquisitions"] == 4 * 3000
    assert rw["trylock_failures"] == 9
    assert rw["origin"] == "static" and rw["site"]["symbol"] == "table"
    assert spin["acquisitions"] == 5 * 700 + 1
    assert spin["trylock_failures"] == 9
    assert spin["origin"] == "init" and spin["site"]["function"] == "main"
    assert rw["recommendation"]["algorithm"] == spin["recommendation"]["algorithm"] == "posix"


def test_hundreds_of_short_lived_threads(run_locktune, bins, out):
    res, doc = profile(run_locktune, out, bins["manythreads"])
    assert res.returncode == 0, res.stderr
    (lock,) = doc["locks"]
    assert lock["acquisitions"] == 400 * 10
    assert lock["threads"] == 400
    meta = doc["meta"]
    assert meta["threads_created"] == 400
    assert meta["threads"] == 401
    assert 2 <= meta["max_live_threads"] <= 51


def test_lock_table_under_concurrent_births_deaths_and_first_uses(run_locktune, bins, out):
    res, doc = profile(run_locktune, out, bins["churn"], "churn")
    assert res.returncode == 0, res.stderr
    m = markers("churn")
    churn = site_at(doc, m["churn"][0], "churn.c")
    racy = site_at(doc, m["racy"][0], "churn.c")
    assert (churn["acquisitions"], churn["created"], churn["live_at_end"]) == (96000, 32000, 0)
    assert 1 <= churn["instances"] <= 8 and churn["threads"] == 8
    assert (racy["acquisitions"], racy["instances"], racy["raw_sites"]) == (512, 64, 1)
    assert racy["site"]["symbol"] == "racy[]"
    assert doc["meta"]["untracked"] == {
        "lock_operations": 0,
        "threads": 0,
        "unlocks_not_held": 0,
        "nesting_overflow": 0,
    }


def test_a_full_lock_table_is_reported_not_silent(run_locktune, bins, out):
    res, doc = profile(run_locktune, out, bins["churn"], "many", "300000")
    assert res.returncode == 0, res.stderr
    (lock,) = doc["locks"]
    untracked = doc["meta"]["untracked"]
    assert 0 < untracked["lock_operations"]
    # Every lock is either counted or its unlock shows up as untracked.
    assert lock["acquisitions"] + untracked["unlocks_not_held"] == 300000
    assert lock["created"] == lock["acquisitions"]
    assert any("untracked" in n for n in doc["meta"]["notes"])


def test_exit_from_a_worker_thread(run_locktune, bins, out):
    res, doc = profile(run_locktune, out, bins["exits"], "worker")
    assert doc["meta"]["exit"]["status"] == 3
    assert doc["meta"]["ended_normally"]
    assert doc["locks"][0]["acquisitions"] == 1234


def test_underscore_exit_still_leaves_a_profile(run_locktune, bins, out):
    res, doc = profile(run_locktune, out, bins["exits"], "_exit")
    assert doc["meta"]["exit"]["status"] == 4
    assert not doc["meta"]["ended_normally"]
    assert any("_exit" in n for n in doc["meta"]["notes"])
    assert doc["locks"][0]["acquisitions"] == 1234


def _sigint_default():
    """In the child: SIGINT as a terminal gives it.  A test run launched in the background
    by a script (`cmd &` without job control, nohup) has SIGINT ignored, which every program
    it starts inherits - the profiled program then ignores the SIGINT this test sends it and
    runs for ever (CI, twice)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.parametrize("target", ["locktune", "program"])
def test_sigterm_or_sigint_ends_the_run_with_a_profile(locktune_bin, bins, out, target):
    pidfile = out / "pid"
    prof = out / "sig.json"
    proc = subprocess.Popen(
        [
            locktune_bin,
            "profile",
            "-o",
            str(prof),
            "--",
            str(bins["exits"]),
            "signal",
            str(pidfile),
        ],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_sigint_default,
    )
    deadline = time.monotonic() + 60
    while not pidfile.exists() or not pidfile.read_text().strip():
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.05)
    time.sleep(0.2)
    if target == "locktune":
        proc.send_signal(signal.SIGTERM)  # forwarded to the program
        expected = "SIGTERM"
    else:
        os.kill(int(pidfile.read_text()), signal.SIGINT)
        expected = "SIGINT"
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    doc = json.loads(prof.read_text())
    assert doc["meta"]["exit"] == {"status": None, "signal": expected}
    assert doc["locks"][0]["acquisitions"] > 1234


@pytest.mark.parametrize("how", ["plain", "exec"])
def test_fork_child_does_not_touch_the_parents_profile(run_locktune, bins, out, how):
    res, doc = profile(run_locktune, out, bins["forks"], how)
    assert res.returncode == 0, res.stderr
    parent = [p for p in doc["processes"] if p["meta"]["pid"] == doc["meta"]["pid"]]
    ((plock,),) = [p["locks"] for p in parent]
    assert plock["acquisitions"] == 100 + 200  # the parent's, exactly
    (child,) = [
        p for p in doc["processes"] if p["meta"]["pid"] != doc["meta"]["pid"] and p["locks"]
    ]
    assert [lk["acquisitions"] for lk in child["locks"]] == [1000]  # the child's, exactly
    (lock,) = doc["locks"]  # one site, both processes' acquisitions
    assert lock["acquisitions"] == 100 + 200 + 1000
    children = doc["meta"]["other_processes"]
    assert [c["acquisitions"] for c in children if c["acquisitions"]] == [1000]
    assert all(c["pid"] != doc["meta"]["pid"] for c in children)


def test_process_shared_and_robust_mutexes(run_locktune, bins, out):
    before = plain(bins["pshared"])
    res, doc = profile(run_locktune, out, bins["pshared"])
    assert before.returncode == 0 and res.returncode == 0, res.stderr
    assert res.stdout == before.stdout
    m = markers("pshared")
    pshared = site_at(doc, m["pshared"][0], "pshared.c")
    robust = site_at(doc, m["robust"][0], "pshared.c")
    assert pshared["attributes"] == ["process-shared"]
    assert set(robust["attributes"]) == {"process-shared", "robust"}
    assert pshared["acquisitions"] == 2 * 2000  # the parent's half and the child's
    for proc in doc["processes"]:  # each process its half
        assert site_at(proc, m["pshared"][0], "pshared.c")["acquisitions"] == 2000
    assert (
        pshared["recommendation"]["algorithm"] == robust["recommendation"]["algorithm"] == "posix"
    )


def test_statically_linked_program_is_refused(run_locktune, out):
    try:
        exe = build(out, "counts", ["-static"], out="counts-static")
    except AssertionError as e:
        pytest.skip(f"no static libc to link with: {e}")
    res, _ = profile(run_locktune, out, exe)
    assert res.returncode == 1
    assert len(res.stderr.strip().splitlines()) == 1
    assert "statically linked" in res.stderr


def test_without_debug_information_sites_fall_back_to_symbols(run_locktune, out):
    exe = out / "counts-nodebug"
    subprocess.run(
        ["cc", "-O2", "-pthread", "-o", str(exe), str(Path(__file__).parent / "programs/counts.c")],
        check=True,
    )
    res, doc = profile(run_locktune, out, exe)
    assert res.returncode == 0, res.stderr
    (lock,) = doc["locks"]
    assert lock["site"]["file"] is None and lock["site"]["line"] is None
    assert lock["site"]["symbol"].startswith("m+0x")
    assert any("no debug information" in n for n in doc["meta"]["notes"])
    subprocess.run(["strip", str(exe)], check=True)
    res, doc = profile(run_locktune, out, exe)
    (lock,) = doc["locks"]
    assert "+0x" in lock["site"]["symbol"] and lock["acquisitions"] == 40001


def test_missing_program_is_bad_usage(run_locktune, out):
    res = run_locktune("profile", "-o", str(out / "x.json"), "--", "/nonexistent/program")
    assert res.returncode == 2
    assert len(res.stderr.strip().splitlines()) == 1 and "no such program" in res.stderr
