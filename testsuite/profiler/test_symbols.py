"""Sites of any binary (issue 13, "Any binary"): stripped programs, separate debug files found
by build id or debug link, and distinct names for distinct sites.  Real binaries built here
with gcc, stripped with `strip`, their debug files made with `objcopy --only-keep-debug`."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from proftools import PROGRAMS, build, markers, plain, profile

from locktune.profiler.render import site_label


@pytest.fixture
def out(tmp_path):
    return tmp_path


def _run(*cmd: str) -> str:
    res = subprocess.run(list(cmd), capture_output=True, text=True)
    assert res.returncode == 0, f"{' '.join(cmd)}: {res.stderr}"
    return res.stdout


def _build_id(exe: Path) -> str:
    for line in _run("readelf", "-n", str(exe)).splitlines():
        if "Build ID:" in line:
            return line.split()[-1]
    raise AssertionError(f"{exe} has no build id")


def _split_debug(exe: Path, root: Path) -> Path:
    """exe's debug information to ROOT/.build-id/xx/rest.debug, exe stripped."""
    bid = _build_id(exe)
    dbg = root / ".build-id" / bid[:2] / f"{bid[2:]}.debug"
    dbg.parent.mkdir(parents=True, exist_ok=True)
    _run("objcopy", "--only-keep-debug", str(exe), str(dbg))
    _run("strip", str(exe))
    return dbg


def _by_acquisitions(doc: dict) -> dict[int, dict]:
    return {lk["acquisitions"]: lk for lk in doc["locks"]}


@pytest.mark.parametrize("pie", [False, True], ids=["no-pie", "pie"])
def test_stripped_program_names_each_site_by_module_and_offset(run_locktune, out, pie):
    """A stripped program: no frame is named after an undefined import (built -no-pie, the
    dynamic symbol `malloc` has its PLT entry's address and every frame read `malloc+0x...`),
    nor after its caller (PIE: the four init calls of one function all took the C library's
    `__libc_start_call_main+0x..`).  Each site is `module+offset (no debug information)`,
    the offset that of its own init call (addr2line on the unstripped copy gives its line),
    and as many distinct labels as sites."""
    flags = [] if pie else ["-fno-pie", "-no-pie"]
    exe = build(out, "stripped", flags, out="stripped")
    full = out / "stripped.full"
    full.write_bytes(exe.read_bytes())
    _run("strip", str(exe))
    if not pie:  # the trap is really there: an undefined import with a nonzero value
        dyn = _run("readelf", "--dyn-syms", "-W", str(exe))
        assert any(
            " UND malloc" in ln and int(ln.split()[1], 16) != 0 for ln in dyn.splitlines()
        ), dyn
    res, doc = profile(run_locktune, out, exe)
    assert res.returncode == 0, res.stderr
    assert res.stdout == plain(exe).stdout
    m = markers("stripped")
    found = _by_acquisitions(doc)
    assert sorted(found) == sorted(count for _, count in m.values())
    labels = [site_label(lk) for lk in doc["locks"]]
    assert len(set(labels)) == len(doc["locks"]), labels
    assert not any("!stripped+" in x for x in labels), labels  # not "stripped!stripped+0x.."
    for name, (line, count) in m.items():
        site = found[count]["site"]
        assert site["file"] is None and site["line"] is None
        sym = site["symbol"]
        assert "malloc" not in sym and "libc" not in sym, sym
        assert sym.startswith("stripped+0x") and sym.endswith("(no debug information)"), sym
        offset = sym.split("+", 1)[1].split()[0]
        if name == "counter":  # the variable's address
            nm = [ln.split() for ln in _run("nm", str(full)).splitlines()]
            assert [int(x[0], 16) for x in nm if x[-1] == "counter_lock"] == [int(offset, 16)]
            continue
        where = _run("addr2line", "-e", str(full), offset).strip()
        assert where.endswith(f"stripped.c:{line}"), (name, sym, where)
    assert any("no debug information" in n for n in doc["meta"]["notes"])
    # such a profile cannot be joined to the sources: the rewrite says why, in one line
    prof = out / "stripped.json"
    prof.write_text(json.dumps(doc))
    src = out / "src"
    src.mkdir()
    (src / "stripped.c").write_text((PROGRAMS / "stripped.c").read_text())
    res = run_locktune("rewrite", str(src), "--out", str(out / "o"), "--profile", str(prof))
    assert res.returncode == 1 and len(res.stderr.strip().splitlines()) == 1, res.stderr
    assert "(no debug information)) has no site file and line" in res.stderr
    assert "LOCKTUNE_DEBUG_DIRS" in res.stderr


