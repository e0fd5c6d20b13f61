/*
 * test_stress ALGO - the lock library's contract, checked on one algorithm.
 *
 * ctest runs it once per algorithm with LOCKTUNE_ALGO=default=ALGO (so the environment path is
 * exercised too), under the main build and under ASan+UBSan and TSan.  Every concurrent test
 * runs with 1, 2, 4, 16 and 64 threads (this machine has 2 CPUs: 4 and up are
 * oversubscribed):
 *   - mutual exclusion: an in-section occupancy count, an unprotected counter and four
 *     unprotected words that must stay equal, over lock/unlock, lt_execute, lt_execute_ex,
 *     trylock and timedlock, on four independent locks; no update may be lost;
 *   - recursive locks under contention (nested twice);
 *   - static initialisation: every thread binds a fresh LT_MUTEX_INITIALIZER lock at once;
 *   - destroy and re-init between rounds;
 *   - condition variables: producer/consumer through a small buffer (some consumers wait
 *     inside lt_execute_ex(LT_EXEC_MAY_WAIT) sections), and broadcast storms; a lost wake-up
 *     shows as a wait that times out after 60 s;
 * and once: trylock/timedlock semantics (EBUSY, ETIMEDOUT within tolerance, EINVAL), the
 * mutex types' error codes, timed condition waits on both clocks, misuse reports, FIFO order
 * for the FIFO algorithms, 300,000 locks without per-lock allocation.
 *
 * Iteration counts shrink under sanitizers (LOCKTUNE_SANITIZER=asan|tsan, set by scripts/test)
 * and, for the FIFO spin-only algorithms (which collapse by design when threads outnumber
 * CPUs: docs/runtime.md), when oversubscribed, so that the whole suite stays within its time
 * budget.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "locktune.h"

static const char *algo;
static int fifo_spin; /* FIFO spin-only: collapses when oversubscribed */
static int fifo;      /* promises FIFO order */
static int ncpus;
static double scale = 1.0; /* sanitizer slow-down compensation */
static double tolerance_s = 1.0;

