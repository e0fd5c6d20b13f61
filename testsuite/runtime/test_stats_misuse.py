"""LOCKTUNE_STATS (per-site statistics written at exit) and misuse reports.

The program below knows exactly how many acquisitions, trylock failures, timeouts and
condition waits each site sees, so the JSON must say exactly that; contention and parking
are checked where the program forces them.  Misuse that POSIX leaves undefined is refused
and reported once per site, with the site's file:line from locktune_config.h.
"""

from __future__ import annotations

import json
import os
import subprocess

import pytest
from conftest import clean_env

HEADER = r"""
#include "locktune.h"
enum { LT_SITE_QUEUE_C_10 = 1, LT_SITE_ITEMS_C_118 = 2 };
static const struct lt_site_config lt_config_sites[] = {
    {LT_SITE_QUEUE_C_10, "queue.c", 10, "qlock", "mcscr", -1},
    {LT_SITE_ITEMS_C_118, "items.c", 118, "lru_locks", "posix", 0},
};
LT_CONFIG_REGISTER(lt_config_sites)
"""

PROGRAM = r"""
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "locktune.h"
#include "locktune_config.h"

static lt_mutex_t qlock = LT_MUTEX_INITIALIZER(LT_SITE_QUEUE_C_10);
static lt_cond_t cv = LT_COND_INITIALIZER;
static int ready, waiting;

static int started;
static long extra; /* holder acquisitions while main was not waiting yet */

static void work(void)
{
    for (volatile int k = 0; k < 200; k++)
        ;
}

static void *holder(void *arg)
{
    (void)arg;
    __atomic_store_n(&started, 1, __ATOMIC_RELEASE);
    for (int i = 0; i < 2000; i++) {          /* 2000 acquisitions, contended with main */
        lt_mutex_lock(&qlock);
        work();
        lt_mutex_unlock(&qlock);
    }
    for (;;) {                                 /* more, until main waits: then 1 signal */
        lt_mutex_lock(&qlock);
        if (waiting)
            break;
        lt_mutex_unlock(&qlock);
        __atomic_fetch_add(&extra, 1, __ATOMIC_RELAXED);
    }
    ready = 1;
    lt_cond_signal(&cv);
    lt_mutex_unlock(&qlock);
    return NULL;
}

static void *try_it(void *m)
{
    return (void *)(long)lt_mutex_trylock(m);
}

static void *time_out(void *m)
{
    struct timespec d;
    clock_gettime(CLOCK_REALTIME, &d);
    d.tv_nsec += 20000000;
    if (d.tv_nsec >= 1000000000) {
        d.tv_sec++;
        d.tv_nsec -= 1000000000;
    }
    return (void *)(long)lt_mutex_timedlock(m, &d);
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "stats";
    if (strcmp(mode, "stats") == 0) {
        pthread_t t;
        lt_mutex_lock(&qlock);                 /* 1 acquisition; the holder's first waits */
        pthread_create(&t, NULL, holder, NULL);
        while (!__atomic_load_n(&started, __ATOMIC_ACQUIRE))
            ;
        struct timespec ms50 = {0, 50000000};
        nanosleep(&ms50, NULL);
        lt_mutex_unlock(&qlock);
        for (int i = 0; i < 2000; i++) {      /* 2000 acquisitions */
            lt_mutex_lock(&qlock);
            work();
            lt_mutex_unlock(&qlock);
        }
        lt_mutex_lock(&qlock);                 /* 1 + 1 per wake (cond re-acquisitions) */
        waiting = 1;
        while (!ready)
            lt_cond_wait(&cv, &qlock);
        lt_mutex_unlock(&qlock);
        pthread_join(t, NULL);
        printf("%ld\n", extra);
        lt_mutex_t items[3];                   /* 3 instances of site 2, one process-shared */
        pthread_mutexattr_t a;
        pthread_mutexattr_init(&a);
        pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
        lt_mutex_init(&items[0], NULL, LT_SITE_ITEMS_C_118);
        lt_mutex_init(&items[1], NULL, LT_SITE_ITEMS_C_118);
        lt_mutex_init(&items[2], &a, LT_SITE_ITEMS_C_118);
        void *r;
        for (int i = 0; i < 3; i++) {          /* 3 acquisitions, 3 trylock failures */
            lt_mutex_lock(&items[i]);
            pthread_t u;
            pthread_create(&u, NULL, try_it, &items[i]);
            pthread_join(u, &r);
            if ((long)r != EBUSY)
                return 3;
            lt_mutex_unlock(&items[i]);
        }
        lt_mutex_lock(&items[0]);              /* 1 more acquisition, 1 timeout */
        pthread_t v;
        pthread_create(&v, NULL, time_out, &items[0]);
        pthread_join(v, &r);
        if ((long)r != ETIMEDOUT)
            return 4;
        lt_mutex_unlock(&items[0]);
        for (int i = 0; i < 3; i++)
            lt_mutex_destroy(&items[i]);
        if (argc > 2 && strcmp(argv[2], "fork") == 0) {
            pid_t pid = fork();
            if (pid == 0) {
                lt_mutex_lock(&qlock);
                lt_mutex_unlock(&qlock);
                exit(0);
            }
            waitpid(pid, NULL, 0);
        }
        return 0;
    }
    /* misuse */
    lt_mutex_t m;
    lt_mutex_init(&m, NULL, LT_SITE_ITEMS_C_118);
    printf("unlock-free %d\n", lt_mutex_unlock(&m) == EPERM);
    printf("unlock-free-again %d\n", lt_mutex_unlock(&m) == EPERM); /* reported once */
    lt_mutex_lock(&m);
    printf("destroy-held %d\n", lt_mutex_destroy(&m) == EBUSY);
    struct timespec soon;
    clock_gettime(CLOCK_REALTIME, &soon);
    soon.tv_nsec += 20000000;
    if (soon.tv_nsec >= 1000000000) {
        soon.tv_sec++;
        soon.tv_nsec -= 1000000000;
    }
    printf("relock-times-out %d\n", lt_mutex_timedlock(&m, &soon) == ETIMEDOUT);
    lt_mutex_unlock(&m);
    lt_mutex_destroy(&m);
    printf("use-destroyed %d\n", lt_mutex_lock(&m) == EINVAL);
    lt_mutex_t q = LT_MUTEX_INITIALIZER(LT_SITE_QUEUE_C_10);
    lt_cond_t c = LT_COND_INITIALIZER;
    printf("cond-not-held %d\n", lt_cond_wait(&c, &q) == EPERM);
    return 0;
}
"""


