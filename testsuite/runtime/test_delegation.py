"""The delegating algorithms (rcl, fc, ccsynch, dsmsynch, oyama) from a program's point of view.

A program built against the installed liblocktune, with a generated-style header that puts one
site on each delegating algorithm (and rcl sites on two server numbers): every algorithm works
side by side, by lt_execute and by lock/unlock; LOCKTUNE_STATS reports the sections each site
delegated, each RCL server's use rate, false-serialisation rate, pool and manager counters,
and the mode the servers ran in; a program whose main returns while client threads are still
executing exits normally with its report written; LOCKTUNE_SERVERS, LOCKTUNE_RCL_MODE and
LOCKTUNE_RCL_WAIT are checked at start-up (one line naming the variable, status 2).
"""

from __future__ import annotations

import json
import os
import subprocess

import pytest
from conftest import clean_env

HEADER = r"""
#include "locktune.h"
enum { S_FC = 1, S_CC, S_DSM, S_OYAMA, S_RCL0, S_RCL1, S_POSIX };
static const struct lt_site_config lt_config_sites[] = {
    {S_FC, "fc.c", 1, "fc_lock", "fc", -1},
    {S_CC, "cc.c", 2, "cc_lock", "ccsynch", -1},
    {S_DSM, "dsm.c", 3, "dsm_lock", "dsmsynch", -1},
    {S_OYAMA, "oyama.c", 4, "oyama_lock", "oyama", -1},
    {S_RCL0, "rcl.c", 5, "rcl_lock0", "rcl", 0},
    {S_RCL1, "rcl.c", 6, "rcl_lock1", "rcl", @SERVER1@},
    {S_POSIX, "posix.c", 7, "posix_lock", "posix", -1},
};
LT_CONFIG_REGISTER(lt_config_sites)
"""

PROGRAM = r"""
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "locktune.h"
#include "locktune_config.h"

#define NLOCKS 7
static lt_mutex_t locks[NLOCKS] = {
    LT_MUTEX_INITIALIZER(S_FC),   LT_MUTEX_INITIALIZER(S_CC),   LT_MUTEX_INITIALIZER(S_DSM),
    LT_MUTEX_INITIALIZER(S_OYAMA), LT_MUTEX_INITIALIZER(S_RCL0), LT_MUTEX_INITIALIZER(S_RCL1),
    LT_MUTEX_INITIALIZER(S_POSIX)};
static long counts[NLOCKS];

static void *inc(void *arg)
{
    (*(long *)arg)++;
    return arg;
}

static void *nest(void *arg)  /* a section of one lock takes the next one */
{
    long k = (long *)arg - counts;
    counts[k]++;
    long j = (k + 1) % NLOCKS;
    if (lt_execute(&locks[j], inc, &counts[j]) != &counts[j])
        abort();
    return arg;
}

static void *worker(void *arg)
{
    long n = (long)arg;
    for (long i = 0; i < n; i++)
        for (int k = 0; k < NLOCKS; k++) {
            if (lt_execute(&locks[k], i % 5 == 0 ? nest : inc, &counts[k]) != &counts[k])
                abort();
            if (i % 3 == 0) {
                lt_mutex_lock(&locks[k]);
                counts[k]++;
                lt_mutex_unlock(&locks[k]);
            }
        }
    return NULL;
}

static int served; /* clients whose first section has returned */

static void *forever(void *arg)
{
    lt_execute(&locks[(long)arg % NLOCKS], inc, &counts[(long)arg % NLOCKS]);
    __atomic_fetch_add(&served, 1, __ATOMIC_RELEASE);
    for (;;)
        lt_execute(&locks[(long)arg % NLOCKS], inc, &counts[(long)arg % NLOCKS]);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "nolocks") == 0)
        return 0;
    if (argc > 1 && strcmp(argv[1], "exit-while-busy") == 0) {
        for (long i = 0; i < 8; i++) {
            pthread_t t;
            pthread_create(&t, NULL, forever, (void *)i);
            pthread_detach(t);
        }
        /* every client served once (on a loaded machine 50 ms may not be enough for that),
         * then a little more: main returns with clients still inside lt_execute */
        while (__atomic_load_n(&served, __ATOMIC_ACQUIRE) < 8)
            usleep(1000);
        usleep(50000);
        return 0;
    }
    enum { T = 4, N = 500 };
    pthread_t t[T];
    for (int i = 0; i < T; i++)
        pthread_create(&t[i], NULL, worker, (void *)(long)N);
    for (int i = 0; i < T; i++)
        pthread_join(t[i], NULL);
    long expected = (long)T * (N + (N + 2) / 3 + (N + 4) / 5);
    for (int k = 0; k < NLOCKS; k++) {
        printf("%s %ld\n", lt_mutex_algorithm(&locks[k]), counts[k]);
        if (counts[k] != expected) {
            fprintf(stderr, "lock %d: %ld, expected %ld\n", k, counts[k], expected);
            return 1;
        }
    }
    return 0;
}
"""