static struct timespec deadline_in(double seconds, clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    long long ns = (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec + (long long)(seconds * 1e9);
    ts.tv_sec = (time_t)(ns / 1000000000LL);
    ts.tv_nsec = (long)(ns % 1000000000LL);
    return ts;
}

/* Acquisitions per thread for a test of `total` acquisitions (main build) with n threads. */
static long per_thread(long total, int n)
{
    double t = (double)total * scale;
    if (fifo_spin && n > ncpus)
        t = t / 50.0 < 1500.0 ? t / 50.0 : 1500.0; /* collapse: keep it bounded */
    long k = (long)(t / n);
    return k < 8 ? 8 : k;
}

typedef void *(*thread_fn)(void *);

struct worker {
    pthread_t thread;
    int index, n;
    long iters;
    long used[4]; /* acquisitions per lock */
    long produced, consumed;
};

static void run_threads(int n, thread_fn fn, struct worker *w, long iters)
{
    for (int i = 0; i < n; i++) {
        memset(&w[i], 0, sizeof w[i]);
        w[i].index = i;
        w[i].n = n;
        w[i].iters = iters;
        CHECK_EQ(pthread_create(&w[i].thread, NULL, fn, &w[i]), 0);
    }
    for (int i = 0; i < n; i++)
        CHECK_EQ(pthread_join(w[i].thread, NULL), 0);
}

/* ---- mutual exclusion ---- */

#define NLOCKS 4
struct guarded {
    lt_mutex_t lock;
    int inside;    /* occupancy: atomic */
    long counter;  /* unprotected on purpose */
    long words[4]; /* unprotected; a torn section leaves them unequal */
    char pad[64];
};
static struct guarded g[NLOCKS];

static void *section(void *arg)
{
    struct guarded *x = arg;
    CHECK(__atomic_fetch_add(&x->inside, 1, __ATOMIC_RELAXED) == 0);
    long v = x->counter;
    for (int k = 0; k < 4; k++) {
        CHECK_EQ(x->words[k], v);
        x->words[k] = v + 1;
    }
    x->counter = v + 1;
    CHECK_EQ(__atomic_fetch_sub(&x->inside, 1, __ATOMIC_RELAXED), 1);
    return x;
}

static void *exclusion_worker(void *arg)
{
    struct worker *w = arg;
    unsigned seed = (unsigned)w->index * 7919u + 1u;
    for (long i = 0; i < w->iters; i++) {
        int k = (int)((i + w->index) % NLOCKS);
        struct guarded *x = &g[k];
        seed = seed * 1103515245u + 12345u;
        switch ((seed >> 16) % 8) {
        case 0:
        case 1:
        case 2:
            CHECK_EQ(lt_mutex_lock(&x->lock), 0);
            section(x);
            CHECK_EQ(lt_mutex_unlock(&x->lock), 0);
            break;
        case 3:
        case 4:
            CHECK(lt_execute(&x->lock, section, x) == x);
            break;
        case 5:
            CHECK(lt_execute_ex(&x->lock, section, x,
                                (i & 1) ? LT_EXEC_ON_CALLER : LT_EXEC_MAY_WAIT) == x);
            break;
        case 6: {
            void *res = NULL;
            int r = lt_execute_trylock(&x->lock, section, x, &res);
            if (r == EBUSY) {
                CHECK(lt_execute(&x->lock, section, x) == x);
            } else {
                CHECK_EQ(r, 0);
                CHECK(res == x);
            }
            break;
        }
        default:
            if ((i & 15) == 0) {
                struct timespec d = deadline_in(120.0, CLOCK_REALTIME);
                CHECK_EQ(lt_mutex_timedlock(&x->lock, &d), 0);
            } else if (lt_mutex_trylock(&x->lock) != 0) {
                CHECK_EQ(lt_mutex_lock(&x->lock), 0);
            }
            section(x);
            CHECK_EQ(lt_mutex_unlock(&x->lock), 0);
            break;
        }
        w->used[k]++;
        if ((i & 63) == 63)
            sched_yield(); /* shuffle the arrival order a little */
    }
    return NULL;
}

static void test_exclusion(int n)
{
    static struct worker w[64];
    for (int k = 0; k < NLOCKS; k++) {
        memset(&g[k], 0, sizeof g[k]);
        CHECK_EQ(lt_mutex_init(&g[k].lock, NULL, LT_SITE_UNKNOWN), 0);
        CHECK(strcmp(lt_mutex_algorithm(&g[k].lock), algo) == 0);
    }
    run_threads(n, exclusion_worker, w, per_thread(160000, n));
    for (int k = 0; k < NLOCKS; k++) {
        long expected = 0;
        for (int i = 0; i < n; i++)
            expected += w[i].used[k];
        CHECK_EQ(g[k].counter, expected); /* no lost update */
        CHECK_EQ(lt_mutex_destroy(&g[k].lock), 0);
    }
}

/* ---- hammer: the tightest lock/unlock loop, where two CPUs collide most often ---- */

static lt_mutex_t hlock;
static long hcounter; /* unprotected on purpose */
static int hinside;

static void *hammer_worker(void *arg)
{
    struct worker *w = arg;
    for (long i = 0; i < w->iters; i++) {
        CHECK_EQ(lt_mutex_lock(&hlock), 0);
        CHECK(__atomic_fetch_add(&hinside, 1, __ATOMIC_RELAXED) == 0);
        hcounter++;
        __atomic_fetch_sub(&hinside, 1, __ATOMIC_RELAXED);
        CHECK_EQ(lt_mutex_unlock(&hlock), 0);
    }
    return NULL;
}

static void test_hammer(int n)
{
    static struct worker w[64];
    CHECK_EQ(lt_mutex_init(&hlock, NULL, LT_SITE_UNKNOWN), 0);
    hcounter = 0;
    long iters = per_thread(800000, n);
    run_threads(n, hammer_worker, w, iters);
    CHECK_EQ(hcounter, iters * n);
    CHECK_EQ(lt_mutex_destroy(&hlock), 0);
}

/* ---- recursive locks under contention ---- */

static lt_mutex_t rlock;
static long rcounter;

static void *recursive_worker(void *arg)
{
    struct worker *w = arg;
    for (long i = 0; i < w->iters; i++) {
        CHECK_EQ(lt_mutex_lock(&rlock), 0);
        CHECK_EQ((i & 1) ? lt_mutex_trylock(&rlock) : lt_mutex_lock(&rlock), 0);
        long v = rcounter;
        rcounter = v + 1;
        CHECK_EQ(lt_mutex_unlock(&rlock), 0);
        CHECK_EQ(lt_mutex_unlock(&rlock), 0);
    }
    return NULL;
}

static void test_recursive(int n)
{
    static struct worker w[64];
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
    CHECK_EQ(lt_mutex_init(&rlock, &a, LT_SITE_UNKNOWN), 0);
    pthread_mutexattr_destroy(&a);
    rcounter = 0;
    long iters = per_thread(20000, n);
    run_threads(n, recursive_worker, w, iters);
    CHECK_EQ(rcounter, iters * n);
    CHECK_EQ(lt_mutex_destroy(&rlock), 0);
}

/* ---- static initialisation: every thread binds the same fresh lock at once ---- */

#define ROUNDS 6
static lt_mutex_t statics[5][ROUNDS] = {[0 ... 4][0 ... ROUNDS - 1] =
                                            LT_MUTEX_INITIALIZER(LT_SITE_UNKNOWN)};
static lt_mutex_t *static_round;
static long static_counter;
static pthread_barrier_t barrier;

static void *static_worker(void *arg)
{
    struct worker *w = arg;
    for (int r = 0; r < ROUNDS; r++) {
        pthread_barrier_wait(&barrier);
        lt_mutex_t *m = &static_round[r];
        for (long i = 0; i < w->iters; i++) {
            CHECK_EQ(lt_mutex_lock(m), 0);
            static_counter++;
            CHECK_EQ(lt_mutex_unlock(m), 0);
        }
    }
    return NULL;
}

static void test_static(int n, int slot)
{
    static struct worker w[64];
    static_round = statics[slot];
    static_counter = 0;
    CHECK_EQ(pthread_barrier_init(&barrier, NULL, (unsigned)n), 0);
    long iters = per_thread(12000, n) / ROUNDS + 1;
    run_threads(n, static_worker, w, iters);
    CHECK_EQ(pthread_barrier_destroy(&barrier), 0);
    CHECK_EQ(static_counter, iters * n * ROUNDS);
    for (int r = 0; r < ROUNDS; r++)
        CHECK(strcmp(lt_mutex_algorithm(&static_round[r]), algo) == 0);
}

/* ---- destroy and re-init ---- */

static lt_mutex_t *dlock;
static long dcounter;

static void *destroy_worker(void *arg)
{
    struct worker *w = arg;
    for (long i = 0; i < w->iters; i++) {
        CHECK_EQ(lt_mutex_lock(dlock), 0);
        dcounter++;
        CHECK_EQ(lt_mutex_unlock(dlock), 0);
    }
    return NULL;
}

static void test_destroy_reinit(int n)
{
    static struct worker w[64];
    dlock = malloc(sizeof *dlock);
    CHECK(dlock != NULL);
    long iters = per_thread(8000, n) / 3 + 1;
    dcounter = 0;
    for (int round = 0; round < 3; round++) {
        CHECK_EQ(lt_mutex_init(dlock, NULL, LT_SITE_UNKNOWN), 0);
        run_threads(n, destroy_worker, w, iters);
        CHECK_EQ(lt_mutex_destroy(dlock), 0);
    }
    CHECK_EQ(dcounter, 3 * iters * n);
    free(dlock);
}

/* ---- condition variables: producer/consumer ---- */

#define CAPACITY 4
static lt_mutex_t qlock;
static lt_cond_t not_empty, not_full;
static long buffer[CAPACITY];
static int qhead, qcount, producers_left;
static long consumed_sum, produced_sum;

static void timed_wait(lt_cond_t *c, lt_mutex_t *m)
{
    struct timespec d = deadline_in(60.0, CLOCK_REALTIME);
    int r = lt_cond_timedwait(c, m, &d);
    if (r == ETIMEDOUT) {
        fprintf(stderr, "%s: a condition wait timed out after 60 s: lost wake-up\n", algo);
        exit(1);
    }
    CHECK_EQ(r, 0);
}

struct take {
    long item;
    int done;
};

/* Runs under qlock, also as an lt_execute_ex(LT_EXEC_MAY_WAIT) section. */
static void *take_item(void *arg)
{
    struct take *t = arg;
    while (qcount == 0 && producers_left > 0)
        timed_wait(&not_empty, &qlock);
    if (qcount == 0) {
        t->done = 1;
        return t;
    }
    t->item = buffer[qhead];
    qhead = (qhead + 1) % CAPACITY;
    qcount--;
    CHECK_EQ(lt_cond_signal(&not_full), 0);
    return t;
}

static void *producer(void *arg)
{
    struct worker *w = arg;
    for (long i = 1; i <= w->iters; i++) {
        long item = (long)w->index * 1000003L + i;
        CHECK_EQ(lt_mutex_lock(&qlock), 0);
        while (qcount == CAPACITY)
            timed_wait(&not_full, &qlock);
        buffer[(qhead + qcount) % CAPACITY] = item;
        qcount++;
        produced_sum += item;
        CHECK_EQ(lt_cond_signal(&not_empty), 0);
        CHECK_EQ(lt_mutex_unlock(&qlock), 0);
    }
    CHECK_EQ(lt_mutex_lock(&qlock), 0);
    if (--producers_left == 0)
        CHECK_EQ(lt_cond_broadcast(&not_empty), 0); /* consumers: no more items */
    CHECK_EQ(lt_mutex_unlock(&qlock), 0);
    return NULL;
}

static void *consumer(void *arg)
{
    struct worker *w = arg;
    for (;;) {
        struct take t = {0, 0};
        if (w->index & 1) {
            CHECK(lt_execute_ex(&qlock, take_item, &t, LT_EXEC_MAY_WAIT) == &t);
        } else {
            CHECK_EQ(lt_mutex_lock(&qlock), 0);
            take_item(&t);
            CHECK_EQ(lt_mutex_unlock(&qlock), 0);
        }
        if (t.done)
            return NULL;
        w->consumed++;
        __atomic_fetch_add(&consumed_sum, t.item, __ATOMIC_RELAXED);
    }
}

static void *prodcons_thread(void *arg)
{
    struct worker *w = arg;
    return (w->index % 2 == 0) ? producer(w) : consumer(w);
}

static void test_prodcons(int n)
{
    static struct worker w[64];
    int threads = n < 2 ? 2 : n; /* at least one producer and one consumer */
    CHECK_EQ(lt_mutex_init(&qlock, NULL, LT_SITE_UNKNOWN), 0);
    CHECK_EQ(lt_cond_init(&not_empty, NULL), 0);
    CHECK_EQ(lt_cond_init(&not_full, NULL), 0);
    qhead = qcount = 0;
    producers_left = threads / 2;
    consumed_sum = produced_sum = 0;
    long items = per_thread(40000, threads);
    run_threads(threads, prodcons_thread, w, items);
    long consumed = 0;
    for (int i = 0; i < threads; i++)
        consumed += w[i].consumed;
    CHECK_EQ(consumed, items * (threads / 2));
    CHECK_EQ(consumed_sum, produced_sum);
    CHECK_EQ(lt_cond_destroy(&not_empty), 0);
    CHECK_EQ(lt_cond_destroy(&not_full), 0);
    CHECK_EQ(lt_mutex_destroy(&qlock), 0);
}

/* ---- broadcast storms ---- */

static lt_mutex_t block;
static lt_cond_t go, arrived_cv;
static long generation;
static int arrived;

static void *storm_waiter(void *arg)
{
    struct worker *w = arg;
    CHECK_EQ(lt_mutex_lock(&block), 0);
    for (long r = 0; r < w->iters; r++) {
        long seen = generation;
        if (++arrived == w->n)
            CHECK_EQ(lt_cond_signal(&arrived_cv), 0);
        while (generation == seen)
            timed_wait(&go, &block);
        CHECK_EQ(generation, seen + 1); /* nobody slept through a whole round */
    }
    CHECK_EQ(lt_mutex_unlock(&block), 0);
    return NULL;
}

struct storm {
    int n;
    long rounds;
};

static void *storm_driver(void *arg)
{
    struct storm *s = arg;
    CHECK_EQ(lt_mutex_lock(&block), 0);
    for (long r = 0; r < s->rounds; r++) {
        while (arrived < s->n)
            timed_wait(&arrived_cv, &block);
        arrived = 0;
        generation++;
        /* Every other round: signal each waiter instead of one broadcast. */
        if (r & 1) {
            for (int i = 0; i < s->n; i++)
                CHECK_EQ(lt_cond_signal(&go), 0);
        } else {
            CHECK_EQ(lt_cond_broadcast(&go), 0);
        }
    }
    CHECK_EQ(lt_mutex_unlock(&block), 0);
    return NULL;
}

static void test_broadcast(int n)
{
    static struct worker w[64];
    CHECK_EQ(lt_mutex_init(&block, NULL, LT_SITE_UNKNOWN), 0);
    CHECK_EQ(lt_cond_init(&go, NULL), 0);
    CHECK_EQ(lt_cond_init(&arrived_cv, NULL), 0);
    generation = 0;
    arrived = 0;
    long rounds = per_thread(4000, n);
    if (rounds > 400)
        rounds = 400;
    struct storm s = {n, rounds};
    pthread_t driver;
    CHECK_EQ(pthread_create(&driver, NULL, storm_driver, &s), 0);
    run_threads(n, storm_waiter, w, rounds);
    CHECK_EQ(pthread_join(driver, NULL), 0);
    CHECK_EQ(generation, rounds);
    CHECK_EQ(lt_cond_destroy(&go), 0);
    CHECK_EQ(lt_cond_destroy(&arrived_cv), 0);
    CHECK_EQ(lt_mutex_destroy(&block), 0);
}

/* ---- trylock / timedlock semantics ---- */

static lt_mutex_t tlock;
static int release_after_ms;

static void *no_op(void *arg)
{
    return arg;
}

static void *contender(void *arg)
{
    (void)arg;
    CHECK_EQ(lt_mutex_trylock(&tlock), EBUSY);
    void *res = (void *)1;
    CHECK_EQ(lt_execute_trylock(&tlock, no_op, NULL, &res), EBUSY);
    CHECK(res == (void *)1); /* untouched: fn did not run */
    struct timespec bad = {time(NULL) + 10, 2000000000L};
    CHECK_EQ(lt_mutex_timedlock(&tlock, &bad), EINVAL);
    struct timespec d = deadline_in(0.05, CLOCK_REALTIME);
    double t0 = now_s();
    CHECK_EQ(lt_mutex_timedlock(&tlock, &d), ETIMEDOUT);
    double waited = now_s() - t0;
    if (waited < 0.049 || waited > 0.05 + tolerance_s) {
        fprintf(stderr, "%s: timedlock(50 ms) returned after %.3f s\n", algo, waited);
        exit(1);
    }
    struct timespec past = deadline_in(-1.0, CLOCK_REALTIME);
    CHECK_EQ(lt_mutex_timedlock(&tlock, &past), ETIMEDOUT);
    return NULL;
}

static int tlock_released; /* set by the holder just before it releases tlock */

static void *late_taker(void *arg)
{
    (void)arg;
    struct timespec d = deadline_in(30.0, CLOCK_REALTIME);
    double t0 = now_s();
    CHECK_EQ(lt_mutex_timedlock(&tlock, &d), 0);
    double waited = now_s() - t0;
    /* acquire: pairs with the release store made just before the holder's unlock.  (Timing
     * the lower bound instead would depend on how late this thread started to run.) */
    CHECK(__atomic_load_n(&tlock_released, __ATOMIC_ACQUIRE) == 1);
    CHECK(waited < release_after_ms / 1000.0 + tolerance_s);
    CHECK_EQ(lt_mutex_unlock(&tlock), 0);
    return NULL;
}

static void test_try_timed(void)
{
    CHECK_EQ(lt_mutex_init(&tlock, NULL, LT_SITE_UNKNOWN), 0);
    CHECK_EQ(lt_mutex_trylock(&tlock), 0);
    pthread_t t;
    CHECK_EQ(pthread_create(&t, NULL, contender, NULL), 0);
    CHECK_EQ(pthread_join(t, NULL), 0);
    CHECK_EQ(lt_mutex_unlock(&tlock), 0);
    /* A timed waiter gets the lock when it is released before the deadline. */
    CHECK_EQ(lt_mutex_lock(&tlock), 0);
    release_after_ms = 30;
    CHECK_EQ(pthread_create(&t, NULL, late_taker, NULL), 0);
    struct timespec ms30 = {0, 30 * 1000000L};
    nanosleep(&ms30, NULL);
    __atomic_store_n(&tlock_released, 1, __ATOMIC_RELEASE);
    CHECK_EQ(lt_mutex_unlock(&tlock), 0);
    CHECK_EQ(pthread_join(t, NULL), 0);
    void *res = NULL;
    CHECK_EQ(lt_execute_trylock(&tlock, no_op, &tlock, &res), 0);
    CHECK(res == &tlock);
    struct timespec d = deadline_in(1.0, CLOCK_REALTIME);
    CHECK_EQ(lt_mutex_timedlock(&tlock, &d), 0);
    CHECK_EQ(lt_mutex_unlock(&tlock), 0);
    CHECK_EQ(lt_mutex_destroy(&tlock), 0);
}

/* ---- mutex types ---- */

static lt_mutex_t typed;

static void *foreign_unlock(void *arg)
{
    (void)arg;
    CHECK_EQ(lt_mutex_unlock(&typed), EPERM);
    CHECK_EQ(lt_mutex_trylock(&typed), EBUSY);
    return NULL;
}

static void *foreign_try_busy(void *arg)
{
    (void)arg;
    CHECK_EQ(lt_mutex_trylock(&typed), EBUSY);
    return NULL;
}

static void *foreign_try_ok(void *arg)
{
    (void)arg;
    CHECK_EQ(lt_mutex_trylock(&typed), 0);
    CHECK_EQ(lt_mutex_unlock(&typed), 0);
    return NULL;
}

static void in_thread(thread_fn fn)
{
    pthread_t t;
    CHECK_EQ(pthread_create(&t, NULL, fn, NULL), 0);
    CHECK_EQ(pthread_join(t, NULL), 0);
}

static void test_types(void)
{
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);

    pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
    CHECK_EQ(lt_mutex_init(&typed, &a, LT_SITE_UNKNOWN), 0);
    CHECK_EQ(lt_mutex_lock(&typed), 0);
    CHECK_EQ(lt_mutex_trylock(&typed), 0);
    struct timespec d = deadline_in(1.0, CLOCK_REALTIME);
    CHECK_EQ(lt_mutex_timedlock(&typed, &d), 0);
    in_thread(foreign_unlock);
    CHECK_EQ(lt_mutex_unlock(&typed), 0);
    CHECK_EQ(lt_mutex_unlock(&typed), 0);
    in_thread(foreign_unlock); /* still held once */
    CHECK_EQ(lt_mutex_unlock(&typed), 0);
    CHECK_EQ(lt_mutex_unlock(&typed), EPERM); /* not held any more */
    in_thread(foreign_try_ok);
    CHECK_EQ(lt_mutex_destroy(&typed), 0);

    pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ERRORCHECK);
    CHECK_EQ(lt_mutex_init(&typed, &a, LT_SITE_UNKNOWN), 0);
    CHECK_EQ(lt_mutex_unlock(&typed), EPERM);
    CHECK_EQ(lt_mutex_lock(&typed), 0);
    CHECK_EQ(lt_mutex_lock(&typed), EDEADLK);
    CHECK_EQ(lt_mutex_trylock(&typed), EBUSY);
    CHECK_EQ(lt_mutex_timedlock(&typed, &d), EDEADLK);
    in_thread(foreign_unlock);
    CHECK_EQ(lt_mutex_unlock(&typed), 0);
    CHECK_EQ(lt_mutex_unlock(&typed), EPERM);
    in_thread(foreign_try_ok);
    CHECK_EQ(lt_mutex_destroy(&typed), 0);
    pthread_mutexattr_destroy(&a);

    /* The static initialisers of the two types. */
    static lt_mutex_t rs = LT_RECURSIVE_MUTEX_INITIALIZER_NP(LT_SITE_UNKNOWN);
    static lt_mutex_t es = LT_ERRORCHECK_MUTEX_INITIALIZER_NP(LT_SITE_UNKNOWN);
    CHECK_EQ(lt_mutex_lock(&rs), 0);
    CHECK_EQ(lt_mutex_lock(&rs), 0);
    CHECK_EQ(lt_mutex_unlock(&rs), 0);
    CHECK_EQ(lt_mutex_unlock(&rs), 0);
    CHECK(strcmp(lt_mutex_algorithm(&rs), algo) == 0);
    CHECK_EQ(lt_mutex_lock(&es), 0);
    CHECK_EQ(lt_mutex_lock(&es), EDEADLK);
    CHECK_EQ(lt_mutex_unlock(&es), 0);

    /* Process-shared and robust attributes: plain glibc mutexes, whatever the algorithm. */
    pthread_mutexattr_init(&a);
    pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
    pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ERRORCHECK);
    CHECK_EQ(lt_mutex_init(&typed, &a, LT_SITE_UNKNOWN), 0);
    CHECK(strcmp(lt_mutex_algorithm(&typed), "posix") == 0);
    CHECK_EQ(lt_mutex_lock(&typed), 0);
    in_thread(foreign_try_busy);
    CHECK_EQ(lt_mutex_unlock(&typed), 0);
    CHECK_EQ(lt_mutex_destroy(&typed), 0);
    pthread_mutexattr_destroy(&a);
    pthread_mutexattr_init(&a);
    pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
    pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ERRORCHECK);
    CHECK_EQ(lt_mutex_init(&typed, &a, LT_SITE_UNKNOWN), 0);
    CHECK(strcmp(lt_mutex_algorithm(&typed), "posix") == 0);
    CHECK_EQ(lt_mutex_lock(&typed), 0);
    CHECK_EQ(lt_mutex_lock(&typed), EDEADLK); /* glibc keeps the type */
    CHECK_EQ(lt_mutex_unlock(&typed), 0);
    CHECK_EQ(lt_mutex_destroy(&typed), 0);
    pthread_mutexattr_destroy(&a);
}

