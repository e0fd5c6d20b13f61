/* callers - ground truth per critical section (issue 13, "per critical section"): one lock
 * taken from four functions, each with sections of its own length, and the program's own
 * measure of each caller's acquisitions, wait, hold and critical-section time (the
 * profiler's definitions, as programs/truth.c: wait = lock call entry -> its return, hold =
 * its return -> the unlock call, cs = lock call entry -> the unlock call's return).
 *
 *   short_path   pthread_mutex_lock, a section of ~100 ns, 20 per round
 *   long_path    pthread_mutex_lock, a 5 us section, 1 round in 4
 *   try_path     pthread_mutex_trylock (retried until it succeeds), 1 us, 1 round in 2
 *   timed_path   pthread_mutex_timedlock, 0.5 us, 1 round in 3
 *
 * The mean section stays short (a few hundred ns), so the site is timed by sampling
 * (docs/profiler.md, "Sampling"): each caller's estimate is tested, not just the exact
 * path.
 *
 * Then, in the main thread alone, a second lock taken from 10 distinct lines (many_lock):
 * more callers than the profiler's per-thread table holds, the rest in "other callers".
 *
 * Usage: callers THREADS ITERATIONS
 * Output (times in ns, sums over threads; the lock call of NAME is on the line marked
 * CALL:NAME):
 *   truth life_ns L
 *   truth caller NAME acquisitions N hold_ns H wait_ns W cs_ns C slow_release_ns S
 *   truth many acquisitions N
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static pthread_mutex_t cs_lock = PTHREAD_MUTEX_INITIALIZER;   /* SITE:cs_lock */
static pthread_mutex_t many_lock = PTHREAD_MUTEX_INITIALIZER; /* SITE:many_lock */
static volatile long sink;

#define SLOW_NS 100000L /* an unlock call this long was preempted (programs/truth.c) */

struct acc {
    long n, hold, wait, cs, slow_release;
};

enum { SHORT, LONG, TRY, TIMED, NPATHS };
static const char *names[NPATHS] = {"short_path", "long_path", "try_path", "timed_path"};

struct thr {
    struct acc acc[NPATHS];
    long life;
    long iterations;
};

static long now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

static void spin_ns(long ns)
{
    long end = now() + ns;
    while (now() < end)
        sink++;
}

static void spin_iter(int n)
{
    for (int i = 0; i < n; i++)
        sink++;
}

static void done(struct acc *a, long t0, long t1)
{
    long t2 = now();
    pthread_mutex_unlock(&cs_lock);
    long t3 = now();
    a->n++;
    a->wait += t1 - t0;
    a->hold += t2 - t1;
    a->cs += t3 - t0;
    if (t3 - t2 >= SLOW_NS)
        a->slow_release += t3 - t2;
}

__attribute__((noinline)) static void short_path(struct acc *a)
{
    long t0 = now();
    pthread_mutex_lock(&cs_lock); /* CALL:short_path */
    long t1 = now();
    spin_iter(40);
    done(a, t0, t1);
}

__attribute__((noinline)) static void long_path(struct acc *a)
{
    long t0 = now();
    pthread_mutex_lock(&cs_lock); /* CALL:long_path */
    long t1 = now();
    spin_ns(5000);
    done(a, t0, t1);
}

__attribute__((noinline)) static void try_path(struct acc *a)
{
    for (;;) {
        long t0 = now();
        if (pthread_mutex_trylock(&cs_lock) == 0) { /* CALL:try_path */
            long t1 = now();
            spin_ns(1000);
            done(a, t0, t1);
            return;
        }
        spin_iter(100);
    }
}

__attribute__((noinline)) static void timed_path(struct acc *a)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += 60;
    long t0 = now();
    if (pthread_mutex_timedlock(&cs_lock, &ts) != 0) /* CALL:timed_path */
        abort();
    long t1 = now();
    spin_ns(500);
    done(a, t0, t1);
}

static void *work(void *arg)
{
    struct thr *t = arg;
    long start = now();
    for (long i = 0; i < t->iterations; i++) {
        for (int k = 0; k < 20; k++)
            short_path(&t->acc[SHORT]);
        if (i % 4 == 0)
            long_path(&t->acc[LONG]);
        if (i % 2 == 0)
            try_path(&t->acc[TRY]);
        if (i % 3 == 0)
            timed_path(&t->acc[TIMED]);
    }
    t->life = now() - start;
    return NULL;
}

/* 10 distinct places taking many_lock, each once per round: the first
 * LTP_CALLSITES - 1 = 7 get entries of their own, the last 3 are "other callers". */
#define MANY(n)                                                                                    \
    __attribute__((noinline)) static void many_##n(void)                                           \
    {                                                                                              \
        pthread_mutex_lock(&many_lock);                                                            \
        sink += n; /* not identical: gcc would fold them into one (-fipa-icf) */                   \
        pthread_mutex_unlock(&many_lock);                                                          \
    }
MANY(0)
MANY(1)
MANY(2)
MANY(3)
MANY(4)
MANY(5)
MANY(6)
MANY(7)
MANY(8)
MANY(9)

int main(int argc, char **argv)
{
    long start = now();
    if (argc < 3)
        return 2;
    int threads = atoi(argv[1]);
    long iterations = atol(argv[2]);
    if (threads < 1 || threads > 16)
        return 2;
    pthread_t tid[16];
    static struct thr t[16];
    for (int i = 0; i < threads; i++) {
        t[i].iterations = iterations;
        pthread_create(&tid[i], NULL, work, &t[i]);
    }
    struct acc sum[NPATHS] = {{0}};
    long life = 0;
    for (int i = 0; i < threads; i++) {
        pthread_join(tid[i], NULL);
        for (int k = 0; k < NPATHS; k++) {
            struct acc *a = &t[i].acc[k];
            sum[k].n += a->n, sum[k].hold += a->hold, sum[k].wait += a->wait;
            sum[k].cs += a->cs, sum[k].slow_release += a->slow_release;
        }
        life += t[i].life;
    }
    long many = 0;
    for (int r = 0; r < 100; r++) {
        many_0(), many_1(), many_2(), many_3(), many_4();
        many_5(), many_6(), many_7(), many_8(), many_9();
        many += 10;
    }
    life += now() - start;
    printf("truth life_ns %ld\n", life);
    for (int k = 0; k < NPATHS; k++)
        printf("truth caller %s acquisitions %ld hold_ns %ld wait_ns %ld cs_ns %ld "
               "slow_release_ns %ld\n",
               names[k], sum[k].n, sum[k].hold, sum[k].wait, sum[k].cs, sum[k].slow_release);
    printf("truth many acquisitions %ld\n", many);
    return 0;
}
