"""Every process of a run is profiled (issue 13, item 4): forked workers and exec'd programs.

programs/procs.c: the launched process takes `parent_lock` a little, then the heavy locking
(`work_lock`) happens in forked workers, in workers that exec this program again, or in the
launched process itself after it execs.  Each process prints its pid and what it did; the
profile must have one entry per process with exactly those counts, the top-level sites
summed over the processes, a report that names the busiest process and a section per
process, and `locktune rewrite --profile` must find the workers' site.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess

import pytest
from proftools import PROGRAMS, build, markers, profile

THREADS, PER_THREAD, PARENT = 3, 20000, 10
WORK = THREADS * PER_THREAD


@pytest.fixture(scope="module")
def procs_bin(tmp_path_factory):
    return build(tmp_path_factory.mktemp("procs"), "procs")


def said(stdout: str) -> tuple[dict[int, int], dict[int, tuple[int, int]]]:
    """({parent pid: acquisitions}, {worker pid: (parent pid, acquisitions)}) as printed."""
    parents, workers = {}, {}
    for line in stdout.splitlines():
        w = line.split()
        if w[0] == "parent":
            parents[int(w[1])] = int(w[2])
        elif w[0] == "worker":
            workers[int(w[1])] = (int(w[2]), int(w[3]))
    return parents, workers


def by_line(locks: list[dict]) -> dict[int, dict]:
    return {lk["site"]["line"]: lk for lk in locks if lk["site"]["file"] == "procs.c"}


@pytest.mark.parametrize("how", ["fork", "exec"])
def test_forked_and_execd_workers_are_profiled(run_locktune, procs_bin, tmp_path, how):
    res, doc = profile(run_locktune, tmp_path, procs_bin, how, "3")
    assert res.returncode == 0, res.stderr
    parents, workers = said(res.stdout)
    assert len(parents) == 1 and len(workers) == 3
    (parent_pid,) = parents
    m = markers("procs")
    parent_line, work_line = m["parent_lock"][0], m["work_lock"][0]

    # One entry per process, with its own meta; each worker's counts are what it did.
    entries = {(p["meta"]["pid"], p["meta"]["image"]): p for p in doc["processes"]}
    active = [p for p in doc["processes"] if p["locks"]]
    assert {p["meta"]["pid"] for p in active} == {parent_pid, *workers}
    launched = [p for p in doc["processes"] if p["meta"]["started_by"] == "launch"]
    assert [p["meta"]["pid"] for p in launched] == [parent_pid]
    assert launched[0]["meta"]["exit"] == {"status": 0, "signal": None}
    assert by_line(launched[0]["locks"])[parent_line]["acquisitions"] == PARENT
    assert work_line not in by_line(launched[0]["locks"])
    for pid, (ppid, acquired) in workers.items():
        assert ppid == parent_pid and acquired == WORK
        (proc,) = [p for p in active if p["meta"]["pid"] == pid]
        meta = proc["meta"]
        assert meta["parent_pid"] == parent_pid
        assert meta["started_by"] == ("fork" if how == "fork" else "exec")
        assert meta["arguments"] == ([how, "3"] if how == "fork" else ["worker"])
        assert meta["threads"] == THREADS + 1
        mine = by_line(proc["locks"])
        assert set(mine) == {work_line}, "a worker took only work_lock"
        assert mine[work_line]["acquisitions"] == WORK
        assert proc["totals"]["acquisitions"] == WORK
        if how == "exec":  # the fork that exec'd is a process of its own, idle
            assert entries[(pid, 0)]["meta"]["started_by"] == "fork"
            assert entries[(pid, 0)]["locks"] == []
    busiest = [p for p in doc["processes"] if p["meta"]["busiest"]]
    assert len(busiest) == 1 and busiest[0]["meta"]["pid"] in workers
    assert doc["meta"]["busiest_pid"] == busiest[0]["meta"]["pid"]

    # The top-level sites are those of all processes, summed: nothing hidden.
    top = by_line(doc["locks"])
    assert top[work_line]["acquisitions"] == 3 * WORK
    assert top[parent_line]["acquisitions"] == PARENT
    assert doc["locks"][0] is top[work_line]  # the workers' lock ranks first
    assert sorted(q["pid"] for q in top[work_line]["processes"]) == sorted(workers)
    assert doc["totals"]["acquisitions"] == 3 * WORK + PARENT
    assert doc["totals"]["processes"] == len(doc["processes"])

    # The report: the busiest process named in the summary, a section per process.
    prof = tmp_path / "p.json"
    prof.write_text(json.dumps(doc))
    rep = run_locktune("report", str(prof))
    assert rep.returncode == 0, rep.stderr
    out = rep.stdout
    bpid = busiest[0]["meta"]["pid"]
    summary = next(ln for ln in out.splitlines() if ln.startswith("processes "))
    assert f"the work was done by pid {bpid} " in summary
    first = next(ln for ln in out.splitlines() if re.match(r"1\s+procs\.c:", ln))
    assert f"procs.c:{work_line}" in first and f"{3 * WORK:,}" in first
    for pid in (parent_pid, *workers):
        assert re.search(rf"^process pid {pid} \(", out, re.M), out
    assert re.search(rf"^process pid {bpid} .*<- busiest$", out, re.M)
    html = tmp_path / "r.html"
    assert run_locktune("report", str(prof), "--html", str(html)).returncode == 0
    page = html.read_text()
    assert "<h2>Processes</h2>" in page
    for pid in (parent_pid, *workers):
        assert f"Process pid {pid} (" in page
    rj = json.loads(run_locktune("report", str(prof), "--json").stdout)
    assert len(rj["processes"]) == len(doc["processes"])


def test_a_launched_process_that_execs_is_two_images(run_locktune, procs_bin, tmp_path):
    res, doc = profile(run_locktune, tmp_path, procs_bin, "replace")
    assert res.returncode == 0, res.stderr
    parents, workers = said(res.stdout)
    (pid,) = parents
    assert list(workers) == [pid]  # the same process, another program
    m = markers("procs")
    images = sorted(
        (p for p in doc["processes"] if p["meta"]["pid"] == pid), key=lambda p: p["meta"]["image"]
    )
    assert [p["meta"]["started_by"] for p in images] == ["launch", "exec"]
    assert by_line(images[0]["locks"])[m["parent_lock"][0]]["acquisitions"] == PARENT
    assert by_line(images[1]["locks"])[m["work_lock"][0]]["acquisitions"] == WORK
    assert images[1]["meta"]["exit"] == {"status": 0, "signal": None}
    assert images[0]["meta"]["exit"] is None
    top = by_line(doc["locks"])
    assert top[m["work_lock"][0]]["acquisitions"] == WORK
    assert top[m["parent_lock"][0]]["acquisitions"] == PARENT


def test_rewrite_finds_the_workers_sites(run_locktune, tmp_path):
    """`locktune rewrite --profile`: the header of the program being rewritten gets the
    figures of every process that ran it (the workers' lock: 3 x WORK acquisitions, in
    processes the launched one only waited for)."""
    src = tmp_path / "src"
    src.mkdir()
    shutil.copy(PROGRAMS / "procs.c", src / "procs.c")
    exe = tmp_path / "procs"
    subprocess.run(
        ["cc", "-O2", "-g", "-pthread", "-o", str(exe), str(src / "procs.c")], check=True
    )
    prof = tmp_path / "profile.json"
    res = run_locktune(
        "profile", "-o", str(prof), "--source-root", str(src), "--", str(exe), "fork", "3"
    )
    assert res.returncode == 0, res.stderr
    out = tmp_path / "out"
    res = run_locktune("rewrite", str(src), "--out", str(out), "--profile", str(prof))
    assert res.returncode == 0, res.stderr
    header = " ".join(re.sub(r"\n\s*\* ?", " ", (out / "locktune_config.h").read_text()).split())
    m = markers("procs")
    work = header[header.index(f"procs.c:{m['work_lock'][0]} work_lock") :]
    work = work[: work.index("{LT_SITE_")]
    assert f"of {3 * WORK} acquisitions contended" in work, work
    parent = header[header.index(f"procs.c:{m['parent_lock'][0]} parent_lock") :]
    assert f"of {PARENT} acquisitions contended" in parent[: parent.index("{LT_SITE_")]
    assert "not found in the sources" not in res.stdout


def test_rewrite_with_a_helper_program_without_debug_information(run_locktune, tmp_path):
    """A program of the run other than the one rewritten, without debug information (its
    sites have no file:line), does not stop `locktune rewrite --profile`: the launched
    program's sites are joined, the helper's left out."""
    src = tmp_path / "src"
    src.mkdir()
    shutil.copy(PROGRAMS / "procs.c", src / "procs.c")
    exe, helper = tmp_path / "procs", tmp_path / "helper"
    for out, flags in ((exe, ["-g"]), (helper, [])):
        subprocess.run(
            ["cc", "-O2", *flags, "-pthread", "-o", str(out), str(src / "procs.c")], check=True
        )
    prof = tmp_path / "profile.json"
    res = run_locktune(
        "profile", "-o", str(prof), "--source-root", str(src), "--", str(exe), "run", str(helper)
    )
    assert res.returncode == 0, res.stderr
    doc = json.loads(prof.read_text())
    (theirs,) = [lk for lk in doc["locks"] if lk["site"]["file"] is None]
    assert theirs["acquisitions"] == WORK and theirs["site"]["symbol"].startswith("work_lock")
    out = tmp_path / "out"
    res = run_locktune("rewrite", str(src), "--out", str(out), "--profile", str(prof))
    assert res.returncode == 0, res.stderr
    header = " ".join(re.sub(r"\n\s*\* ?", " ", (out / "locktune_config.h").read_text()).split())
    m = markers("procs")
    parent = header[header.index(f"procs.c:{m['parent_lock'][0]} parent_lock") :]
    assert f"of {PARENT} acquisitions contended" in parent[: parent.index("{LT_SITE_")]