/* ---- misuse: reported, refused, never corrupting ---- */

static void test_misuse(void)
{
    lt_mutex_t m;
    CHECK_EQ(lt_mutex_init(&m, NULL, LT_SITE_UNKNOWN), 0);
    fprintf(stderr, "(the misuse reports below are expected)\n");
    CHECK_EQ(lt_mutex_unlock(&m), EPERM); /* not held */
    CHECK_EQ(lt_mutex_lock(&m), 0);
    CHECK_EQ(lt_mutex_destroy(&m), EBUSY); /* held */
    CHECK_EQ(lt_mutex_unlock(&m), 0);
    CHECK_EQ(lt_mutex_trylock(&m), 0); /* the refused calls left the lock intact */
    CHECK_EQ(lt_mutex_unlock(&m), 0);
    CHECK_EQ(lt_mutex_destroy(&m), 0);
    CHECK_EQ(lt_mutex_lock(&m), EINVAL); /* destroyed */
    CHECK_EQ(lt_mutex_destroy(&m), EINVAL);
    CHECK_EQ(lt_mutex_init(&m, NULL, LT_SITE_UNKNOWN), 0); /* re-init makes it usable again */
    CHECK_EQ(lt_mutex_lock(&m), 0);
    lt_cond_t c = LT_COND_INITIALIZER;
    CHECK_EQ(lt_mutex_unlock(&m), 0);
    CHECK_EQ(lt_cond_wait(&c, &m), EPERM); /* mutex not held */
    CHECK_EQ(lt_mutex_destroy(&m), 0);
}

