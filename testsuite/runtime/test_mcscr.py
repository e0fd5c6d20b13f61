"""mcscr as the Malthusian paper has it (issue 12, item 3): the passive set is reprovisioned.

Three waiters queue, one after the other, behind a holder, with a spin budget of 1 ns, so each
sleeps at once (which the test sees in /proc) and the queue's order is known.  The holder's
unlock culls the first (the paper's rule: it has a successor that can take the lock instead)
and grants the second.  Then the active set is gone (every thread takes the lock once), while
a passive waiter still sleeps: the lock itself must bring it back (work conservation: its
standby finds the lock idle and takes it, and the passive set drains by direct grants), which
the statistics count as reprovisionings - not leave it to a timer of the waiter's own (before:
1 to 8 ms asleep on a free lock, no reprovisioning counted).  Counted with LOCKTUNE_STATS, so
nothing depends on the machine's speed.
"""

from __future__ import annotations

import json
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
#include <time.h>
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

/* Wait until thread tid sleeps (state S in /proc): it has queued and parked. */
static void await_sleep(int tid)
{
    char path[64], buf[256];
    snprintf(path, sizeof path, "/proc/self/task/%d/stat", tid);
    for (int tries = 0; tries < 60000; tries++) {
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
    fprintf(stderr, "thread %d never slept\n", tid);
    exit(2);
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
    d = tmp_path_factory.mktemp("mcscr")
    (d / "prog.c").write_text(PROGRAM)
    return cc(d / "prog", d / "prog.c", flags=runtime_flags(native_dir))


@pytest.mark.parametrize("run", range(3))
def test_a_passive_waiter_is_woken_when_the_queue_runs_dry(program, tmp_path, run):
    out = tmp_path / "stats.json"
    env = clean_env(LOCKTUNE_ALGO="default=mcscr", LOCKTUNE_SPIN_NS="1", LOCKTUNE_STATS=str(out))
    res = subprocess.run([str(program)], capture_output=True, text=True, env=env, timeout=120)
    assert res.returncode == 0, res.stderr
    (site,) = json.loads(out.read_text())["sites"]
    counters = site["algorithm_counters"]
    # A (first in the queue) is culled and B gets the lock; every thread is served once.
    assert counters["culled"] >= 1, counters
    assert res.stdout.startswith("B") and sorted(res.stdout.strip()) == ["A", "B", "C"]
    # The culled waiters come back by the lock's doing (or by a fairness grant, 1 in 1000).
    assert counters["reprovisioned"] + counters["fairness_grants"] >= 1, counters