ALGORITHMS = ["fc", "ccsynch", "dsmsynch", "oyama", "rcl", "rcl", "posix"]


@pytest.fixture(scope="module")
def program(tmp_path_factory, native_dir):
    def build(server1: int = 1):
        d = tmp_path_factory.mktemp(f"delegation{server1}")
        (d / "locktune_config.h").write_text(HEADER.replace("@SERVER1@", str(server1)))
        src = d / "prog.c"
        src.write_text(PROGRAM)
        lib = native_dir / "lib"
        cmd = ["cc", "-O1", "-Wall", "-Wextra", "-Werror", "-std=gnu11"]
        cmd += ["-I", str(native_dir / "include"), "-I", str(d), "-o", str(d / "prog"), str(src)]
        cmd += ["-L", str(lib), f"-Wl,-rpath,{lib}", "-llocktune", "-pthread"]
        res = subprocess.run(cmd, capture_output=True, text=True)
        assert res.returncode == 0, res.stderr
        return d / "prog"

    return build


def run(exe, *args, timeout=120, **env):
    return subprocess.run(
        [str(exe), *args], capture_output=True, text=True, env=clean_env(**env), timeout=timeout
    )


def report(path):
    with open(path) as f:
        return json.load(f)


def test_every_delegating_algorithm_side_by_side(program, tmp_path):
    stats = tmp_path / "stats.json"
    res = run(program(), LOCKTUNE_STATS=str(stats))
    assert res.returncode == 0, res.stderr
    lines = res.stdout.split("\n")
    assert [ln.split()[0] for ln in lines if ln] == ALGORITHMS
    doc = report(stats)
    sites = {s["id"]: s for s in doc["sites"] if s["id"]}
    for sid, algo in enumerate(ALGORITHMS, start=1):
        s = sites[sid]
        assert s["algorithm"] == algo
        assert s["acquisitions"] > 0
        if algo == "posix":
            assert s["delegated"] is None  # posix cannot delegate: unknown, not zero
        elif algo == "rcl":
            assert s["delegated"] > 0  # every lt_execute ran on the server
            assert s["server"] in (0, 1)
            assert isinstance(s["server_cpu"], int)
        else:
            assert s["delegated"] >= 0
            assert s["algorithm_counters"]["combining_sessions"] > 0
    rcl = doc["rcl"]
    assert rcl["mode"] in ("fifo", "bounded", "degraded")
    assert rcl["client_ids"]["allocated"] >= 4
    assert rcl["servers"], rcl
    for srv in rcl["servers"]:
        assert 0 < srv["use_rate"] <= 1
        assert 0 <= srv["false_serialisation_rate"] <= srv["use_rate"]
        assert srv["servicing_threads_created"] >= 1
        assert srv["requests"] > 0
        assert srv["manager"]["activations"] >= 0
        # Every lock's holder in the server's table, none in the lock's own line (the first
        # lock bound to a server was given the "inline" slot 0: the server's first touch of
        # its pages zeroed the bit that reserves it).
        assert srv["locks"] >= 1 and srv["inline_holders"] == 0, srv


