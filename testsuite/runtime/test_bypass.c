/*
 * test_bypass ALGO - a waiter is not passed over indefinitely by threads that release the lock
 * and take it again at once: every algorithm (the locks that let arrivals steal bound it:
 * shfl-block's impatient head, shfl_core.h; spin's and fc's impatient tickets, impatient.h).
 *
 * Everything runs on one CPU, the worst case for a lock that lets arrivals steal: RETAKERS
 * threads take the lock back to back, each holding it for SECTION_US of work, so whoever is
 * preempted is preempted holding it, and whoever runs releases and re-takes it within
 * nanoseconds; WAITERS threads take it now and then (a short sleep between two acquisitions,
 * so each arrives while the lock is held and has to queue).  Over WINDOW_S, every waiter must
 * complete acquisitions, none waiting longer than WAIT_MAX_S beyond the machine's own worst
 * scheduling delay (a control thread sleeping 1 ms at a time).  Waiters and re-takers on one
 * CPU number 1 + RETAKERS + WAITERS: oversubscribed.
 *
 * The failures this catches: a queue head that has waited its patience sets no_steal, but a
 * fast path that takes a free word without looking at no_steal lets the re-takers steal past
 * it at every release; a test-and-set word with no bound at all (spin, fc before impatient.h).
 * The waiters then got the lock only when a re-taker happened to be preempted between its
 * release and its next take (seconds apart, or never in the window).
 * Timing: skipped (77) under sanitizers.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "locktune.h"

#define RETAKERS   4
#define WAITERS    4
#define THREADS    (RETAKERS + WAITERS)
#define SECTION_US 20.0
#define PAUSE_US   2000 /* a waiter's sleep between two acquisitions */
#define WINDOW_S   2.5
#define WAIT_MAX_S 1.0

static lt_mutex_t lock = LT_MUTEX_INITIALIZER(LT_SITE_UNKNOWN);
static int stop;           /* atomic */
static long inside, total; /* under the lock */
static volatile long sink; /* the section's work */

struct worker {
    pthread_t t;
    int waiter;
    long acquired;
    double max_wait_s;
} __attribute__((aligned(128)));
static struct worker w[THREADS];

static void section(void)
{
    CHECK_EQ(inside++, 0); /* mutual exclusion */
    double t0 = now_s();
    while (now_s() - t0 < SECTION_US * 1e-6)
        sink++;
    total++;
    inside--;
}

static void *worker_main(void *arg)
{
    struct worker *me = arg;
    while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
        if (me->waiter)
            usleep(PAUSE_US);
        double t0 = now_s();
        CHECK_EQ(lt_mutex_lock(&lock), 0);
        double waited = now_s() - t0;
        section();
        CHECK_EQ(lt_mutex_unlock(&lock), 0);
        me->acquired++;
        if (waited > me->max_wait_s)
            me->max_wait_s = waited;
    }
    return NULL;
}

/* The machine's own delay, measured beside the test (check.h). */
static struct lateness control = {&stop, 0};

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr,
                "usage: test_bypass ALGORITHM (run with LOCKTUNE_ALGO=default=ALGORITHM)\n");
        return 2;
    }
    const char *san = getenv("LOCKTUNE_SANITIZER");
    if (san && *san) {
        printf("test_bypass %s: timing under a sanitizer: skipped\n", argv[1]);
        return 77;
    }
    /* One CPU: the first the process may use. */
    cpu_set_t set, one;
    CHECK_EQ(sched_getaffinity(0, sizeof set, &set), 0);
    int cpu = 0;
    while (!CPU_ISSET(cpu, &set))
        cpu++;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    CHECK_EQ(sched_setaffinity(0, sizeof one, &one), 0);
    CHECK_EQ(lt_mutex_init(&lock, NULL, LT_SITE_UNKNOWN), 0);
    const char *bound = lt_mutex_algorithm(&lock);
    CHECK(bound && strcmp(bound, argv[1]) == 0);

    for (int i = 0; i < THREADS; i++) {
        w[i].waiter = i >= RETAKERS;
        CHECK_EQ(pthread_create(&w[i].t, NULL, worker_main, &w[i]), 0);
    }
    pthread_t control_thread;
    CHECK_EQ(pthread_create(&control_thread, NULL, machine_lateness, &control), 0);
    usleep((useconds_t)(WINDOW_S * 1e6));
    __atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
    /* A waiter starved past the window still gets the lock once the re-takers stop. */
    for (int i = 0; i < THREADS; i++)
        CHECK_EQ(pthread_join(w[i].t, NULL), 0);
    CHECK_EQ(pthread_join(control_thread, NULL), 0);

    double wait_bound = WAIT_MAX_S + control.late_s, longest = 0;
    long least = total;
    int bad = 0;
    for (int i = 0; i < THREADS; i++) {
        if (!w[i].waiter)
            continue;
        least = w[i].acquired < least ? w[i].acquired : least;
        longest = w[i].max_wait_s > longest ? w[i].max_wait_s : longest;
        if (w[i].acquired < 2 || w[i].max_wait_s > wait_bound) {
            fprintf(stderr,
                    "test_bypass %s: waiter %d: %ld acquisitions, longest wait %.3f s (bound "
                    "%.3f s)\n",
                    argv[1], i, w[i].acquired, w[i].max_wait_s, wait_bound);
            bad = 1;
        }
    }
    printf("test_bypass %s: %d re-takers, %d waiters on one CPU, %ld acquisitions in %.1f s; "
           "least waiter %ld, longest wait %.3f s (machine's own delay %.3f s)\n",
           argv[1], RETAKERS, WAITERS, total, WINDOW_S, least, longest, control.late_s);
    return bad;
}