@pytest.fixture(scope="module")
def program(tmp_path_factory, native_dir):
    d = tmp_path_factory.mktemp("stats")
    (d / "locktune_config.h").write_text(HEADER)
    (d / "prog.c").write_text(PROGRAM)
    lib = native_dir / "lib"
    cmd = ["cc", "-O1", "-Wall", "-Wextra", "-Werror", "-I", str(native_dir / "include")]
    cmd += ["-I", str(d), "-o", str(d / "prog"), str(d / "prog.c")]
    cmd += ["-L", str(lib), f"-Wl,-rpath,{lib}", "-llocktune", "-pthread"]
    res = subprocess.run(cmd, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    return d / "prog"


def run(exe, *args, **env):
    return subprocess.run(
        [str(exe), *args], capture_output=True, text=True, env=clean_env(**env), timeout=120
    )


def test_statistics_json(program, tmp_path):
    out = tmp_path / "stats.json"
    res = run(program, LOCKTUNE_STATS=str(out), LOCKTUNE_SPIN_NS="1000")
    assert res.returncode == 0, res.stderr
    doc = json.loads(out.read_text())
    assert doc["schema"] == "locktune-runtime-stats/1"
    assert doc["program"] == str(program)
    assert doc["spin_budget_ns"] == 1000 and doc["spin_budget_source"] == "LOCKTUNE_SPIN_NS"
    sites = {s["id"]: s for s in doc["sites"]}
    q, items = sites[1], sites[2]
    assert (q["file"], q["line"], q["name"], q["algorithm"]) == ("queue.c", 10, "qlock", "mcscr")
    assert q["instances"] == 1  # statically initialised, bound on first use
    assert q["cond_waits"] >= 1
    extra = int(res.stdout)
    # 1 + 2000 + 2000 + 1 + 1 + one re-acquisition per condition wait + the holder's polling
    assert q["acquisitions"] == 4003 + q["cond_waits"] + extra
    assert q["contended"] > 0 and q["handovers"] > 0
    assert q["parked"] is not None
    assert set(q["algorithm_counters"]) >= {"culled", "reprovisioned", "fairness_grants"}
    assert (items["file"], items["line"], items["algorithm"]) == ("items.c", 118, "posix")
    assert items["instances"] == 3 and items["destroyed"] == 3
    assert items["acquisitions"] == 4 and items["trylock_failures"] == 3
    assert items["timeouts"] == 1
    assert items["posix_fallback"] == {
        "total": 1,
        "process_shared": 1,
        "robust": 0,
        "priority_protocol": 0,
    }
    assert items["parked"] is None and items["handovers"] is None  # glibc's waits are opaque


def test_forked_child_writes_beside_the_parent(program, tmp_path):
    out = tmp_path / "stats.json"
    res = run(program, "stats", "fork", LOCKTUNE_STATS=str(out))
    assert res.returncode == 0, res.stderr
    children = [p for p in os.listdir(tmp_path) if p.startswith("stats.json.")]
    assert len(children) == 1, children
    parent = json.loads(out.read_text())
    child = json.loads((tmp_path / children[0]).read_text())
    assert child["pid"] != parent["pid"] and children[0] == f"stats.json.{child['pid']}"


def test_no_statistics_without_the_variable(program, tmp_path):
    res = subprocess.run(
        [str(program)], capture_output=True, text=True, env=clean_env(), cwd=tmp_path, timeout=120
    )
    assert res.returncode == 0, res.stderr
    assert list(tmp_path.iterdir()) == []


def test_misuse_is_refused_and_reported_with_file_line(program):
    res = run(program, "misuse")
    assert res.returncode == 0, res.stderr
    assert all(line.endswith(" 1") for line in res.stdout.splitlines()), res.stdout
    reports = [line for line in res.stderr.splitlines() if line.startswith("locktune: misuse:")]
    assert len(reports) == len(res.stderr.splitlines())
    text = "\n".join(reports)
    site2 = "site 2 (items.c:118 lru_locks)"
    assert f"unlock of a lock that is not held: {site2}" in text
    assert text.count("unlock of a lock that is not held") == 1  # once per site and kind
    assert f"destroy of a lock that is held (EBUSY): {site2}" in text
    assert "a thread locks a lock it already holds: it deadlocks" in text
    assert f"use of a destroyed lock (EINVAL): {site2}" in text
    assert "condition wait without holding the mutex (EPERM): site 1 (queue.c:10 qlock)" in text
