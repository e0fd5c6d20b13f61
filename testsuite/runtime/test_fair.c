/*
 * test_fair ALGO - bounded unfairness (issue 12, item 2): no waiter is passed over for long.
 *
 * EARLY threads take one lock back to back with a short section (four shared lines), on 2
 * CPUs whatever the machine; LATE more threads start once the queue is long and do the same.
 * Half the acquisitions are lt_mutex_lock/unlock, half lt_execute (the delegating algorithms
 * run those on a combiner or a server).  Over the window in which all of them run, every
 * thread must get
 *   - at least 1% of a fair share (the window's acquisitions over the number of threads), and
 *   - no acquisition that waited longer than 1 s beyond what the machine itself made a thread
 *     wait: a control thread sleeping 1 ms at a time measures the worst scheduling delay over
 *     the same window (a loaded machine keeps threads off a CPU by itself; that is not the
 *     lock's doing).
 * The failure this catches: a lock that lets the threads already in motion pass a newcomer
 * indefinitely (a real library's benchmark under shfl-block: 4 late threads got 4
 * acquisitions in 2 s while 16 others got 18 million).  Timing: skipped (77) under
 * sanitizers.
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

#define EARLY        16
#define LATE         4
#define THREADS      (EARLY + LATE)
#define LATE_AFTER_S 0.3 /* the early threads have filled the queue by then */
#define WINDOW_S     2.0 /* all threads running */
#define SHARE_MIN    0.01
#define WAIT_MAX_S   1.0

static struct {
    long v;
    char pad[120];
} lines[4] __attribute__((aligned(128)));

static lt_mutex_t lock = LT_MUTEX_INITIALIZER(LT_SITE_UNKNOWN);
static double window_start; /* atomic (written once before late_go) */
static int late_go, stop;   /* atomic */
static long total;          /* under the lock */

struct worker {
    pthread_t t;
    int late;
    long in_window;    /* acquisitions that began inside the window */
    double max_wait_s; /* the longest, among those */
    double worst_at_s; /* when it began, relative to the window */
} __attribute__((aligned(128)));
static struct worker w[THREADS];

static void *section(void *arg)
{
    (void)arg;
    for (int k = 0; k < 4; k++)
        lines[k].v++;
    total++;
    return NULL;
}

static void *worker_main(void *arg)
{
    struct worker *me = arg;
    if (me->late)
        while (!__atomic_load_n(&late_go, __ATOMIC_ACQUIRE))
            usleep(1000);
    for (unsigned long n = 0; !__atomic_load_n(&stop, __ATOMIC_RELAXED); n++) {
        double t0 = now_s();
        if (n & 1) {
            lt_execute(&lock, section, NULL);
        } else {
            CHECK_EQ(lt_mutex_lock(&lock), 0);
            section(NULL);
            CHECK_EQ(lt_mutex_unlock(&lock), 0);
        }
        double ws = __atomic_load_n(&late_go, __ATOMIC_ACQUIRE) ? window_start : 0;
        if (ws && t0 >= ws) {
            me->in_window++;
            double waited = now_s() - t0;
            if (waited > me->max_wait_s) {
                me->max_wait_s = waited;
                me->worst_at_s = t0 - ws;
            }
        }
    }
    return NULL;
}

/* The machine's own delay, measured beside the test (check.h). */
static struct lateness control = {&stop, 0};

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: test_fair ALGORITHM (run with LOCKTUNE_ALGO=default=ALGORITHM)\n");
        return 2;
    }
    const char *san = getenv("LOCKTUNE_SANITIZER");
    if (san && *san) {
        printf("test_fair %s: timing under a sanitizer: skipped\n", argv[1]);
        return 77;
    }
    cpu_set_t two;
    CPU_ZERO(&two);
    CPU_SET(0, &two);
    CPU_SET(1, &two);
    sched_setaffinity(0, sizeof two, &two); /* one CPU only: the test still holds */
    CHECK_EQ(lt_mutex_init(&lock, NULL, LT_SITE_UNKNOWN), 0);
    const char *bound = lt_mutex_algorithm(&lock);
    CHECK(bound && strcmp(bound, argv[1]) == 0);

    for (int i = 0; i < THREADS; i++) {
        w[i].late = i >= EARLY;
        CHECK_EQ(pthread_create(&w[i].t, NULL, worker_main, &w[i]), 0);
    }
    pthread_t control_thread;
    CHECK_EQ(pthread_create(&control_thread, NULL, machine_lateness, &control), 0);
    usleep((useconds_t)(LATE_AFTER_S * 1e6));
    window_start = now_s();
    __atomic_store_n(&late_go, 1, __ATOMIC_RELEASE);
    usleep((useconds_t)(WINDOW_S * 1e6));
    __atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
    for (int i = 0; i < THREADS; i++)
        CHECK_EQ(pthread_join(w[i].t, NULL), 0);
    CHECK_EQ(pthread_join(control_thread, NULL), 0);

    long sum = 0;
    for (int i = 0; i < THREADS; i++)
        sum += w[i].in_window;
    double fair = (double)sum / THREADS, wait_bound = WAIT_MAX_S + control.late_s;
    int bad = 0;
    long least = sum;
    double longest = 0;
    for (int i = 0; i < THREADS; i++) {
        least = w[i].in_window < least ? w[i].in_window : least;
        longest = w[i].max_wait_s > longest ? w[i].max_wait_s : longest;
        if ((double)w[i].in_window < SHARE_MIN * fair || w[i].max_wait_s > wait_bound) {
            fprintf(stderr,
                    "test_fair %s: %s thread %d: %ld acquisitions in the window (fair share %.0f, "
                    "floor %.0f), longest wait %.3f s at +%.2f s (bound %.3f s)\n",
                    argv[1], w[i].late ? "late" : "early", i, w[i].in_window, fair,
                    SHARE_MIN * fair, w[i].max_wait_s, w[i].worst_at_s, wait_bound);
            bad = 1;
        }
    }
    CHECK_EQ(lines[0].v, total); /* mutual exclusion held */
    printf("test_fair %s: %d threads, %ld acquisitions in %.1f s; least %ld (%.1f%% of a fair "
           "share), longest wait %.3f s (machine's own delay %.3f s)\n",
           argv[1], THREADS, sum, WINDOW_S, least, fair > 0 ? 100.0 * (double)least / fair : 0.0,
           longest, control.late_s);
    return bad;
}
