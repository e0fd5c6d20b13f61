/*
 * test_cond ALGO - condition variables against their destruction (issue 12, item 5).
 *
 *   destroy-race  POSIX allows destroying a condition variable once its waiters are woken.
 *                 A waiter in a timed wait whose deadline falls right when a signaller wakes
 *                 it; the signaller then destroys the condition variable, poisons it and
 *                 frees it.  Thousands of rounds, the signal swept across the deadline: the
 *                 waiter must never touch the condition variable after its wake-up (ASan
 *                 reports the use after free; in the main build the poisoned list lock makes
 *                 the waiter hang, which the join's deadline catches).  Every round returns
 *                 either 0 (woken) or ETIMEDOUT, with the mutex held again.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "locktune.h"

static lt_mutex_t mu;
static lt_cond_t *cv;               /* the round's condition variable (malloc'd) */
static int in_wait, round_done, rc; /* under mu, but for round_done (atomic) */
static struct timespec deadline;    /* the waiter's (CLOCK_MONOTONIC) */

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void *waiter(void *arg)
{
    (void)arg;
    CHECK_EQ(lt_mutex_lock(&mu), 0);
    in_wait = 1;
    rc = lt_cond_timedwait(cv, &mu, &deadline);
    CHECK_EQ(lt_mutex_unlock(&mu), 0);
    __atomic_store_n(&round_done, 1, __ATOMIC_RELEASE);
    return NULL;
}

static void destroy_race(void)
{
    const char *san = getenv("LOCKTUNE_SANITIZER");
    int rounds = san && *san ? 1500 : 4000;
    int woken = 0, timed_out = 0;
    CHECK_EQ(lt_mutex_init(&mu, NULL, 1), 0);
    for (int i = 0; i < rounds; i++) {
        pthread_condattr_t a;
        pthread_condattr_init(&a);
        pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
        cv = malloc(sizeof *cv);
        CHECK(cv != NULL);
        CHECK_EQ(lt_cond_init(cv, &a), 0);
        pthread_condattr_destroy(&a);
        in_wait = 0;
        __atomic_store_n(&round_done, 0, __ATOMIC_RELAXED);
        /* the deadline 100 us ahead; the signal swept from 30 us before it to 30 us after */
        uint64_t d = now_ns() + 100000u;
        deadline.tv_sec = (time_t)(d / 1000000000u);
        deadline.tv_nsec = (long)(d % 1000000000u);
        uint64_t signal_at = d - 30000u + (uint64_t)(i % 61) * 1000u;
        pthread_t t;
        CHECK_EQ(pthread_create(&t, NULL, waiter, NULL), 0);
        for (;;) { /* the waiter is in the wait once it released the mutex with in_wait set */
            CHECK_EQ(lt_mutex_lock(&mu), 0);
            int w = in_wait;
            CHECK_EQ(lt_mutex_unlock(&mu), 0);
            if (w || __atomic_load_n(&round_done, __ATOMIC_ACQUIRE))
                break;
            sched_yield();
        }
        while (now_ns() < signal_at)
            ;
        CHECK_EQ(lt_cond_signal(cv), 0); /* without the mutex: woken at once */
        CHECK_EQ(lt_cond_destroy(cv), 0);
        memset(cv, 0xa5, sizeof *cv); /* a freed and reused block */
        free(cv);
        struct timespec limit;
        clock_gettime(CLOCK_REALTIME, &limit);
        limit.tv_sec += 10;
        int j = pthread_timedjoin_np(t, NULL, &limit);
        if (j != 0) {
            fprintf(stderr,
                    "destroy-race: round %d: the waiter did not return within 10 s "
                    "(it used the destroyed condition variable)\n",
                    i);
            exit(1);
        }
        CHECK(rc == 0 || rc == ETIMEDOUT);
        if (rc == 0)
            woken++;
        else
            timed_out++;
    }
    printf("  destroy-race: %d rounds, %d woken, %d timed out\n", rounds, woken, timed_out);
    CHECK_EQ(lt_mutex_destroy(&mu), 0);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: test_cond ALGO (LOCKTUNE_ALGO chooses it; the name is a label)\n");
        return 2;
    }
    printf("test_cond %s\n", argv[1]);
    destroy_race();
    printf("test_cond %s: ok\n", argv[1]);
    return 0;
}
