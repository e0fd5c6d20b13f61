"""The queue locks' admission gate (runtime/src/gate.h; issue 12, item 1): never idle while a
passive waiter waits.

One CPU, so the gate admits one waiter (CPUs - 1, at least 1).  The main thread holds the lock;
A queues behind it (admitted) and B and C, arriving after, wait passively at the gate - each
seen asleep in /proc before the next starts (a spin budget of 1 ns: waiters sleep at once;
ticket's and twa's next in line, and mcstp's waiters, wait awake, and are given 1 s to arrive
instead).  Whichever arrives first, one is admitted and two wait passively.
The patience per passive waiter is 30 s, so only the lock itself can bring B and C in within
the test's time: main's unlock hands the lock to A, and A's unlock leaves it free with B and C
still passive, which must wake one of them (and so on).  Before the gate woke a passive waiter
on an idle release, B and C slept out their 30 and 60 s.  The statistics count both as gated,
and neither as let in by patience.  Nothing here depends on the machine's speed.
"""

from __future__ import annotations

import json
import os
import subprocess

import pytest
from conftest import clean_env, runtime_flags

PROGRAM = r"""
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "locktune.h"

static lt_mutex_t lock = LT_MUTEX_INITIALIZER(LT_SITE_UNKNOWN);
static int tids[3];         /* atomic */
static char order[4];       /* under the lock */
static int served;          /* under the lock */

static void *waiter(void *arg)
{
    int i = (int)(long)arg;
    __atomic_store_n(&tids[i], (int)syscall(SYS_gettid), __ATOMIC_RELEASE);
    lt_mutex_lock(&lock);
    order[served++] = (char)('A' + i);
    lt_mutex_unlock(&lock);
    return NULL;
}

/* Wait until thread tid sleeps (state S in /proc), or for 1 s: the waiter the gate admits to a
 * ticket lock is next in line, and that one waits awake (spinning, then yielding). */
static void await_sleep(int tid)
{
    char path[64], buf[256];
    snprintf(path, sizeof path, "/proc/self/task/%d/stat", tid);
    for (int tries = 0; tries < 1000; tries++) {
        FILE *f = fopen(path, "r");
        if (f) {
            size_t n = fread(buf, 1, sizeof buf - 1, f);
            fclose(f);
            buf[n] = 0;
            char *p = strrchr(buf, ')');
            if (p && p[1] == ' ' && p[2] == 'S')
                return;
        }
        usleep(1000);
    }
}

int main(void)
{
    pthread_t t[3];
    lt_mutex_lock(&lock);
    for (long i = 0; i < 3; i++) {
        pthread_create(&t[i], NULL, waiter, (void *)i);
        while (!__atomic_load_n(&tids[i], __ATOMIC_ACQUIRE))
            usleep(1000);
        await_sleep(tids[i]);
    }
    lt_mutex_unlock(&lock);
    for (int i = 0; i < 3; i++)
        pthread_join(t[i], NULL);
    printf("%s\n", order);
    return 0;
}
"""


@pytest.fixture(scope="module")
def program(tmp_path_factory, native_dir, cc):
    d = tmp_path_factory.mktemp("gate")
    (d / "prog.c").write_text(PROGRAM)
    return cc(d / "prog", d / "prog.c", flags=runtime_flags(native_dir))


def one_cpu():
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})


@pytest.mark.parametrize("algo", ["mcs", "clh", "ticket", "twa", "mcstp", "ccsynch", "dsmsynch"])
def test_an_idle_release_brings_a_passive_waiter_in(program, tmp_path, algo):
    out = tmp_path / "stats.json"
    env = clean_env(
        LOCKTUNE_ALGO=f"default={algo}",
        LOCKTUNE_SPIN_NS="1",
        LOCKTUNE_GATE_TURN_NS="30000000000",
        LOCKTUNE_STATS=str(out),
    )
    # 20 s: far beyond what the run needs (milliseconds), far below the patience B and C would
    # otherwise sleep out.
    res = subprocess.run(
        [str(program)], capture_output=True, text=True, env=env, timeout=20, preexec_fn=one_cpu
    )
    assert res.returncode == 0, res.stderr
    assert sorted(res.stdout.strip()) == ["A", "B", "C"]
    (site,) = json.loads(out.read_text())["sites"]
    counters = site["algorithm_counters"]
    assert counters["gated"] == 2, counters
    assert counters["gate_turns"] == 0, counters
