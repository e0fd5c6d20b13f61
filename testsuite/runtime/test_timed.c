/*
 * test_timed ALGO - lt_mutex_timedlock under sustained contention (issue 12, item 5).
 * LOCKTUNE_ALGO chooses the algorithm; ALGO is a label.
 *
 * HAMMERS threads take the lock back to back (lock/unlock, and lt_execute), more threads than
 * the machine has CPUs, so that the lock's queue never empties.  Then:
 *   - wins: the main thread calls lt_mutex_timedlock ATTEMPTS times with a generous deadline
 *     (DEADLINE_S).  A fair share gives it the lock within a few sections: every attempt must
 *     succeed, and the section it then runs must be alone (mutual exclusion).  A timedlock that
 *     only polls trylock never wins against a FIFO queue that never empties;
 *   - expires: a holder thread keeps the lock (the hammers queue behind it); every attempt
 *     with a short deadline must return ETIMEDOUT, no earlier than the deadline and at most
 *     LATE_S after it; so must one whose deadline has passed already;
 *   - the hammers go on afterwards: the lock still works, and a timed waiter that gave up
 *     left nothing behind (the hammers finish their rounds).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "locktune.h"

#define HAMMERS    4
#define ATTEMPTS   20
#define DEADLINE_S 5.0
#define SHORT_MS   50
#define EXPIRES    5
#define LATE_S     1.0 /* scheduling delay on a loaded 2-CPU machine: glibc's own was 0.36 s */

static lt_mutex_t lock = LT_MUTEX_INITIALIZER(1);
static long inside;            /* threads in the section: under the lock */
static long total;             /* sections run: under the lock */
static long progress[HAMMERS]; /* atomic */
static int stop;               /* atomic */
static int hold, holding;      /* atomic: the holder's orders and state */

/* A deadline s seconds from now on CLOCK_REALTIME (timedlock's clock). */
static struct timespec deadline_in(double s)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    long long ns = (long long)ts.tv_nsec + (long long)(s * 1e9);
    ts.tv_sec += (time_t)(ns / 1000000000);
    ts.tv_nsec = (long)(ns % 1000000000);
    if (ts.tv_nsec < 0) {
        ts.tv_nsec += 1000000000;
        ts.tv_sec--;
    }
    return ts;
}

static double realtime_past(const struct timespec *d)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)(ts.tv_sec - d->tv_sec) + (double)(ts.tv_nsec - d->tv_nsec) / 1e9;
}

static void *section(void *arg)
{
    CHECK_EQ(inside++, 0); /* mutual exclusion */
    total++;
    for (volatile int i = 0; i < 50; i++)
        ;
    inside--;
    return arg;
}

static void *hammer(void *arg)
{
    int h = (int)(long)arg;
    for (long n = 0; !__atomic_load_n(&stop, __ATOMIC_RELAXED); n++) {
        if (n % 2) {
            CHECK(lt_execute(&lock, section, arg) == arg);
        } else {
            CHECK_EQ(lt_mutex_lock(&lock), 0);
            section(arg);
            CHECK_EQ(lt_mutex_unlock(&lock), 0);
        }
        __atomic_store_n(&progress[h], n + 1, __ATOMIC_RELAXED);
    }
    return NULL;
}

