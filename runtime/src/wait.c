/*
 * wait.c - waiting policies (wait.h): the spin budget, its calibration, parking.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>

#include "futex.h"
#include "stats.h"
#include "wait.h"

/* Used until calibration has run (and when it cannot run): a futex hand-off on a typical
 * virtual machine takes 5-30 us. */
#define DEFAULT_BUDGET_NS 20000u
#define MIN_BUDGET_NS     2000u
#define MAX_BUDGET_NS     100000u

static uint64_t budget_ns = DEFAULT_BUDGET_NS; /* atomic (relaxed): read by every spinner */
static const char *budget_source = "default";
static uint64_t unpark_ns;
static pthread_once_t calibrate_once = PTHREAD_ONCE_INIT;
static int budget_fixed;

uint64_t lt_spin_budget_ns(void)
{
    return __atomic_load_n(&budget_ns, __ATOMIC_RELAXED);
}

const char *lt_spin_budget_source(void)
{
    return __atomic_load_n(&budget_source, __ATOMIC_ACQUIRE);
}

uint64_t lt_wait_unpark_ns(void)
{
    return __atomic_load_n(&unpark_ns, __ATOMIC_RELAXED);
}

void lt_wait_set_budget(uint64_t ns, const char *source)
{
    budget_fixed = 1;
    __atomic_store_n(&budget_ns, ns, __ATOMIC_RELAXED);
    __atomic_store_n(&budget_source, source, __ATOMIC_RELEASE);
}

bool lt_spin_check(struct lt_spin *s, enum lt_wait_policy p)
{
    if (p == LT_WAIT_YIELD) {
        sched_yield();
        s->over = 1;
        return true;
    }
    if (!s->over) {
        uint64_t now = lt_now_ns();
        if (s->start_ns == 0)
            s->start_ns = now;
        else if (now - s->start_ns >= lt_spin_budget_ns())
            s->over = 1;
    }
    if (s->over && p == LT_WAIT_SPIN)
        sched_yield();
    return s->over;
}

void lt_wake_parked(uint32_t *w)
{
    lt_futex_wake(w, 1);
}

void lt_park(uint32_t *w, uint32_t parked, int site)
{
    lt_stat(site, LT_STAT_PARKED);
    /* acquire: pairs with the waker's release exchange. */
    while (__atomic_load_n(w, __ATOMIC_ACQUIRE) == parked)
        lt_futex_wait(w, parked, NULL, CLOCK_MONOTONIC);
}

uint32_t lt_wait_word(uint32_t *w, enum lt_wait_policy p, int site)
{
    struct lt_spin s = LT_SPIN_INIT;
    for (;;) {
        /* acquire: the grant carries the previous owner's critical section. */
        uint32_t v = __atomic_load_n(w, __ATOMIC_ACQUIRE);
        if (v != LT_WAITING && v != LT_PARKED)
            return v;
        if (lt_spin_poll(&s, p) && p == LT_WAIT_PARK) {
            uint32_t e = LT_WAITING;
            /* relaxed: parking publishes nothing; the futex re-checks the word. */
            if (__atomic_compare_exchange_n(w, &e, LT_PARKED, 0, __ATOMIC_RELAXED,
                                            __ATOMIC_RELAXED))
                lt_park(w, LT_PARKED, site);
        }
    }
}

/*
 * Calibration: what a parked waiter costs the thread that grants it the lock.  The granter
 * keeps running (it does not sleep, as in a real hand-over), so the measure is the time from
 * FUTEX_WAKE until the woken helper runs and answers: the system call plus waking a sleeping
 * thread on another CPU (or preempting one).  The median of SAMPLES hand-overs, spaced so
 * that the helper is asleep each time, is the budget: spinning that long before parking costs
 * at most twice the optimum.
 */
enum { WARMUP = 4, SAMPLES = 31 };
#define CALIBRATION_MAX_NS 50000000u /* a loaded machine gets 50 ms, then what was measured */
#define PING_STOP          UINT32_MAX

struct pingpong {
    uint32_t ping, pong;
};

static void *pong_side(void *arg)
{
    struct pingpong *pp = arg;
    for (uint32_t i = 1; i <= WARMUP + SAMPLES; i++) {
        uint32_t cur;
        /* acquire: pairs with the release store of ping. */
        while ((cur = __atomic_load_n(&pp->ping, __ATOMIC_ACQUIRE)) != i) {
            if (cur == PING_STOP)
                return NULL;
            lt_futex_wait(&pp->ping, cur, NULL, CLOCK_MONOTONIC);
        }
        __atomic_store_n(&pp->pong, i, __ATOMIC_RELEASE); /* the granter spins on it */
    }
    return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static void calibrate(void)
{
    if (budget_fixed)
        return;
    struct pingpong pp = {0, 0};
    pthread_t t;
    if (pthread_create(&t, NULL, pong_side, &pp) != 0)
        return; /* keep the default; the statistics say so */
    uint64_t sample[SAMPLES], give_up = lt_now_ns() + CALIBRATION_MAX_NS;
    unsigned n = 0;
    for (uint32_t i = 1; i <= WARMUP + SAMPLES && lt_now_ns() < give_up; i++) {
        /* Let the helper fall asleep: spin ~20 us (no sleep of ours: we are the granter). */
        uint64_t t0 = lt_now_ns();
        while (lt_now_ns() - t0 < 20000)
            lt_cpu_relax();
        t0 = lt_now_ns();
        __atomic_store_n(&pp.ping, i, __ATOMIC_RELEASE);
        lt_futex_wake(&pp.ping, 1);
        /* acquire: pairs with the helper's release store.  The helper may not get a CPU for a
         * while on a loaded machine: give up at the deadline. */
        while (__atomic_load_n(&pp.pong, __ATOMIC_ACQUIRE) != i && lt_now_ns() < give_up)
            lt_cpu_relax();
        if (__atomic_load_n(&pp.pong, __ATOMIC_ACQUIRE) != i)
            break;
        if (i > WARMUP)
            sample[n++] = lt_now_ns() - t0;
    }
    __atomic_store_n(&pp.ping, PING_STOP, __ATOMIC_RELEASE);
    lt_futex_wake(&pp.ping, 1);
    pthread_join(t, NULL);
    if (n == 0)
        return; /* keep the default; the statistics say so */
    qsort(sample, n, sizeof sample[0], cmp_u64);
    uint64_t b = sample[n / 2];
    __atomic_store_n(&unpark_ns, b, __ATOMIC_RELAXED);
    b = b < MIN_BUDGET_NS ? MIN_BUDGET_NS : b > MAX_BUDGET_NS ? MAX_BUDGET_NS : b;
    if (!budget_fixed) {
        __atomic_store_n(&budget_ns, b, __ATOMIC_RELAXED);
        __atomic_store_n(&budget_source, "calibrated", __ATOMIC_RELEASE);
    }
}

void lt_wait_calibrate(void)
{
    pthread_once(&calibrate_once, calibrate);
}