/* ---- timed condition waits, both clocks ---- */

static void test_cond_timed(void)
{
    lt_mutex_t m = LT_MUTEX_INITIALIZER(LT_SITE_UNKNOWN);
    for (int mono = 0; mono < 2; mono++) {
        lt_cond_t c;
        pthread_condattr_t ca;
        pthread_condattr_init(&ca);
        if (mono)
            pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        CHECK_EQ(lt_cond_init(&c, &ca), 0);
        pthread_condattr_destroy(&ca);
        CHECK_EQ(lt_mutex_lock(&m), 0);
        struct timespec d = deadline_in(0.03, mono ? CLOCK_MONOTONIC : CLOCK_REALTIME);
        double t0 = now_s();
        CHECK_EQ(lt_cond_timedwait(&c, &m, &d), ETIMEDOUT);
        double waited = now_s() - t0;
        CHECK(waited >= 0.029 && waited < 0.03 + tolerance_s);
        CHECK_EQ(lt_mutex_unlock(&m), 0); /* the wait gave the mutex back to us */
        struct timespec bad = {0, -1};
        CHECK_EQ(lt_mutex_lock(&m), 0);
        CHECK_EQ(lt_cond_timedwait(&c, &m, &bad), EINVAL);
        CHECK_EQ(lt_mutex_unlock(&m), 0);
        CHECK_EQ(lt_cond_signal(&c), 0); /* no waiters: nothing to do */
        CHECK_EQ(lt_cond_broadcast(&c), 0);
        CHECK_EQ(lt_cond_destroy(&c), 0);
    }
    /* A recursive mutex held twice is released entirely during the wait, then restored. */
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
    CHECK_EQ(lt_mutex_init(&typed, &a, LT_SITE_UNKNOWN), 0);
    pthread_mutexattr_destroy(&a);
    lt_cond_t c = LT_COND_INITIALIZER;
    CHECK_EQ(lt_mutex_lock(&typed), 0);
    CHECK_EQ(lt_mutex_lock(&typed), 0);
    struct timespec d = deadline_in(0.02, CLOCK_REALTIME);
    CHECK_EQ(lt_cond_timedwait(&c, &typed, &d), ETIMEDOUT);
    CHECK_EQ(lt_mutex_unlock(&typed), 0);
    in_thread(foreign_unlock); /* still held once */
    CHECK_EQ(lt_mutex_unlock(&typed), 0);
    CHECK_EQ(lt_mutex_destroy(&typed), 0);
}