static void *holder(void *arg)
{
    (void)arg;
    CHECK_EQ(lt_mutex_lock(&lock), 0);
    __atomic_store_n(&holding, 1, __ATOMIC_RELEASE);
    while (__atomic_load_n(&hold, __ATOMIC_ACQUIRE)) {
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
    CHECK_EQ(lt_mutex_unlock(&lock), 0);
    return NULL;
}

/* Until every hammer has done `rounds` more sections. */
static void hammers_move(long rounds)
{
    long p[HAMMERS];
    for (int h = 0; h < HAMMERS; h++)
        p[h] = __atomic_load_n(&progress[h], __ATOMIC_RELAXED);
    double give_up = now_s() + 60;
    for (int h = 0; h < HAMMERS; h++)
        while (__atomic_load_n(&progress[h], __ATOMIC_RELAXED) < p[h] + rounds) {
            CHECK(now_s() < give_up);
            sched_yield();
        }
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: test_timed ALGO (LOCKTUNE_ALGO chooses it; the name is a label)\n");
        return 2;
    }
    const char *san = getenv("LOCKTUNE_SANITIZER");
    int sanitized = san && *san;
    int attempts = sanitized ? 5 : ATTEMPTS;
    double late_s = sanitized ? 4 * LATE_S : LATE_S;
    printf("test_timed %s (%s)\n", argv[1], lt_mutex_algorithm(&lock));

    pthread_t t[HAMMERS];
    for (long h = 0; h < HAMMERS; h++)
        CHECK_EQ(pthread_create(&t[h], NULL, hammer, (void *)h), 0);
    hammers_move(100);

    /* wins */
    double worst = 0;
    for (int a = 0; a < attempts; a++) {
        struct timespec d = deadline_in(DEADLINE_S);
        double t0 = now_s();
        int r = lt_mutex_timedlock(&lock, &d);
        double waited = now_s() - t0;
        if (r != 0) {
            fprintf(stderr,
                    "test_timed %s: attempt %d: timedlock returned %s after %.3f s while "
                    "%d threads took the lock back to back\n",
                    argv[1], a, strerror(r), waited, HAMMERS);
            return 1;
        }
        section(NULL);
        CHECK_EQ(lt_mutex_unlock(&lock), 0);
        worst = waited > worst ? waited : worst;
        hammers_move(2);
    }
    printf("wins: %d of %d timedlocks got the lock under contention, longest wait %.6f s\n",
           attempts, attempts, worst);

    /* expires */
    pthread_t ht;
    __atomic_store_n(&hold, 1, __ATOMIC_RELAXED);
    CHECK_EQ(pthread_create(&ht, NULL, holder, NULL), 0);
    while (!__atomic_load_n(&holding, __ATOMIC_ACQUIRE))
        sched_yield();
    double latest = 0;
    for (int a = 0; a < EXPIRES; a++) {
        struct timespec d = deadline_in(SHORT_MS / 1000.0);
        int r = lt_mutex_timedlock(&lock, &d);
        double late = realtime_past(&d);
        if (r != ETIMEDOUT || late < 0 || late > late_s) {
            fprintf(stderr,
                    "test_timed %s: a held lock: timedlock returned %s %.6f s after its "
                    "deadline (ETIMEDOUT expected, at most %.3f s late)\n",
                    argv[1], r ? strerror(r) : "0", late, late_s);
            return 1;
        }
        latest = late > latest ? late : latest;
    }
    struct timespec past = deadline_in(-1.0);
    CHECK_EQ(lt_mutex_timedlock(&lock, &past), ETIMEDOUT);
    struct timespec bad = past;
    bad.tv_nsec = 1000000000L;
    CHECK_EQ(lt_mutex_timedlock(&lock, &bad), EINVAL);
    printf("expires: %d of %d timed out, at most %.6f s after the deadline\n", EXPIRES, EXPIRES,
           latest);
    __atomic_store_n(&hold, 0, __ATOMIC_RELEASE);
    CHECK_EQ(pthread_join(ht, NULL), 0);

    hammers_move(100); /* the lock still circulates */
    __atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
    for (int h = 0; h < HAMMERS; h++)
        CHECK_EQ(pthread_join(t[h], NULL), 0);
    CHECK_EQ(lt_mutex_trylock(&lock), 0);
    CHECK_EQ(inside, 0);
    CHECK_EQ(lt_mutex_unlock(&lock), 0);
    CHECK_EQ(lt_mutex_destroy(&lock), 0);
    printf("test_timed %s: ok (%ld sections)\n", argv[1], total);
    return 0;
}
