"""liblocktune-prof.so preloaded directly (no `locktune profile`): it sees the program's lock
calls exactly, leaves its output and exit status unchanged, and its raw file reads back."""

from __future__ import annotations

import subprocess
from pathlib import Path

from conftest import clean_env

from locktune.profiler import raw

HERE = Path(__file__).resolve().parent


def test_counts_exactly_and_changes_nothing(tmp_path, cc, native_dir):
    exe = cc(tmp_path / "counts", HERE / "programs" / "counts.c", flags=["-pthread"])
    plain = subprocess.run([str(exe)], capture_output=True, text=True, env=clean_env())
    rawdir = tmp_path / "raw"
    rawdir.mkdir()
    env = clean_env(
        LD_PRELOAD=str(native_dir / "lib" / "liblocktune-prof.so"), LOCKTUNE_PROF_DIR=str(rawdir)
    )
    profiled = subprocess.run([str(exe)], capture_output=True, text=True, env=env, timeout=120)
    assert (
        (profiled.returncode, profiled.stdout)
        == (plain.returncode, plain.stdout)
        == (0, "counter 40000 fails 37\n")
    )
    (p,) = raw.read_dir(rawdir)
    assert p.pid > 0 and p.finished and not p.forked_child
    assert p.header["threads_created"] == 5
    (site,) = [s for s in p.sites if s.slots["acquisitions"]]
    assert site.slots["acquisitions"] == 4 * 10000 + 1
    assert site.slots["trylock_failures"] == 37
    assert site.kind == "mutex" and site.origin == "static"
    assert 0 <= site.slots["contended"] <= site.slots["acquisitions"]


def test_without_a_directory_it_passes_through(tmp_path, cc, native_dir):
    exe = cc(tmp_path / "counts", HERE / "programs" / "counts.c", flags=["-pthread"])
    env = clean_env(LD_PRELOAD=str(native_dir / "lib" / "liblocktune-prof.so"))
    res = subprocess.run([str(exe)], capture_output=True, text=True, env=env, timeout=120)
    assert (res.returncode, res.stdout, res.stderr) == (0, "counter 40000 fails 37\n", "")
    assert not list(tmp_path.glob("*.ltraw"))
