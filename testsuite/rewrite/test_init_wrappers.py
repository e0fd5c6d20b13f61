"""Init wrappers (issue 11, item 5: "init wrappers give each caller its own site"): a real
profile of the corpus program init_wrappers, taken before the rewrite, names the init call in
the wrapper's body (lockutil.h), where every lock the wrapper initialises is born.  After the
rewrite each caller has a site of its own; the profile of the wrapper's line goes to each of
them, and is not reported as a profiled site the rewrite could not find."""

from __future__ import annotations

import json
import shutil
import subprocess

from corpus_build import CORPUS

WRAPPER_INIT = ("lockutil.h", 13)  # my_mutex_init's pthread_mutex_init
CALLERS = [("main.c", 52), ("main.c", 54)]  # my_mutex_init(&checking.mutex), (&savings.mutex)


def test_a_profile_of_the_wrapper_goes_to_each_callers_site(run_locktune, tmp_path):
    src = tmp_path / "src"
    shutil.copytree(CORPUS / "init_wrappers", src)
    exe = tmp_path / "prog"
    cmd = ["cc", "-O2", "-g", "-pthread", "-o", str(exe), str(src / "main.c"), str(src / "pool.c")]
    subprocess.run(cmd, check=True)
    prof = tmp_path / "profile.json"
    res = run_locktune("profile", "-o", str(prof), "--source-root", str(src), "--", str(exe))
    assert res.returncode == 0, res.stderr
    profiled = {
        (lk["site"]["file"], lk["site"]["line"]) for lk in json.loads(prof.read_text())["locks"]
    }
    assert WRAPPER_INIT in profiled, profiled

    out, rep = tmp_path / "out", tmp_path / "rep.json"
    res = run_locktune(
        "rewrite", str(src), "--out", str(out), "--profile", str(prof), "--report", str(rep)
    )
    assert res.returncode == 0, res.stderr
    report = json.loads(rep.read_text())
    sites = {(s["file"], s["line"]): s for s in report["sites"]}
    for caller in CALLERS:
        assert caller in sites, sorted(sites)
        assert sites[caller]["profiled"], sites[caller]
        # both locks are struct account's field `mutex`: a lock's key is its field, so each
        # site counts the sections on either object's lock
        assert sites[caller]["sections"] == 2, sites[caller]
    assert WRAPPER_INIT not in sites
    assert "lockutil.h:13" not in report["profile_sites_not_found"]
    assert report["profile_sites_lost"] == []
