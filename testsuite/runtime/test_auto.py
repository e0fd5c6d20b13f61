"""`auto` (runtime/src/algo/auto.c): the lock watches itself and switches between a barging
futex lock and the blocking ShflLock.

The program below runs one lock through three phases - one thread alone, then eight threads
per CPU taking it back to back (threads outnumber CPUs: the queue lock's case), then one
thread alone again - and counts every section it runs, so a lost or doubled section shows.
The switches are read from LOCKTUNE_STATS.  The rules are in auto.c's header.  With a fifth
argument R the crowd and the second lone phase repeat R times: the fencing of the barging
lock's releases (auto.c's header) comes and goes with them.  In the crowd
phase each section naps 20 us, so every other thread is waiting whenever the lock is held,
whatever the machine's speed or load (with short sections a thread on a 2-CPU machine takes
the lock thousands of times in its time slice, unopposed: the barging lock's case).
"""

from __future__ import annotations

import json
import subprocess

import pytest
from conftest import clean_env, runtime_flags

PROGRAM = r"""
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "locktune.h"

static lt_mutex_t m = LT_MUTEX_INITIALIZER(1);
static volatile unsigned long counter;
static int per_thread, nap_us;

static void section(void)
{
    unsigned long c = counter;
    for (volatile int i = 0; i < 50; i++)
        ;
    counter = c + 1;
}

static void *worker(void *arg)
{
    (void)arg;
    for (int i = 0; i < per_thread; i++) {
        lt_mutex_lock(&m);
        section();
        if (nap_us)
            usleep(nap_us); /* a long section: the others pile up behind it */
        lt_mutex_unlock(&m);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc != 5 && argc != 6)
        return 2;
    int rounds = argc == 6 ? atoi(argv[5]) : 1;
    nap_us = atoi(argv[4]);
    int alone = atoi(argv[1]), crowd = atoi(argv[2]);
    per_thread = atoi(argv[3]);
    cpu_set_t set;
    sched_getaffinity(0, sizeof set, &set);
    int nthreads = crowd * CPU_COUNT(&set);
    if (nthreads > 64)
        nthreads = 64;
    for (int i = 0; i < alone; i++) { lt_mutex_lock(&m); section(); lt_mutex_unlock(&m); }
    pthread_t t[64];
    for (int r = 0; r < rounds; r++) {
        for (int i = 0; i < nthreads; i++)
            pthread_create(&t[i], NULL, worker, NULL);
        for (int i = 0; i < nthreads; i++)
            pthread_join(t[i], NULL);
        for (int i = 0; i < alone; i++) { lt_mutex_lock(&m); section(); lt_mutex_unlock(&m); }
    }
    unsigned long want = (1ul + rounds) * alone + (unsigned long)rounds * nthreads * per_thread;
    printf("%lu %lu\n", counter, want);
    return counter == want ? 0 : 1;
}
"""


@pytest.fixture(scope="module")
def program(tmp_path_factory, native_dir, cc):
    d = tmp_path_factory.mktemp("auto")
    (d / "prog.c").write_text(PROGRAM)
    return cc(d / "prog", d / "prog.c", flags=runtime_flags(native_dir))


def run(program, tmp_path, *args, **env):
    stats = tmp_path / "stats.json"
    res = subprocess.run(
        [str(program), *map(str, args)],
        capture_output=True,
        text=True,
        timeout=300,
        env=clean_env(LOCKTUNE_ALGO="default=auto", LOCKTUNE_STATS=str(stats), **env),
    )
    assert res.returncode == 0, res.stdout + res.stderr  # every section ran, once
    site = next(s for s in json.loads(stats.read_text())["sites"] if s["id"] == 1)
    assert site["algorithm"] == "auto"
    return site


def test_one_thread_alone_never_switches(program, tmp_path):
    site = run(program, tmp_path, 50000, 0, 0, 0)
    assert site["acquisitions"] == 100000
    # never waited: never switched, and its releases stayed plain stores
    assert site["algorithm_counters"] == {
        "switches_to_queue": 0,
        "switches_to_barge": 0,
        "fenced": 0,
        "unfenced": 0,
        "acquired_on_queue": 0,
    }