/* ---- FIFO order: waiters that queue one after another acquire in that order ---- */

static lt_mutex_t flock;
static int fifo_ready, fifo_order[8], fifo_next;

static void *fifo_waiter(void *arg)
{
    int me = (int)(intptr_t)arg;
    __atomic_store_n(&fifo_ready, me + 1, __ATOMIC_RELEASE);
    CHECK_EQ(lt_mutex_lock(&flock), 0);
    fifo_order[fifo_next++] = me;
    CHECK_EQ(lt_mutex_unlock(&flock), 0);
    return NULL;
}

static void test_fifo(void)
{
    enum { N = 6 };
    CHECK_EQ(lt_mutex_init(&flock, NULL, LT_SITE_UNKNOWN), 0);
    CHECK_EQ(lt_mutex_lock(&flock), 0);
    fifo_next = 0;
    pthread_t t[N];
    for (int i = 0; i < N; i++) {
        CHECK_EQ(pthread_create(&t[i], NULL, fifo_waiter, (void *)(intptr_t)i), 0);
        while (__atomic_load_n(&fifo_ready, __ATOMIC_ACQUIRE) != i + 1)
            sched_yield();
        struct timespec ms = {0, 40 * 1000000L}; /* time to reach the queue */
        nanosleep(&ms, NULL);
    }
    CHECK_EQ(lt_mutex_unlock(&flock), 0);
    for (int i = 0; i < N; i++)
        CHECK_EQ(pthread_join(t[i], NULL), 0);
    CHECK_EQ(fifo_next, N);
    int in_order = 1;
    for (int i = 0; i < N; i++)
        in_order &= fifo_order[i] == i;
    printf("  fifo order: %d %d %d %d %d %d%s\n", fifo_order[0], fifo_order[1], fifo_order[2],
           fifo_order[3], fifo_order[4], fifo_order[5],
           fifo ? " (promised)" : " (not promised by this algorithm)");
    if (fifo)
        CHECK(in_order);
    CHECK_EQ(lt_mutex_destroy(&flock), 0);
}

