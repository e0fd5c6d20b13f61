/*
 * test_api - the locktune.h API on the default algorithm: mutual exclusion under
 * oversubscription, trylock/timedlock semantics, lt_execute, static initialisation, and a
 * condition-variable producer/consumer.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <time.h>

#include "check.h"
#include "locktune.h"

#define THREADS 16
#define ITERS   20000

static lt_mutex_t lock = LT_MUTEX_INITIALIZER(LT_SITE_UNKNOWN);
static long counter; /* protected by lock, deliberately non-atomic */
static int inside;   /* occupancy: must be 0 on entry */

static void *cs(void *arg)
{
    CHECK(__atomic_fetch_add(&inside, 1, __ATOMIC_RELAXED) == 0);
    counter += (long)(intptr_t)arg;
    __atomic_fetch_sub(&inside, 1, __ATOMIC_RELAXED);
    return arg;
}

static void *worker(void *arg)
{
    (void)arg;
    for (int i = 0; i < ITERS; i++) {
        if (i % 3 == 1) {
            CHECK(lt_execute(&lock, cs, (void *)(intptr_t)1) == (void *)(intptr_t)1);
        } else if (i % 3 == 2) {
            unsigned flags = (i & 4) ? LT_EXEC_ON_CALLER : LT_EXEC_MAY_WAIT;
            CHECK(lt_execute_ex(&lock, cs, (void *)(intptr_t)1, flags) == (void *)(intptr_t)1);
        } else {
            CHECK_EQ(lt_mutex_lock(&lock), 0);
            cs((void *)(intptr_t)1);
            CHECK_EQ(lt_mutex_unlock(&lock), 0);
        }
    }
    return NULL;
}

static void test_mutual_exclusion(void)
{
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++)
        CHECK_EQ(pthread_create(&t[i], NULL, worker, NULL), 0);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    CHECK_EQ(counter, (long)THREADS * ITERS);
}

static void *try_from_other_thread(void *arg)
{
    lt_mutex_t *m = arg;
    CHECK_EQ(lt_mutex_trylock(m), EBUSY);
    void *res = NULL;
    CHECK_EQ(lt_execute_trylock(m, cs, (void *)(intptr_t)5, &res), EBUSY);
    struct timespec ts, t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += 50 * 1000 * 1000;
    if (ts.tv_nsec >= 1000000000) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000;
    }
    CHECK_EQ(lt_mutex_timedlock(m, &ts), ETIMEDOUT);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double waited = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
    CHECK(waited >= 0.045 && waited < 2.0);
    return NULL;
}

static void test_trylock_timedlock(void)
{
    lt_mutex_t m;
    CHECK_EQ(lt_mutex_init(&m, NULL, 7), 0);
    CHECK_EQ(lt_mutex_trylock(&m), 0);
    pthread_t t;
    CHECK_EQ(pthread_create(&t, NULL, try_from_other_thread, &m), 0);
    pthread_join(t, NULL);
    CHECK_EQ(lt_mutex_unlock(&m), 0);
    void *res = NULL;
    long before = counter;
    CHECK_EQ(lt_execute_trylock(&m, cs, (void *)(intptr_t)5, &res), 0);
    CHECK(res == (void *)(intptr_t)5);
    CHECK_EQ(counter, before + 5);
    CHECK_EQ(lt_mutex_destroy(&m), 0);
    CHECK_EQ(lt_mutex_init(&m, NULL, 7), 0); /* re-init after destroy */
    CHECK_EQ(lt_mutex_lock(&m), 0);
    CHECK_EQ(lt_mutex_unlock(&m), 0);
    CHECK_EQ(lt_mutex_destroy(&m), 0);
}

/* Producer/consumer through a one-slot buffer: every item is consumed exactly once. */
static lt_mutex_t qlock = LT_MUTEX_INITIALIZER(LT_SITE_UNKNOWN);
static lt_cond_t not_empty = LT_COND_INITIALIZER, not_full = LT_COND_INITIALIZER;
static int slot_full;
static long slot, consumed_sum;
#define ITEMS 20000

static void *producer(void *arg)
{
    (void)arg;
    for (long i = 1; i <= ITEMS; i++) {
        lt_mutex_lock(&qlock);
        while (slot_full)
            lt_cond_wait(&not_full, &qlock);
        slot = i;
        slot_full = 1;
        lt_cond_signal(&not_empty);
        lt_mutex_unlock(&qlock);
    }
    return NULL;
}

static void *consumer(void *arg)
{
    (void)arg;
    for (long i = 1; i <= ITEMS; i++) {
        lt_mutex_lock(&qlock);
        while (!slot_full)
            lt_cond_wait(&not_empty, &qlock);
        CHECK_EQ(slot, i);
        consumed_sum += slot;
        slot_full = 0;
        lt_cond_signal(&not_full);
        lt_mutex_unlock(&qlock);
    }
    return NULL;
}

static void test_condvar(void)
{
    pthread_t p, c;
    CHECK_EQ(pthread_create(&c, NULL, consumer, NULL), 0);
    CHECK_EQ(pthread_create(&p, NULL, producer, NULL), 0);
    pthread_join(p, NULL);
    pthread_join(c, NULL);
    CHECK_EQ(consumed_sum, (long)ITEMS * (ITEMS + 1) / 2);
    CHECK_EQ(lt_cond_destroy(&not_empty), 0);
}

int main(void)
{
    CHECK(strcmp(lt_mutex_algorithm(&lock), "posix") == 0);
    test_mutual_exclusion();
    test_trylock_timedlock();
    test_condvar();
    printf("test_api: ok (%s)\n", lt_mutex_algorithm(&lock));
    return 0;
}