def test_two_servers_on_two_cpus(program, tmp_path):
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs 2 CPUs")
    cpus = sorted(os.sched_getaffinity(0))
    stats = tmp_path / "stats.json"
    servers = f"{cpus[-1]},{cpus[0]}"
    res = run(program(), LOCKTUNE_STATS=str(stats), LOCKTUNE_SERVERS=servers)
    assert res.returncode == 0, res.stderr
    doc = report(stats)
    assert sorted(s["cpu"] for s in doc["rcl"]["servers"]) == sorted({cpus[0], cpus[-1]})
    by_id = {s["id"]: s for s in doc["sites"] if s["id"]}
    assert (by_id[5]["server"], by_id[5]["server_cpu"]) == (0, cpus[-1])
    assert (by_id[6]["server"], by_id[6]["server_cpu"]) == (1, cpus[0])


def test_degraded_mode_on_request(program, tmp_path):
    stats = tmp_path / "stats.json"
    res = run(program(), LOCKTUNE_STATS=str(stats), LOCKTUNE_RCL_MODE="degraded")
    assert res.returncode == 0, res.stderr
    assert "SCHED_FIFO is not permitted" not in res.stderr  # asked for: no note
    rcl = report(stats)["rcl"]
    assert rcl["mode"] == "degraded"
    assert rcl["degraded_reason"] == "LOCKTUNE_RCL_MODE=degraded"
    assert all(s["scheduling"] == "SCHED_OTHER" for s in rcl["servers"])


@pytest.mark.parametrize("wait", ["spin", "yield", "park", "yield-park"])
def test_client_wait_policies(program, tmp_path, wait):
    stats = tmp_path / "stats.json"
    res = run(program(), LOCKTUNE_STATS=str(stats), LOCKTUNE_RCL_WAIT=wait)
    assert res.returncode == 0, res.stderr
    assert report(stats)["rcl"]["client_wait"] == wait


def test_main_returns_while_clients_execute(program, tmp_path):
    """Clean shutdown: no hang at exit, the statistics written, status 0."""
    stats = tmp_path / "stats.json"
    for mode in ("auto", "degraded"):
        res = run(
            program(),
            "exit-while-busy",
            timeout=30,
            LOCKTUNE_STATS=str(stats),
            LOCKTUNE_RCL_MODE=mode,
        )
        assert res.returncode == 0, res.stderr
        doc = report(stats)
        assert doc["rcl"]["servers"][0]["requests"] > 0
        stats.unlink()


@pytest.mark.parametrize(
    "variable,value,words",
    [
        ("LOCKTUNE_SERVERS", "one", ["expected CPU numbers separated by commas"]),
        ("LOCKTUNE_SERVERS", "1,", ["expected CPU numbers separated by commas"]),
        ("LOCKTUNE_SERVERS", "-1", ["expected CPU numbers separated by commas"]),
        ("LOCKTUNE_SERVERS", "4095", ["CPU 4095 is not one this process may run on"]),
        ("LOCKTUNE_RCL_MODE", "realtime", ["expected auto, fifo, bounded or degraded"]),
        ("LOCKTUNE_RCL_WAIT", "sleep", ["expected spin, yield, park or yield-park"]),
    ],
)
def test_bad_rcl_environment_stops_at_start_up(program, variable, value, words):
    res = run(program(), "nolocks", **{variable: value})
    assert res.returncode == 2
    assert res.stdout == ""
    line = res.stderr.rstrip("\n")
    assert "\n" not in line, res.stderr
    assert line.startswith(f"locktune: error: {variable}='{value}'")
    for w in words:
        assert w in line


def test_site_on_a_server_the_variable_does_not_list(program):
    cpu = sorted(os.sched_getaffinity(0))[-1]
    res = run(program(server1=3), LOCKTUNE_SERVERS=str(cpu))
    assert res.returncode == 2
    line = res.stderr.strip()
    assert "\n" not in line
    assert line == (
        f"locktune: error: LOCKTUNE_SERVERS='{cpu}' lists 1 CPU (servers 0..0), but site 6 "
        "(rcl.c:6 rcl_lock1) runs on server 3"
    )