/* ---- 300,000 locks, no per-lock allocation ---- */

#define MANY 300000
static lt_mutex_t *many;

static void *many_worker(void *arg)
{
    struct worker *w = arg;
    for (long i = 0; i < MANY; i++) {
        long k = w->index ? MANY - 1 - i : i;
        CHECK_EQ(lt_mutex_lock(&many[k]), 0);
        CHECK_EQ(lt_mutex_unlock(&many[k]), 0);
    }
    return NULL;
}

static void test_many_locks(void)
{
    static struct worker w[2];
    many = malloc(sizeof *many * MANY);
    CHECK(many != NULL);
    for (long i = 0; i < MANY; i++) {
        if (i & 1)
            CHECK_EQ(lt_mutex_init(&many[i], NULL, LT_SITE_UNKNOWN), 0);
        else
            many[i] = (lt_mutex_t)LT_MUTEX_INITIALIZER(LT_SITE_UNKNOWN);
    }
    /* Hold 1,000 at once (a node per lock held for the queue locks), then release.  TSan
     * tracks at most 64 held pthread mutexes per thread (posix). */
    int held = scale < 0.1 ? 60 : 1000;
    for (int i = 0; i < held; i++)
        CHECK_EQ(lt_mutex_lock(&many[i * 300]), 0);
    for (int i = held - 1; i >= 0; i--)
        CHECK_EQ(lt_mutex_unlock(&many[i * 300]), 0);
    size_t before = mallinfo2().uordblks;
    run_threads(2, many_worker, w, 0);
    size_t after = mallinfo2().uordblks;
    /* Binding 150,000 static locks and 600,000 acquisitions allocate nothing per lock. */
    if (after > before + 256 * 1024) {
        fprintf(stderr, "%s: %zu bytes allocated for %d locks\n", algo, after - before, MANY);
        exit(1);
    }
    for (long i = 0; i < MANY; i++)
        CHECK_EQ(lt_mutex_destroy(&many[i]), 0);
    free(many);
}

