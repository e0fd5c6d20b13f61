"""liblocktune-prof.so, preloaded into an unmodified program, sees its lock calls exactly and
leaves the program's output and exit status unchanged."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from conftest import clean_env

HERE = Path(__file__).resolve().parent


def test_counts_exactly_and_changes_nothing(tmp_path, cc, native_dir):
    exe = cc(tmp_path / "counts", HERE / "programs" / "counts.c", flags=["-pthread"])
    plain = subprocess.run([str(exe)], capture_output=True, text=True, env=clean_env())
    out = tmp_path / "counts.json"
    env = clean_env(
        LD_PRELOAD=str(native_dir / "lib" / "liblocktune-prof.so"), LOCKTUNE_PROFILE_OUT=str(out)
    )
    profiled = subprocess.run([str(exe)], capture_output=True, text=True, env=env, timeout=120)
    assert (
        (profiled.returncode, profiled.stdout)
        == (plain.returncode, plain.stdout)
        == (
            0,
            "counter 40000 fails 37\n",
        )
    )
    counts = json.loads(out.read_text())
    assert counts["acquisitions"] == 4 * 10000 + 1
    assert counts["trylocks"] == 37
    assert counts["trylock_failures"] == 37
    assert 0 <= counts["contended"] <= counts["acquisitions"]
    assert isinstance(counts["pmu"]["available"], bool)