def test_barging_releases_are_fenced_when_contended_and_unfenced_when_quiet(program, tmp_path):
    """One thread per CPU taking the lock 15 times, sections that nap 50 us (so the others
    sleep on the barging word), then one thread alone for 20,000 acquisitions (more than the
    32 windows of 256 after which auto.c unfences, and more than the longest window), 12
    times.  At most 30 contended acquisitions in a window of at least 256: under the 1/8
    that sends the lock to the queue, so it stays barging.  Each contended phase fences the
    releases (a membarrier), each quiet one unfences them; a wake-up lost in a transition
    would hang a phase (the timeout), a section lost or run twice would show in the count."""
    site = run(program, tmp_path, 20000, 1, 15, 50, 12)
    c = site["algorithm_counters"]
    assert c["switches_to_queue"] == 0, site
    assert c["fenced"] >= 6 and c["unfenced"] >= 6, site
    assert abs(c["fenced"] - c["unfenced"]) <= 1, site  # they alternate


def test_without_membarrier_every_barging_release_is_an_exchange(program, tmp_path):
    """LOCKTUNE_AUTO_MEMBARRIER=0 (what a kernel without membarrier gets): glibc's protocol,
    never fenced or unfenced, sections exact under the same contended phases."""
    site = run(program, tmp_path, 20000, 1, 40, 50, 4, LOCKTUNE_AUTO_MEMBARRIER="0")
    c = site["algorithm_counters"]
    assert c["fenced"] == 0 and c["unfenced"] == 0, site
    assert site["parked"] > 0, site  # the waiters did sleep


def test_a_crowd_moves_the_lock_to_the_queue_and_back_when_it_leaves(program, tmp_path):
    """8 threads per CPU back to back: the barging lock's window sees most acquisitions
    contended, so the lock goes to the queue and stays there while the crowd lasts (its
    stealing hides the contention, the crowd does not); alone again, the next windows see
    neither contention nor waiters and it comes back."""
    site = run(program, tmp_path, 100000, 8, 200, 20)
    sw = site["algorithm_counters"]
    assert sw["switches_to_queue"] >= 1, site
    assert sw["switches_to_barge"] >= 1, site
    # switches are rare: a window is 256 acquisitions on the barging lock, 16,384 on the queue
    assert sw["switches_to_queue"] + sw["switches_to_barge"] <= site["acquisitions"] // 256


def test_a_lasting_crowd_keeps_the_lock_on_the_queue(program, tmp_path):
    """8 threads per CPU, 3,000 sections each that nap 20 us: whenever the lock is held, the
    others wait for it.  The lock goes to the queue when the crowd comes and stays there
    while it lasts.  On the queue the releasing thread steals the lock back at once (the
    queue's head is asleep): almost every acquisition is uncontended (0.5%) while a dozen
    threads wait, and the earlier rule, which went back to the barging lock on `contended`
    alone, made 54% of the acquisitions on the queue (4 switches each way); this one 94-96%
    (auto.c's header, "When to switch")."""
    site = run(program, tmp_path, 1000, 8, 3000, 20)
    c = site["algorithm_counters"]
    assert c["switches_to_queue"] >= 1, site
    crowd = site["acquisitions"] - 2 * 1000  # the two lone phases
    assert c["acquired_on_queue"] >= 0.8 * crowd, site


def test_forced_switches_keep_every_section(program, tmp_path):
    """LOCKTUNE_AUTO_SWITCH_EVERY=50: a switch every 50 acquisitions, with threads waiting on
    the lock being switched away from; the count of sections is still exact (the program
    checks it) and the switches happened."""
    site = run(program, tmp_path, 1000, 4, 5000, 0, LOCKTUNE_AUTO_SWITCH_EVERY="50")
    sw = site["algorithm_counters"]
    assert sw["switches_to_queue"] >= 10 and sw["switches_to_barge"] >= 10, site


@pytest.mark.parametrize(
    "var,value", [("LOCKTUNE_AUTO_SWITCH_EVERY", "0"), ("LOCKTUNE_AUTO_MEMBARRIER", "yes")]
)
def test_a_bad_setting_is_a_one_line_error(program, tmp_path, var, value):
    res = subprocess.run(
        [str(program), "1", "0", "0", "0"],
        capture_output=True,
        text=True,
        timeout=60,
        env=clean_env(LOCKTUNE_ALGO="default=auto", **{var: value}),
    )
    assert res.returncode == 2
    line = res.stderr.strip()
    assert "\n" not in line and f"{var}={value}" in line