def test_build_id_debug_file_gives_file_and_line(run_locktune, out):
    """A stripped program whose debug information is a separate file under a debug root's
    .build-id/ (a distribution's debug package; here a root named by $LOCKTUNE_DEBUG_DIRS):
    its sites get their file:line, the tail-called inits included (the jumps are found
    with the debug file's symbols)."""
    root = out / "debug"
    stripped = build(out, "stripped", out="stripped-dbg")
    tail = build(out, "tailinit", out="tailinit-dbg", compiler="gcc")
    for exe in (stripped, tail):
        _split_debug(exe, root)
    env = {**os.environ, "LOCKTUNE_DEBUG_DIRS": str(root)}

    res, doc = profile(run_locktune, out, stripped, env=env)
    assert res.returncode == 0, res.stderr
    found = _by_acquisitions(doc)
    for name, (line, count) in markers("stripped").items():
        site = found[count]["site"]
        assert (site["file"], site["line"]) == ("stripped.c", line), name
        assert site["function" if name != "counter" else "symbol"] == (
            "setup" if name != "counter" else "counter_lock"
        )
    assert doc["meta"]["debug_info"][str(stripped)] is True
    assert doc["meta"]["debug_files"][str(stripped)].startswith(str(root / ".build-id"))
    assert not any("no debug information" in n for n in doc["meta"]["notes"])

    res, doc = profile(run_locktune, out, tail, env=env)
    assert res.returncode == 0, res.stderr
    m = markers("tailinit")
    sites = {(lk["site"]["file"], lk["site"]["line"]): lk for lk in doc["locks"]}
    assert sorted(sites) == [("tailinit.c", m["account"][0]), ("tailinit.c", m["queue"][0])]
    assert sites[("tailinit.c", m["account"][0])]["instances"] == 2

    # without the root, the same binary has no debug information: honest labels
    res, doc = profile(run_locktune, out, stripped)
    assert res.returncode == 0, res.stderr
    assert all(lk["site"]["file"] is None for lk in doc["locks"])
    assert any("no debug information" in n for n in doc["meta"]["notes"])


def test_debug_link_file_next_to_the_program(run_locktune, out):
    """No build id: the .gnu_debuglink names the debug file, found in the program's folder
    (as `make install-strip` or `objcopy --add-gnu-debuglink` leave it) and checked by its
    CRC."""
    exe = build(out, "stripped", ["-Wl,--build-id=none"], out="stripped-link")
    dbg = out / "stripped-link.debug"
    _run("objcopy", "--only-keep-debug", str(exe), str(dbg))
    _run("strip", str(exe))
    _run("objcopy", f"--add-gnu-debuglink={dbg}", str(exe))
    res, doc = profile(run_locktune, out, exe)
    assert res.returncode == 0, res.stderr
    found = _by_acquisitions(doc)
    for _, (line, count) in markers("stripped").items():
        assert (found[count]["site"]["file"], found[count]["site"]["line"]) == (
            "stripped.c",
            line,
        )
    # a debug file that is not this program's (another build: another CRC) is not used
    other = build(out, "stripped", ["-Wl,--build-id=none", "-O1"], out="other")
    _run("objcopy", "--only-keep-debug", str(other), str(dbg))
    res, doc = profile(run_locktune, out, exe)
    assert res.returncode == 0, res.stderr
    assert all(lk["site"]["file"] is None for lk in doc["locks"])


def test_hot_profiled_site_the_rewrite_cannot_match_is_an_error(run_locktune, out):
    """A profile whose sites the sources no longer have (here: a stale profile, a line added
    above them since): a cold site is a warning and the rewrite exits 0, as before; a hot
    one (recommended another algorithm than posix) in a file the rewrite analysed is an
    error that names it, the summary says its recommendation is lost, the output is still
    written, and the exit status is 1, where before it was a warning, exit 0, and "No
    profile." in the header."""
    exe = build(out, "tailinit", compiler="gcc")
    res, doc = profile(run_locktune, out, exe)
    assert res.returncode == 0, res.stderr
    m = markers("tailinit")
    src = out / "src"
    src.mkdir()
    text = (PROGRAMS / "tailinit.c").read_text()
    (src / "tailinit.c").write_text("/* edited since the profile */\n" + text)
    for lock in doc["locks"]:
        lock["recommendation"] = {"algorithm": "posix", "reason": "cold"}
    prof = out / "stale.json"
    prof.write_text(json.dumps(doc))
    res = run_locktune("rewrite", str(src), "--out", str(out / "o1"), "--profile", str(prof))
    assert res.returncode == 0, res.stderr
    assert "error:" not in res.stderr and res.stderr.count("warning:") == 2

    account = f"tailinit.c:{m['account'][0]}"
    for lock in doc["locks"]:
        if f"{lock['site']['file']}:{lock['site']['line']}" == account:
            lock["recommendation"] = {"algorithm": "shfl-block", "reason": "hot"}
    prof.write_text(json.dumps(doc))
    report = out / "report.json"
    res = run_locktune(
        "rewrite",
        str(src),
        "--out",
        str(out / "o2"),
        "--profile",
        str(prof),
        "--report",
        str(report),
    )
    assert res.returncode == 1, res.stdout + res.stderr
    errors = [ln for ln in res.stderr.splitlines() if "error:" in ln]
    assert any(f"error: {account}: profiled lock site (recommended shfl-block" in e for e in errors)
    assert "1 hot profiled site(s) match no lock" in res.stderr.splitlines()[-1]
    assert "profile lost       1 hot profiled site(s)" in res.stdout
    assert f"{account} (shfl-block)" in res.stdout
    assert (out / "o2" / "locktune_config.h").is_file()  # written all the same
    lost = json.loads(report.read_text())["profile_sites_lost"]
    assert [x["site"] for x in lost] == [account] and lost[0]["algorithm"] == "shfl-block"
