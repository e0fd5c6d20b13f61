"""The runtime's configuration: locktune_config.h tables and the environment.

A program built against the installed liblocktune, with and without a generated header:
site algorithms come from the header, LOCKTUNE_ALGO overrides them, and a bad value of any
LOCKTUNE_* variable (or a bad header entry) stops the program at start-up with status 2 and
one line naming the variable (or the header entry).
"""

from __future__ import annotations

import subprocess

import pytest
from conftest import clean_env

HEADER = r"""
#ifndef LOCKTUNE_CONFIG_H
#define LOCKTUNE_CONFIG_H
#include "locktune.h"
enum {
    LT_SITE_THREAD_C_45 = 1, /* thread.c:45   stats_lock */
    LT_SITE_ITEMS_C_118 = 2, /* items.c:118   lru_locks[] */
};
static const struct lt_site_config lt_config_sites[] = {
    {LT_SITE_THREAD_C_45, "thread.c", 45, "stats_lock", "posix", -1},
    {LT_SITE_ITEMS_C_118, "items.c", 118, "lru_locks", "@ALGO@", 0},
};
LT_CONFIG_REGISTER(lt_config_sites)
#endif
"""

PROGRAM = r"""
#include <stdio.h>
#include <string.h>
#include "locktune.h"
#ifdef WITH_HEADER
#include "locktune_config.h"
#else
#define LT_SITE_THREAD_C_45 1
#define LT_SITE_ITEMS_C_118 2
#endif
static lt_mutex_t stats_lock = LT_MUTEX_INITIALIZER(LT_SITE_THREAD_C_45);
static lt_mutex_t lru_locks[4] = {LT_MUTEX_INITIALIZER(LT_SITE_ITEMS_C_118),
                                  LT_MUTEX_INITIALIZER(LT_SITE_ITEMS_C_118),
                                  LT_MUTEX_INITIALIZER(LT_SITE_ITEMS_C_118),
                                  LT_MUTEX_INITIALIZER(LT_SITE_ITEMS_C_118)};
int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "nolocks") == 0)
        return 0;
    lt_mutex_t other;
    lt_mutex_init(&other, NULL, LT_SITE_UNKNOWN);
    printf("%s %s %s\n", lt_mutex_algorithm(&stats_lock), lt_mutex_algorithm(&lru_locks[3]),
           lt_mutex_algorithm(&other));
    lt_mutex_lock(&lru_locks[1]);
    lt_mutex_unlock(&lru_locks[1]);
    return 0;
}
"""