/* Watchdog: a phase that makes no progress for watchdog_s is a hang (a lost wake-up, a
 * corrupted queue): say which, and fail, rather than wait for ctest's timeout. */
static const char *phase;
static int phase_threads;
static unsigned watchdog_s = 90;

static void hung(int sig)
{
    (void)sig;
    char msg[256];
    int len =
        snprintf(msg, sizeof msg, "test_stress %s: %s (%d threads) hung: no progress for %u s\n",
                 algo, phase, phase_threads, watchdog_s);
    ssize_t r = write(2, msg, (size_t)len);
    (void)r;
    _exit(1);
}

static void timed(const char *name, int n, void (*fn)(int), int arg)
{
    phase = name;
    phase_threads = n;
    alarm(watchdog_s);
    double t0 = now_s();
    fn(arg);
    alarm(0);
    printf("  %-14s %2d threads  %7.3f s\n", name, n, now_s() - t0);
    fflush(stdout);
}

static void once(const char *name, void (*fn)(void))
{
    phase = name;
    phase_threads = 0;
    alarm(watchdog_s);
    double t0 = now_s();
    fn();
    alarm(0);
    printf("  %-25s  %7.3f s\n", name, now_s() - t0);
    fflush(stdout);
}

static int static_slot;
static void static_test(int n)
{
    test_static(n, static_slot++);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: test_stress ALGORITHM (with LOCKTUNE_ALGO=default=ALGORITHM)\n");
        return 2;
    }
    algo = argv[1];
    static const char *const fifo_spin_algos[] = {"ticket", "twa",     "mcs",     "clh",
                                                  "shfl",   "ccsynch", "dsmsynch"};
    for (unsigned i = 0; i < sizeof fifo_spin_algos / sizeof fifo_spin_algos[0]; i++)
        if (strcmp(algo, fifo_spin_algos[i]) == 0)
            fifo_spin = 1;
    fifo = fifo_spin && strcmp(algo, "shfl") != 0; /* shfl: FIFO except for stealers */
    ncpus = (int)sysconf(_SC_NPROCESSORS_ONLN);
    const char *san = getenv("LOCKTUNE_SANITIZER");
    if (san && strcmp(san, "tsan") == 0) {
        scale = 0.08;
        tolerance_s = 3.0;
        watchdog_s = 240;
    } else if (san && *san) {
        scale = 0.3;
        tolerance_s = 2.0;
        watchdog_s = 180;
    }
    signal(SIGALRM, hung);
    lt_mutex_t probe = LT_MUTEX_INITIALIZER(LT_SITE_UNKNOWN);
    if (strcmp(lt_mutex_algorithm(&probe), algo) != 0) {
        fprintf(stderr, "test_stress: locks run '%s', not '%s': is LOCKTUNE_ALGO=default=%s set?\n",
                lt_mutex_algorithm(&probe), algo, algo);
        return 1;
    }
    printf("test_stress %s (%d CPUs%s%s)\n", algo, ncpus, san ? ", sanitizer " : "",
           san ? san : "");
    double t0 = now_s();
    static const int threads[] = {1, 2, 4, 16, 64};
    for (unsigned i = 0; i < sizeof threads / sizeof threads[0]; i++) {
        int n = threads[i];
        timed("hammer", n, test_hammer, n);
        timed("exclusion", n, test_exclusion, n);
        timed("recursive", n, test_recursive, n);
        timed("static-init", n, static_test, n);
        timed("destroy-reinit", n, test_destroy_reinit, n);
        timed("prodcons", n, test_prodcons, n);
        timed("broadcast", n, test_broadcast, n);
    }
    once("trylock/timedlock", test_try_timed);
    once("mutex types", test_types);
    once("cond timed waits", test_cond_timed);
    once("misuse", test_misuse);
    once("fifo order", test_fifo);
    once("300,000 locks", test_many_locks);
    printf("test_stress %s: ok (%.1f s)\n", algo, now_s() - t0);
    return 0;
}
