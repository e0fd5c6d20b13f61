/*
 * test_oversub ALGO - 16 threads on 2 CPUs: does the algorithm hold up, or collapse?
 *
 * The process is pinned to 2 CPUs (whatever the machine), and 16 threads do a fixed amount
 * of work - WORK acquisitions, each a short critical section on shared cache lines and a short
 * pause outside - first on a glibc pthread_mutex_t, then on an lt_mutex_t of the algorithm
 * under test (LOCKTUNE_ALGO=default=ALGO), side by side in one run, best of 3.
 *
 * A lock that collapses under oversubscription - the hand-over waits for the scheduler to run
 * a descheduled waiter, again and again - is hundreds to thousands of times slower than glibc
 * here.  The bound, BOUND_RATIO x glibc (and at least BOUND_MIN_S), is far above what a lock
 * that holds up needs on a loaded machine and far below a collapse:
 *   - every algorithm but shfl must stay within it (the test fails otherwise).  The strict FIFO
 *     locks (ticket, twa, mcs, clh, mcstp) and the lock() path of the FIFO combining queues
 *     (ccsynch, dsmsynch) hold up through their admission gate (gate.h: the surplus waiters
 *     wait passively outside the queue); without it every hand-over went to a parked waiter
 *     and cost a wake-up.
 *   - shfl (spin-only, no gate) may collapse: every hand-over goes to a descheduled waiter
 *     (docs/runtime.md, "Waiting"); so may `ALGO:spin` (LOCKTUNE_ALGO), which has no gate.
 * They get one run, stopped after at most PROBE_S; it still checks mutual exclusion, and reports
 * how far it got. Timing is meaningless under sanitizers: the test is skipped there (exit 77).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "locktune.h"

#define THREADS     16
#define WORK        1600000 /* acquisitions in all: each thread does WORK / THREADS */
#define BOUND_RATIO 100.0
#define BOUND_MIN_S 1.5
#define REPEATS     3
#define PROBE_S     3.0

/* Critical-section data: four shared lines, read-modify-written in turn. */
static struct {
    long v;
    char pad[120];
} lines[4] __attribute__((aligned(128)));

static pthread_mutex_t glibc_lock = PTHREAD_MUTEX_INITIALIZER;
static lt_mutex_t lt_lock = LT_MUTEX_INITIALIZER(LT_SITE_UNKNOWN);
static int use_lt;
static long done;   /* acquisitions done (under the lock, unprotected on purpose) */
static int stop;    /* set at the deadline: atomic */
static int running; /* threads not finished: atomic */
static pthread_barrier_t start;

static void cs(void)
{
    for (int k = 0; k < 4; k++)
        lines[k].v++;
    done++;
}

static void *worker(void *arg)
{
    (void)arg;
    unsigned x = 12345;
    pthread_barrier_wait(&start);
    for (long n = 0; n < WORK / THREADS && !__atomic_load_n(&stop, __ATOMIC_RELAXED); n++) {
        if (use_lt)
            CHECK_EQ(lt_mutex_lock(&lt_lock), 0);
        else
            CHECK_EQ(pthread_mutex_lock(&glibc_lock), 0);
        cs();
        if (use_lt)
            CHECK_EQ(lt_mutex_unlock(&lt_lock), 0);
        else
            CHECK_EQ(pthread_mutex_unlock(&glibc_lock), 0);
        for (int i = 0; i < 50; i++) /* outside the section: ~100-200 ns of private work */
            x = x * 1103515245u + 12345u;
        __asm__ __volatile__("" : : "r"(x));
    }
    __atomic_fetch_sub(&running, 1, __ATOMIC_RELEASE);
    return NULL;
}

struct run {
    double seconds;
    long done;
};