def build(tmp_path, native_dir, with_header: bool, algo: str = "shfl-block", static=False):
    src = tmp_path / "prog.c"
    src.write_text(PROGRAM)
    (tmp_path / "locktune_config.h").write_text(HEADER.replace("@ALGO@", algo))
    out = tmp_path / ("prog_h" if with_header else "prog")
    lib = native_dir / "lib"
    cmd = ["cc", "-O1", "-Wall", "-Wextra", "-Werror", "-pedantic", "-std=c11"]
    cmd += ["-I", str(native_dir / "include"), "-I", str(tmp_path), "-o", str(out), str(src)]
    if with_header:
        cmd.append("-DWITH_HEADER")
    if static:
        cmd += [str(lib / "liblocktune.a"), "-pthread"]
    else:
        cmd += ["-L", str(lib), f"-Wl,-rpath,{lib}", "-llocktune", "-pthread"]
    res = subprocess.run(cmd, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    return out


def run(exe, *args, **env):
    return subprocess.run(
        [str(exe), *args], capture_output=True, text=True, env=clean_env(**env), timeout=60
    )


def test_without_header_every_site_is_posix(tmp_path, native_dir):
    res = run(build(tmp_path, native_dir, with_header=False))
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == ["posix", "posix", "posix"]


def test_header_chooses_per_site(tmp_path, native_dir):
    res = run(build(tmp_path, native_dir, with_header=True, algo="mcscr"))
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == ["posix", "mcscr", "posix"]


@pytest.mark.parametrize(
    "value,expected",
    [
        ("default=mcs", ["mcs", "mcs", "mcs"]),
        ("2=twa", ["posix", "twa", "posix"]),
        ("default=clh, 1 = ticket", ["ticket", "clh", "clh"]),
    ],
)
def test_locktune_algo_overrides_header(tmp_path, native_dir, value, expected):
    res = run(build(tmp_path, native_dir, with_header=True), LOCKTUNE_ALGO=value)
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == expected


@pytest.mark.parametrize(
    "value,expected",
    [
        ("default=mcs:spin", ["mcs", "mcs", "mcs"]),
        ("default=ccsynch:park, 2 = twa:yield", ["ccsynch", "twa", "ccsynch"]),
    ],
)
def test_locktune_algo_names_a_waiting_policy(tmp_path, native_dir, value, expected):
    """ALGO:POLICY runs ALGO under that waiting policy (docs/config.md)."""
    res = run(build(tmp_path, native_dir, with_header=True), LOCKTUNE_ALGO=value)
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == expected


def test_header_names_a_waiting_policy(tmp_path, native_dir):
    res = run(build(tmp_path, native_dir, with_header=True, algo="clh:spin"))
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == ["posix", "clh", "posix"]
    res = run(build(tmp_path, native_dir, with_header=True, algo="oyama:park"), "nolocks")
    assert res.returncode == 2
    line = res.stderr.strip()
    assert "\n" not in line
    assert line.startswith("locktune: error: locktune_config.h: site 2 (items.c:118)")
    assert "'oyama:park': oyama takes no waiting policy" in line


def test_locktune_algo_without_header_accepts_any_site(tmp_path, native_dir):
    res = run(build(tmp_path, native_dir, with_header=False), LOCKTUNE_ALGO="2=mcstp")
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == ["posix", "mcstp", "posix"]


def test_static_library_reads_environment(tmp_path, native_dir):
    exe = build(tmp_path, native_dir, with_header=True, static=True)
    res = run(exe, LOCKTUNE_ALGO="default=spin")
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == ["spin", "spin", "spin"]


@pytest.mark.parametrize(
    "variable,value,words",
    [
        ("LOCKTUNE_ALGO", "default=nope", ["unknown algorithm 'nope'", "mcscr"]),
        ("LOCKTUNE_ALGO", "mcs", ["is not KEY=ALGORITHM"]),
        ("LOCKTUNE_ALGO", "site7=mcs", ["'site7' is neither 'default' nor a site id"]),
        ("LOCKTUNE_ALGO", "default=", ["unknown algorithm ''"]),
        # a waiting policy after the algorithm (issue 12): a known one, for an algorithm that
        # takes one
        ("LOCKTUNE_ALGO", "default=mcs:nap", ["'mcs:nap'", "no policy of that name", "park"]),
        ("LOCKTUNE_ALGO", "2=mcscr:spin", ["'mcscr:spin'", "takes no waiting policy"]),
        ("LOCKTUNE_ALGO", "default=nope:spin", ["unknown algorithm 'nope'"]),
        ("LOCKTUNE_SPIN_NS", "fast", ["expected a spin budget in nanoseconds"]),
        ("LOCKTUNE_SPIN_NS", "0", ["expected a spin budget in nanoseconds"]),
        ("LOCKTUNE_GATE_TURN_NS", "soon", ["expected a patience per passive waiter"]),
        ("LOCKTUNE_GATE_TURN_NS", "-5", ["expected a patience per passive waiter"]),
        ("LOCKTUNE_STATS", "/nonexistent/dir/stats.json", ["directory /nonexistent/dir"]),
    ],
)
def test_bad_environment_stops_at_start_up(tmp_path, native_dir, variable, value, words):
    exe = build(tmp_path, native_dir, with_header=True)
    res = run(exe, "nolocks", **{variable: value})  # no lock is ever used: start-up check
    assert res.returncode == 2
    assert res.stdout == ""
    line = res.stderr.rstrip("\n")
    assert "\n" not in line, res.stderr
    assert line.startswith(f"locktune: error: {variable}")
    for w in words:
        assert w in line


def test_unknown_site_in_locktune_algo(tmp_path, native_dir):
    res = run(build(tmp_path, native_dir, with_header=True), LOCKTUNE_ALGO="default=mcs,3=ticket")
    assert res.returncode == 2
    assert res.stderr.strip() == (
        "locktune: error: LOCKTUNE_ALGO: site 3 is not in the program's locktune_config.h"
    )


def test_unknown_algorithm_in_header(tmp_path, native_dir):
    res = run(build(tmp_path, native_dir, with_header=True, algo="mcsx"), "nolocks")
    assert res.returncode == 2
    line = res.stderr.strip()
    assert "\n" not in line
    assert line.startswith("locktune: error: locktune_config.h: site 2 (items.c:118)")
    assert "unknown algorithm 'mcsx'" in line
