"""`locktune flags` and locktune.pc build programs that run with no environment variable."""

from __future__ import annotations

import shlex
import subprocess

from conftest import clean_env

PROGRAM = r"""
#include <stdio.h>
#include "locktune.h"
static lt_mutex_t m = LT_MUTEX_INITIALIZER(LT_SITE_UNKNOWN);
static void *bump(void *p) { ++*(int *)p; return p; }
int main(void)
{
    int n = 41;
    lt_execute(&m, bump, &n);
    printf("%s %d\n", lt_mutex_algorithm(&m), n);
    return n == 42 ? 0 : 1;
}
"""


def _build_and_run(tmp_path, cc, flags):
    src = tmp_path / "prog.c"
    src.write_text(PROGRAM)
    exe = cc(tmp_path / "prog", src, flags=flags)
    res = subprocess.run([str(exe)], capture_output=True, text=True, env=clean_env())
    assert res.returncode == 0, res.stderr
    assert res.stdout == "posix 42\n"
    return exe


def test_flags_shared(tmp_path, cc, run_locktune):
    flags = run_locktune("flags", "--cflags", "--libs", check=True).stdout.split()
    assert any(f.startswith("-Wl,-rpath,") for f in flags)
    exe = _build_and_run(tmp_path, cc, flags)
    ldd = subprocess.run(["ldd", str(exe)], capture_output=True, text=True).stdout
    assert "liblocktune.so" in ldd and "not found" not in ldd


def test_flags_static(tmp_path, cc, run_locktune):
    flags = run_locktune("flags", "--static", check=True).stdout.split()
    exe = _build_and_run(tmp_path, cc, flags)
    ldd = subprocess.run(["ldd", str(exe)], capture_output=True, text=True).stdout
    assert "liblocktune" not in ldd


def test_pkg_config(tmp_path, cc, run_locktune):
    pcdir = run_locktune("flags", "--pkg-config-path", check=True).stdout.strip()
    res = subprocess.run(
        ["pkg-config", "--cflags", "--libs", "locktune"],
        capture_output=True,
        text=True,
        env=clean_env(PKG_CONFIG_PATH=pcdir),
    )
    assert res.returncode == 0, res.stderr
    _build_and_run(tmp_path, cc, shlex.split(res.stdout))


def test_flags_before_the_objects_under_as_needed(tmp_path, run_locktune):
    """Seen in zstd: its Makefile puts LDFLAGS before the objects; under --as-needed the
    linker dropped liblocktune before any object asked for it (undefined lt_mutex_init)."""
    libs = run_locktune("flags", "--libs", check=True).stdout.split()
    cflags = run_locktune("flags", "--cflags", check=True).stdout.split()
    src = tmp_path / "prog.c"
    src.write_text(PROGRAM)
    exe = tmp_path / "prog"
    cmd = ["cc", "-Wl,--as-needed", *libs, *cflags, "-o", str(exe), str(src)]
    res = subprocess.run(cmd, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    ran = subprocess.run([str(exe)], capture_output=True, text=True, env=clean_env())
    assert ran.stdout == "posix 42\n", ran.stderr