static struct run run_once(int lt, double limit_s)
{
    pthread_t t[THREADS];
    use_lt = lt;
    running = THREADS;
    done = 0;
    for (int k = 0; k < 4; k++)
        lines[k].v = 0;
    __atomic_store_n(&stop, 0, __ATOMIC_RELAXED);
    CHECK_EQ(pthread_barrier_init(&start, NULL, THREADS + 1), 0);
    for (int i = 0; i < THREADS; i++)
        CHECK_EQ(pthread_create(&t[i], NULL, worker, NULL), 0);
    pthread_barrier_wait(&start);
    double t0 = now_s();
    struct timespec tick = {0, 1000000L};
    /* Poll for completion; past the limit, ask the threads to stop. */
    while (__atomic_load_n(&running, __ATOMIC_ACQUIRE) > 0) {
        nanosleep(&tick, NULL);
        if (now_s() - t0 > limit_s) {
            __atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
            break;
        }
    }
    for (int i = 0; i < THREADS; i++)
        CHECK_EQ(pthread_join(t[i], NULL), 0);
    struct run r = {now_s() - t0, done};
    CHECK_EQ(pthread_barrier_destroy(&start), 0);
    for (int k = 0; k < 4; k++)
        CHECK_EQ(lines[k].v, r.done); /* mutual exclusion held */
    return r;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: test_oversub ALGORITHM (with LOCKTUNE_ALGO=default=ALGORITHM)\n");
        return 2;
    }
    const char *algo = argv[1];
    const char *san = getenv("LOCKTUNE_SANITIZER");
    if (san && *san) {
        printf("test_oversub %s: skipped under %s (timing)\n", algo, san);
        return 77;
    }
    if (strcmp(lt_mutex_algorithm(&lt_lock), algo) != 0) {
        fprintf(stderr, "test_oversub: locks run '%s', not '%s'\n", lt_mutex_algorithm(&lt_lock),
                algo);
        return 1;
    }
    static const char *const may_collapse[] = {"shfl"};
    int allowed = 0;
    for (unsigned i = 0; i < sizeof may_collapse / sizeof may_collapse[0]; i++)
        allowed |= strcmp(algo, may_collapse[i]) == 0;

    /* 2 CPUs, whatever the machine: 16 threads are 8x oversubscribed. */
    cpu_set_t two, all;
    CHECK_EQ(sched_getaffinity(0, sizeof all, &all), 0);
    CPU_ZERO(&two);
    for (int c = 0, n = 0; c < CPU_SETSIZE && n < 2; c++)
        if (CPU_ISSET(c, &all)) {
            CPU_SET(c, &two);
            n++;
        }
    CHECK_EQ(sched_setaffinity(0, sizeof two, &two), 0);

    double glibc = 1e9, best = 1e9;
    long best_done = 0;
    for (int r = 0; r < REPEATS; r++) {
        struct run g = run_once(0, 60.0);
        CHECK_EQ(g.done, WORK);
        glibc = g.seconds < glibc ? g.seconds : glibc;
    }
    double bound = glibc * BOUND_RATIO > BOUND_MIN_S ? glibc * BOUND_RATIO : BOUND_MIN_S;
    double limit = allowed && bound > PROBE_S ? PROBE_S : bound;
    for (int r = 0; r < (allowed ? 1 : REPEATS); r++) {
        struct run l = run_once(1, limit);
        if (l.done == WORK && l.seconds < best)
            best = l.seconds;
        if (l.done > best_done)
            best_done = l.done;
        if (best <= bound)
            break; /* one run within the bound is enough */
    }
    int collapsed = best > limit;
    double rate = best_done / (collapsed ? limit : best);
    printf("test_oversub %s: %d threads on 2 CPUs, %d acquisitions: glibc %.3f s, %s %s %.2f s "
           "(%.0f acquisitions/s; glibc %.0f/s; bound %.2f s = max(%.0f x glibc, %.1f s))\n",
           algo, THREADS, WORK, glibc, algo, collapsed ? "stopped after" : "finished in",
           collapsed ? limit : best, rate, WORK / glibc, bound, BOUND_RATIO, BOUND_MIN_S);
    if (collapsed && !allowed) {
        fprintf(stderr,
                "test_oversub %s: collapsed under oversubscription (%.0f acquisitions/s; "
                "glibc %.0f/s): %s must hold up\n",
                algo, rate, WORK / glibc, algo);
        return 1;
    }
    if (!collapsed)
        printf("  %.3f s = %.1f x glibc\n", best, best / glibc);
    if (allowed)
        printf("  %s hands over in FIFO order: documented as not for oversubscribed use; %s\n",
               algo,
               collapsed           ? "it did not finish in time (expected)"
               : best > glibc * 10 ? "it finished, degraded"
                                   : "it held up this time");
    return 0;
}
