/*
 * test_calibrate.c - the first lock bound waits a bounded time for the spin budget's calibration.
 *
 * The first lock of an algorithm other than posix measures the spin budget (wait.c): the calling
 * thread hands a futex back and forth with a helper thread of the runtime, pinned to another CPU.
 * On a loaded machine the helper may not get a CPU for a long while; the program must not wait
 * for it beyond the calibration's bound (50 ms, then 20 ms for the helper to exit).  Here a
 * SCHED_FIFO thread of the test's own holds the last CPU for HOG_S, so the helper pinned there
 * cannot run (until the kernel's RT throttling, 950 ms into a second, lets it); meanwhile the main
 * thread binds a lock and takes it once.  That must take well under a second (BOUND_S).  When
 * the program joined its calibration threads without a bound, it took as long as the hog kept
 * its CPU: a daemonized memcached beside a loaded machine took up to 20 s to start.
 *
 *   test_calibrate        (LOCKTUNE_ALGO names the algorithm; skipped, 77, without SCHED_FIFO
 *                         permission, with one CPU, or under a sanitizer)
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>

#include "check.h"
#include "locktune.h"

#define HOG_S   1.2 /* the hog's time on its CPU: past RT throttling's 950 ms */
#define BOUND_S 0.4 /* the first lock, bound and taken while it runs */

struct hog {
    int cpu;
    double until;
    int started; /* atomic */
};

static void *hog_main(void *arg)
{
    struct hog *h = arg;
    __atomic_store_n(&h->started, 1, __ATOMIC_RELEASE);
    while (now_s() < h->until)
        ;
    return NULL;
}

int main(void)
{
    const char *san = getenv("LOCKTUNE_SANITIZER");
    if (san && *san) { /* a sanitizer's own locks, held by a thread the hog keeps off its CPU */
        printf("test_calibrate: timing under a sanitizer: skipped\n");
        return 77;
    }
    cpu_set_t mine;
    CHECK_EQ(sched_getaffinity(0, sizeof mine, &mine), 0);
    if (CPU_COUNT(&mine) < 2) {
        printf("test_calibrate: one CPU: the calibration's threads share it; skipped\n");
        return 77;
    }
    struct hog h = {.cpu = -1};
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &mine))
            h.cpu = c;

    pthread_attr_t a;
    pthread_attr_init(&a);
    struct sched_param p = {.sched_priority = 1};
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(h.cpu, &one);
    pthread_attr_setinheritsched(&a, PTHREAD_EXPLICIT_SCHED);
    pthread_attr_setschedpolicy(&a, SCHED_FIFO);
    pthread_attr_setschedparam(&a, &p);
    pthread_attr_setaffinity_np(&a, sizeof one, &one);
    h.until = now_s() + HOG_S;
    pthread_t t;
    int r = pthread_create(&t, &a, hog_main, &h);
    pthread_attr_destroy(&a);
    if (r != 0) {
        printf("test_calibrate: SCHED_FIFO not permitted (%s); skipped\n", strerror(r));
        return 77;
    }
    while (!__atomic_load_n(&h.started, __ATOMIC_ACQUIRE))
        ;

    /* The hog has its CPU; this thread runs on another one. */
    lt_mutex_t m;
    double t0 = now_s();
    CHECK_EQ(lt_mutex_init(&m, NULL, 0), 0);
    CHECK_EQ(lt_mutex_lock(&m), 0);
    CHECK_EQ(lt_mutex_unlock(&m), 0);
    double took = now_s() - t0;
    printf("test_calibrate: the first %s lock, bound and taken while CPU %d is held: %.1f ms "
           "(bound %.0f ms; the hog holds it %.0f ms)\n",
           lt_mutex_algorithm(&m), h.cpu, took * 1e3, BOUND_S * 1e3, HOG_S * 1e3);
    CHECK(took < BOUND_S);
    CHECK_EQ(pthread_join(t, NULL), 0);
    CHECK_EQ(lt_mutex_destroy(&m), 0);
    return 0;
}
