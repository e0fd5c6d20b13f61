/*
 * interpose.c - the pthread functions liblocktune-prof.so puts in front of the C
 * library's: mutexes, rwlocks, spinlocks, condition waits, thread creation.
 *
 * Every wrapper first asks ltp_enter() whether this thread records; if not (profiling off,
 * the profiler's own slow path, a thread that has exited) it calls straight through.
 * Otherwise it times the call and reports it (track.h).  A wrapper returns exactly what the
 * C library returned and never changes what the call does: robust, process-shared,
 * priority-inheritance, recursive and error-checking mutexes behave as before (EOWNERDEAD,
 * EDEADLK, EAGAIN and the rest come back unchanged).
 *
 * Contention.  pthread_mutex_lock() reads glibc's lock word after acquiring: a word with
 * waiters flagged (track.h, ltp_mutex_has_waiters) means the acquisition went through the
 * kernel, or another thread queued behind it a few instructions later; either way the lock
 * was fought over.  (Trying the lock first would tell exactly, but glibc's trylock costs
 * twice its lock on the uncontended path.)  The other blocking locks (rwlocks, spinlocks,
 * timed mutex locks) keep no such word and try first: that try is the operation the blocking
 * call begins with anyway.
 *
 * Condition variables are sites too (LTP_KIND_COND: init call, static variable or first
 * use), counted apart from the mutex they are used with: waits, timed waits and timeouts,
 * the time waited, signals and broadcasts, and those that found nobody waiting -- glibc's
 * own test, the waiter count in the condvar's __wrefs word (bits 3 and up) read just
 * before the call, the word glibc's signal and broadcast read to return at once.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "real.h"
#include "sites.h"
#include "track.h"

#define LTP_EXPORT __attribute__((visibility("default")))

/* ---------------------------------------------------------------- birth and death */

static uint32_t mutex_attr(const pthread_mutexattr_t *a)
{
    uint32_t f = 0;
    int v;
    if (!a)
        return 0;
    if (pthread_mutexattr_getpshared(a, &v) == 0 && v == PTHREAD_PROCESS_SHARED)
        f |= LTP_ATTR_PSHARED;
    if (pthread_mutexattr_getrobust(a, &v) == 0 && v == PTHREAD_MUTEX_ROBUST)
        f |= LTP_ATTR_ROBUST;
    if (pthread_mutexattr_gettype(a, &v) == 0)
        f |= v == PTHREAD_MUTEX_RECURSIVE    ? LTP_ATTR_RECURSIVE
             : v == PTHREAD_MUTEX_ERRORCHECK ? LTP_ATTR_ERRORCHECK
                                             : 0;
    if (pthread_mutexattr_getprotocol(a, &v) == 0 && v == PTHREAD_PRIO_INHERIT)
        f |= LTP_ATTR_PI;
    return f;
}

static void born(void *lock, int kind, uint32_t attr)
{
    ltp_locktab_born(lock, kind, ltp_site_init(kind, attr, lock));
}

LTP_EXPORT int pthread_mutex_init(pthread_mutex_t *m, const pthread_mutexattr_t *a)
{
    struct ltp_tls *t = ltp_enter();
    int r = ltp_real.mutex_init(m, a);
    if (r == 0 && t)
        born(m, LTP_KIND_MUTEX, mutex_attr(a));
    return r;
}

LTP_EXPORT int pthread_mutex_destroy(pthread_mutex_t *m)
{
    struct ltp_tls *t = ltp_enter();
    int r = ltp_real.mutex_destroy(m);
    if (r == 0 && t)
        ltp_locktab_died(m, LTP_KIND_MUTEX);
    return r;
}

LTP_EXPORT int pthread_rwlock_init(pthread_rwlock_t *l, const pthread_rwlockattr_t *a)
{
    struct ltp_tls *t = ltp_enter();
    int r = ltp_real.rwlock_init(l, a);
    int v;
    if (r == 0 && t)
        born(l, LTP_KIND_RWLOCK,
             a && pthread_rwlockattr_getpshared(a, &v) == 0 && v == PTHREAD_PROCESS_SHARED
                 ? LTP_ATTR_PSHARED
                 : 0);
    return r;
}

LTP_EXPORT int pthread_rwlock_destroy(pthread_rwlock_t *l)
{
    struct ltp_tls *t = ltp_enter();
    int r = ltp_real.rwlock_destroy(l);
    if (r == 0 && t)
        ltp_locktab_died(l, LTP_KIND_RWLOCK);
    return r;
}

LTP_EXPORT int pthread_spin_init(pthread_spinlock_t *l, int pshared)
{
    struct ltp_tls *t = ltp_enter();
    int r = ltp_real.spin_init(l, pshared);
    if (r == 0 && t)
        born((void *)l, LTP_KIND_SPIN, pshared == PTHREAD_PROCESS_SHARED ? LTP_ATTR_PSHARED : 0);
    return r;
}

LTP_EXPORT int pthread_spin_destroy(pthread_spinlock_t *l)
{
    struct ltp_tls *t = ltp_enter();
    int r = ltp_real.spin_destroy(l);
    if (r == 0 && t)
        ltp_locktab_died((void *)l, LTP_KIND_SPIN);
    return r;
}

/* ---------------------------------------------------------------- mutexes */

static inline int acquired_ok(int r)
{
    return r == 0 || r == EOWNERDEAD; /* EOWNERDEAD: a robust mutex, acquired all the same */
}

/* pthread_mutex_lock once m's site is known (s, e): also what ltp_sample_calibrate runs. */
static inline int mutex_lock_at(struct ltp_tls *t, pthread_mutex_t *m, struct ltp_raw_slot *s,
                                struct ltp_lockent *e, uint64_t ra)
{
    int r;
    ltp_owner_prefetch(e);
    /* Did the section lose its CPU?  Asked at the release (tripwire.h).  One that starts
     * right after the thread lost it finds cold caches: timed, not a sample. */
    int cold = ltp_entry(t);
    int pick = ltp_mutex_word(m) == 0 && !cold ? ltp_sample(t, s) : LTP_TIMED_ALWAYS;
    if (__builtin_expect(!pick, 1)) {
        /* Free, and not sampled for timing (layout.h, "Timing").  One clock reading, kept:
         * should the section turn out fought over (waiters at the acquisition or the
         * release, a holder preempted), it is timed after all. */
        uint64_t t0 = ltp_now();
        r = ltp_real.mutex_lock(m);
        if (__builtin_expect(acquired_ok(r), 1)) {
            if (__builtin_expect(ltp_mutex_has_waiters(m), 0))
                ltp_acquired_at(t, m, s, e, 0, t0, ltp_now(), 1, ltp_pmc(t), 0, ra);
            else
                ltp_acquired_untimed(t, m, s, e, t0, ra);
        }
        return r;
    }
    uint64_t pmc0 = ltp_pmc(t);
    /* A random sample stands alone among untimed sections: an ordered reading (clock.h). */
    uint64_t t0 = pick == LTP_TIMED_RANDOM ? ltp_now_ordered() : ltp_now(), t1 = t0;
    r = ltp_real.mutex_lock(m);
    /* Waiters flagged in the word once acquired: this acquisition waited in the kernel (or
     * a waiter queued in the few instructions since): the acquisition time is now.  A
     * random sample that did not wait takes no second reading (the fewer its readings, the
     * more it is like the untimed pairs it stands for): should its call have lost the CPU,
     * the tripwire says so at the release, and it is no sample. */
    int contended = ltp_mutex_has_waiters(m);
    t1 = contended ? ltp_now() : pick == LTP_TIMED_RANDOM ? t0 : ltp_took(t0);
    if (__builtin_expect(acquired_ok(r), 1))
        ltp_acquired_at(t, m, s, e, 0, t0, t1, contended, pmc0, pick == LTP_TIMED_RANDOM, ra);
    return r;
}

LTP_EXPORT int pthread_mutex_lock(pthread_mutex_t *m)
{
    struct ltp_tls *t = ltp_enter();
    if (__builtin_expect(!t, 0))
        return ltp_real.mutex_lock(m);
    struct ltp_lockent *e;
    struct ltp_raw_slot *s = ltp_slot_of(t, m, LTP_KIND_MUTEX, &e);
    if (__builtin_expect(!s, 0))
        return ltp_real.mutex_lock(m); /* untracked */
    return mutex_lock_at(t, m, s, e, LTP_CALLER);
}

LTP_EXPORT int pthread_mutex_trylock(pthread_mutex_t *m)
{
    struct ltp_tls *t = ltp_enter();
    if (__builtin_expect(!t, 0))
        return ltp_real.mutex_trylock(m);
    uint64_t pmc0 = ltp_pmc(t);
    uint64_t t0 = ltp_now();
    int r = ltp_real.mutex_trylock(m);
    if (acquired_ok(r))
        ltp_acquired(t, m, LTP_KIND_MUTEX, 0, t0, ltp_took(t0), 0, pmc0, LTP_CALLER);
    else if (r == EBUSY)
        ltp_trylock_failed(t, m, LTP_KIND_MUTEX);
    return r;
}

/* timedlock and clocklock: try, then the timed call; a timeout is time lost to the lock. */
static inline int mutex_timed(struct ltp_tls *t, pthread_mutex_t *m, int r, uint64_t t0,
                              uint64_t pmc0, uint64_t ra)
{
    uint64_t t1 = ltp_now();
    if (acquired_ok(r))
        ltp_acquired(t, m, LTP_KIND_MUTEX, 0, t0, t1, 1, pmc0, ra);
    else if (r == ETIMEDOUT)
        ltp_timed_out(t, m, LTP_KIND_MUTEX, t0, t1, ra);
    return r;
}

LTP_EXPORT int pthread_mutex_timedlock(pthread_mutex_t *m, const struct timespec *abstime)
{
    struct ltp_tls *t = ltp_enter();
    if (__builtin_expect(!t, 0))
        return ltp_real.mutex_timedlock(m, abstime);
    uint64_t pmc0 = ltp_pmc(t);
    uint64_t t0 = ltp_now();
    int r = ltp_real.mutex_trylock(m);
    if (r != EBUSY) {
        if (acquired_ok(r))
            ltp_acquired(t, m, LTP_KIND_MUTEX, 0, t0, t0, 0, pmc0, LTP_CALLER);
        return r;
    }
    return mutex_timed(t, m, ltp_real.mutex_timedlock(m, abstime), t0, pmc0, LTP_CALLER);
}

LTP_EXPORT int pthread_mutex_clocklock(pthread_mutex_t *m, clockid_t clock,
                                       const struct timespec *abstime)
{
    struct ltp_tls *t = ltp_enter();
    if (__builtin_expect(!t, 0))
        return ltp_real.mutex_clocklock(m, clock, abstime);
    uint64_t pmc0 = ltp_pmc(t);
    uint64_t t0 = ltp_now();
    int r = ltp_real.mutex_trylock(m);
    if (r != EBUSY) {
        if (acquired_ok(r))
            ltp_acquired(t, m, LTP_KIND_MUTEX, 0, t0, t0, 0, pmc0, LTP_CALLER);
        return r;
    }
    return mutex_timed(t, m, ltp_real.mutex_clocklock(m, clock, abstime), t0, pmc0, LTP_CALLER);
}

/* pthread_mutex_unlock for a tracked thread: also what ltp_sample_calibrate runs. */
static inline int mutex_unlock_in(struct ltp_tls *t, pthread_mutex_t *m)
{
    struct ltp_held *h = ltp_held_find(t, m);
    if (__builtin_expect(h == NULL, 0)) {
        ltp_unheld(t);
        return ltp_real.mutex_unlock(m);
    }
    if (__builtin_expect(!h->timed, 1)) {
        if (__builtin_expect(!ltp_mutex_has_waiters(m), 1)) {
            int r = ltp_real.mutex_unlock(m);
            if (__builtin_expect(r == 0 && !ltp_lost_cpu(t, h), 1)) {
                ltp_pop(t, h, 0);
            } else if (r == 0) {
                /* It lost its CPU inside (tripwire.h): a preemption in a section is time the
                 * lock was held, which the random samples must not stand for.  Timed after
                 * all, from its entry's reading, to now. */
                uint64_t t3 = ltp_now();
                ltp_late_timed(t, h);
                ltp_released(t, h, t3, t3, 0);
            }
            return r;
        }
        /* Threads queued behind an untimed section: it is timed after all, from its
         * acquisition's reading (track.h, ltp_late_timed), and so are those that find the
         * lock held (ltp_sample is not asked).  The site stays sampled: what is left to the
         * estimate - sections that found the lock free, left it with nobody queued and kept
         * their CPU - is what the random samples are (ltp_not_a_sample).  Until the CPU
         * losses were seen (tripwire.h), one such section switched the site to timing every
         * one, for fear of a preempted holder: at 2 threads on 2 CPUs every section of a
         * contended lock was timed, which doubled its cost. */
        ltp_late_timed(t, h);
    } else if (h->random && ltp_mutex_has_waiters(m)) {
        ltp_not_a_sample(t, h); /* left with threads queued: not like the untimed ones */
    }
    /* A random sample reads the clock once more than an untimed pair, after the release,
     * and no more: no t2 (its hold is its cs less the calibrated cost of the two calls:
     * ltp_released).  That reading is ordered: an unordered one may run before the
     * release's atomic has drained the stores the section left, and that drain grows with
     * the section (its stores), so the empty sections of the calibration could not stand for
     * it: short sampled sections came out 5-8% low on the AMD EPYC VM, exact ones right. */
    uint64_t t2 = h->random ? 0 : ltp_now();
    int r = ltp_real.mutex_unlock(m);
    if (r == 0)
        ltp_released(t, h, t2, h->random ? ltp_now_ordered() : ltp_now(), ltp_pmc(t));
    return r;
}

LTP_EXPORT int pthread_mutex_unlock(pthread_mutex_t *m)
{
    struct ltp_tls *t = ltp_enter();
    if (__builtin_expect(!t, 0))
        return ltp_real.mutex_unlock(m);
    return mutex_unlock_in(t, m);
}

/* ---------------------------------------------------------------- sample calibration
 *
 * Two corrections the profiler cannot read off one section, measured once, at start-up.
 *
 * A timed section's window [t0, t3] leaves out what its two calls spend outside it (the
 * site lookup and the sampling decision before t0, the bookkeeping after t3), which the
 * program waits for all the same: about 18 ns of a pair on the AMD EPYC VM, 12% of a short
 * section.  timed bias = a timed section's cs less its pair's whole cost (negative); the
 * analysis adds its opposite to each timed section (analyze.py, timed_outside).
 *
 * A random sample stands for the untimed sections of its site (track.h, ltp_unbiased), but it
 * is not one of them: its window holds two ordered clock readings they do not make and more
 * bookkeeping, and leaves out what an untimed pair spends in the wrappers outside it.  What
 * the difference comes to depends on the CPU: the two readings alone were 21 ns on the Intel
 * host, and taking 30 out of each sample on an AMD EPYC host left short sampled sections 11%
 * low, where taking nothing left them 16% high.  cs bias = a sample's cs less an untimed
 * pair's whole cost; hold bias = a sample's hold, that of an empty section.
 *
 * Each is measured on the very code the wrappers run (mutex_lock_at, mutex_unlock_in), on a
 * private mutex and slots: in each round, CAL_PAIRS empty timed pairs, CAL_PAIRS empty
 * untimed pairs, each timed from outside between two ordered readings (clock.h) less what
 * one reading takes (reading_cost), then CAL_PAIRS empty random samples, timed by the
 * profiler as a sample is.  (Timing a loop of untimed pairs instead gives their throughput,
 * which the CPU's overlap of one pair with the next makes shorter than the time from a call's
 * entry to the release's return: on the AMD host that left the bias 10 ns too large.)  A
 * round in which the thread lost its CPU (an untimed pair timed after all, a sample that is
 * no sample: tripwire.h) does not count; the median of the first CAL_ROUNDS that do is kept,
 * of CAL_TRIES at most (about 50 us each).  The calling thread's state (its record,
 * countdown, tripwire count) is put back after.  With every section timed (sample period 1)
 * only the timed bias is measured. */

#define CAL_ROUNDS   9
#define CAL_TRIES    64
#define CAL_PAIRS    256
#define CAL_READINGS 63

/* Called through pointers, as the program reaches the wrappers (a call and a return). */
static __attribute__((noinline)) void cal_pair(struct ltp_tls *t, pthread_mutex_t *m,
                                               struct ltp_raw_slot *s, struct ltp_lockent *e)
{
    mutex_lock_at(t, m, s, e, LTP_CALLER);
    mutex_unlock_in(t, m);
}

static int cmp_u64(const void *x, const void *y)
{
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return (a > b) - (a < b);
}

static int cmp_i64(const void *x, const void *y)
{
    int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
    return (a > b) - (a < b);
}

/* Mean cost of one ordered reading: the mean of back-to-back differences, those of an
 * interrupt (above 10 times the median) left out.  Not the median: the clock moves in steps
 * (26 ticks, 10 ns, on the AMD EPYC VM, where back-to-back ordered readings differ by 52 or
 * 78), and the median is one step or the other whatever the mean between them. */
static uint64_t reading_cost(void)
{
    uint64_t d[CAL_READINGS], prev = ltp_now_ordered();
    for (int i = 0; i < CAL_READINGS; i++) {
        uint64_t x = ltp_now_ordered();
        d[i] = x - prev;
        prev = x;
    }
    qsort(d, CAL_READINGS, sizeof d[0], cmp_u64);
    uint64_t sum = 0, n = 0;
    for (int i = 0; i < CAL_READINGS && d[i] <= 10 * d[CAL_READINGS / 2]; i++)
        sum += d[i], n++;
    return sum / n;
}

/* CAL_PAIRS empty pairs on slot s, none a random sample, each timed from outside as a timed
 * section is (between two ordered readings, less one reading's cost): their mean. */
static int64_t pairs_outside(struct ltp_tls *t, pthread_mutex_t *m, struct ltp_raw_slot *s,
                             struct ltp_lockent *e, uint64_t reading,
                             void (*pair)(struct ltp_tls *, pthread_mutex_t *,
                                          struct ltp_raw_slot *, struct ltp_lockent *))
{
    uint64_t sum = 0;
    for (int i = 0; i < CAL_PAIRS; i++) {
        t->countdown = UINT32_MAX;
        uint64_t x0 = ltp_now_ordered();
        pair(t, m, s, e);
        sum += ltp_elapsed(x0, ltp_now_ordered(), &t->rec->clock_noise);
    }
    return (int64_t)(sum / CAL_PAIRS) - (int64_t)reading;
}

void ltp_sample_calibrate(struct ltp_tls *t)
{
    static struct ltp_tls saved;
    static struct ltp_raw_record rec;
    static struct ltp_raw_slot slot, tslot;
    struct ltp_lockent *e = &ltp_locktab[LTP_LOCKTAB_PRIVATE];
    int64_t cs_bias[CAL_ROUNDS], hold_bias[CAL_ROUNDS], timed_bias[CAL_ROUNDS];
    void (*volatile pair)(struct ltp_tls *, pthread_mutex_t *, struct ltp_raw_slot *,
                          struct ltp_lockent *) = cal_pair;
    int sampled = ltp_sample_period != 1;
    pthread_mutex_t m;
    if (ltp_real.mutex_init(&m, NULL) != 0)
        return;
    saved = *t;
    t->rec = &rec;
    t->depth = 0;
    ltp_sample_bias = ltp_sample_bias_hold = ltp_timed_bias = 0;
    int n = 0;
    for (int round = 0; round < CAL_TRIES && n < CAL_ROUNDS; round++) {
        memset(&slot, 0, sizeof slot);
        memset(&tslot, 0, sizeof tslot);
        slot.long_cs = LTP_CS_SHORT; /* sampled, decided */
        slot.timed = LTP_EXACT_FIRST;
        tslot.long_cs = LTP_CS_LONG; /* every section timed */
        t->countdown = UINT32_MAX;   /* untimed until the samples below */
        pair(t, &m, &slot, e);       /* the callers' entries (ltp_callsite_slow), out of the way */
        pair(t, &m, &tslot, e);
        uint64_t cs0 = tslot.cs;
        uint64_t reading = reading_cost();
        /* the timed sections' own cs against their whole pairs' */
        int64_t timed = pairs_outside(t, &m, &tslot, e, reading, pair);
        if (tslot.lost_cpu != 0) /* each kept its CPU */
            continue;
        timed_bias[n] = (int64_t)((tslot.cs - cs0) / CAL_PAIRS) - timed;
        if (sampled) {
            /* untimed pairs, then as many random samples of an empty section */
            int64_t untimed = pairs_outside(t, &m, &slot, e, reading, pair);
            int untimed_ok = slot.timed == LTP_EXACT_FIRST; /* none timed late */
            for (int i = 0; i < CAL_PAIRS; i++) {
                t->countdown = 1; /* the next acquisition is a random sample */
                pair(t, &m, &slot, e);
            }
            if (!untimed_ok || slot.timed_free != CAL_PAIRS) /* each kept its CPU */
                continue;
            cs_bias[n] = (int64_t)(slot.cs_free / CAL_PAIRS) - untimed;
            hold_bias[n] = (int64_t)(slot.hold_free / CAL_PAIRS);
        }
        n++;
    }
    ltp_real.mutex_destroy(&m);
    *t = saved;
    ltp_sample_bias_rounds = (uint32_t)n;
    if (n == 0)
        return; /* never undisturbed: no correction (the profile says so) */
    qsort(timed_bias, (size_t)n, sizeof timed_bias[0], cmp_i64);
    ltp_timed_bias = timed_bias[n / 2];
    if (!sampled)
        return;
    qsort(cs_bias, (size_t)n, sizeof cs_bias[0], cmp_i64);
    qsort(hold_bias, (size_t)n, sizeof hold_bias[0], cmp_i64);
    ltp_sample_bias = cs_bias[n / 2];
    ltp_sample_bias_hold = hold_bias[n / 2];
}

/* ---------------------------------------------------------------- rwlocks */

static inline int rw_lock(pthread_rwlock_t *l, int shared, uint64_t ra)
{
    struct ltp_tls *t = ltp_enter(); /* resolves ltp_real on the first call */
    int (*try)(pthread_rwlock_t *) = shared ? ltp_real.rwlock_tryrdlock : ltp_real.rwlock_trywrlock;
    int (*block)(pthread_rwlock_t *) = shared ? ltp_real.rwlock_rdlock : ltp_real.rwlock_wrlock;
    if (__builtin_expect(!t, 0))
        return block(l);
    uint64_t pmc0 = ltp_pmc(t);
    uint64_t t0 = ltp_now(), t1 = t0;
    int contended = 0;
    int r = try(l);
    if (r == EBUSY) {
        contended = 1;
        r = block(l);
        t1 = ltp_now();
    } else {
        t1 = ltp_took(t0);
    }
    if (r == 0)
        ltp_acquired(t, l, LTP_KIND_RWLOCK, shared, t0, t1, contended, pmc0, ra);
    return r;
}

static inline int rw_try(pthread_rwlock_t *l, int shared, uint64_t ra)
{
    struct ltp_tls *t = ltp_enter();
    int (*try)(pthread_rwlock_t *) = shared ? ltp_real.rwlock_tryrdlock : ltp_real.rwlock_trywrlock;
    if (__builtin_expect(!t, 0))
        return try(l);
    uint64_t pmc0 = ltp_pmc(t);
    uint64_t t0 = ltp_now();
    int r = try(l);
    if (r == 0)
        ltp_acquired(t, l, LTP_KIND_RWLOCK, shared, t0, ltp_took(t0), 0, pmc0, ra);
    else if (r == EBUSY)
        ltp_trylock_failed(t, l, LTP_KIND_RWLOCK);
    return r;
}

/* The timed variants: `r` is the first try's result, `timed` the timed call's. */
static inline int rw_timed(struct ltp_tls *t, pthread_rwlock_t *l, int shared, int r, int timed,
                           uint64_t t0, uint64_t pmc0, uint64_t ra)
{
    if (r != EBUSY) {
        if (r == 0)
            ltp_acquired(t, l, LTP_KIND_RWLOCK, shared, t0, t0, 0, pmc0, ra);
        return r;
    }
    uint64_t t1 = ltp_now();
    if (timed == 0)
        ltp_acquired(t, l, LTP_KIND_RWLOCK, shared, t0, t1, 1, pmc0, ra);
    else if (timed == ETIMEDOUT)
        ltp_timed_out(t, l, LTP_KIND_RWLOCK, t0, t1, ra);
    return timed;
}

LTP_EXPORT int pthread_rwlock_rdlock(pthread_rwlock_t *l)
{
    return rw_lock(l, 1, LTP_CALLER);
}

LTP_EXPORT int pthread_rwlock_wrlock(pthread_rwlock_t *l)
{
    return rw_lock(l, 0, LTP_CALLER);
}

LTP_EXPORT int pthread_rwlock_tryrdlock(pthread_rwlock_t *l)
{
    return rw_try(l, 1, LTP_CALLER);
}

LTP_EXPORT int pthread_rwlock_trywrlock(pthread_rwlock_t *l)
{
    return rw_try(l, 0, LTP_CALLER);
}

LTP_EXPORT int pthread_rwlock_timedrdlock(pthread_rwlock_t *l, const struct timespec *abstime)
{
    struct ltp_tls *t = ltp_enter();
    if (__builtin_expect(!t, 0))
        return ltp_real.rwlock_timedrdlock(l, abstime);
    uint64_t pmc0 = ltp_pmc(t), t0 = ltp_now();
    int r = ltp_real.rwlock_tryrdlock(l);
    return rw_timed(t, l, 1, r, r == EBUSY ? ltp_real.rwlock_timedrdlock(l, abstime) : r, t0, pmc0,
                    LTP_CALLER);
}

LTP_EXPORT int pthread_rwlock_timedwrlock(pthread_rwlock_t *l, const struct timespec *abstime)
{
    struct ltp_tls *t = ltp_enter();
    if (__builtin_expect(!t, 0))
        return ltp_real.rwlock_timedwrlock(l, abstime);
    uint64_t pmc0 = ltp_pmc(t), t0 = ltp_now();
    int r = ltp_real.rwlock_trywrlock(l);
    return rw_timed(t, l, 0, r, r == EBUSY ? ltp_real.rwlock_timedwrlock(l, abstime) : r, t0, pmc0,
                    LTP_CALLER);
}

LTP_EXPORT int pthread_rwlock_clockrdlock(pthread_rwlock_t *l, clockid_t clock,
                                          const struct timespec *abstime)
{
    struct ltp_tls *t = ltp_enter();
    if (__builtin_expect(!t, 0))
        return ltp_real.rwlock_clockrdlock(l, clock, abstime);
    uint64_t pmc0 = ltp_pmc(t), t0 = ltp_now();
    int r = ltp_real.rwlock_tryrdlock(l);
    return rw_timed(t, l, 1, r, r == EBUSY ? ltp_real.rwlock_clockrdlock(l, clock, abstime) : r, t0,
                    pmc0, LTP_CALLER);
}

LTP_EXPORT int pthread_rwlock_clockwrlock(pthread_rwlock_t *l, clockid_t clock,
                                          const struct timespec *abstime)
{
    struct ltp_tls *t = ltp_enter();
    if (__builtin_expect(!t, 0))
        return ltp_real.rwlock_clockwrlock(l, clock, abstime);
    uint64_t pmc0 = ltp_pmc(t), t0 = ltp_now();
    int r = ltp_real.rwlock_trywrlock(l);
    return rw_timed(t, l, 0, r, r == EBUSY ? ltp_real.rwlock_clockwrlock(l, clock, abstime) : r, t0,
                    pmc0, LTP_CALLER);
}

LTP_EXPORT int pthread_rwlock_unlock(pthread_rwlock_t *l)
{
    struct ltp_tls *t = ltp_enter();
    if (__builtin_expect(!t, 0))
        return ltp_real.rwlock_unlock(l);
    uint64_t t2 = ltp_now();
    struct ltp_held *h = ltp_held_find(t, l);
    int r = ltp_real.rwlock_unlock(l);
    if (h) {
        if (r == 0)
            ltp_released(t, h, t2, ltp_now(), ltp_pmc(t));
    } else {
        ltp_unheld(t);
    }
    return r;
}

/* ---------------------------------------------------------------- spinlocks */

LTP_EXPORT int pthread_spin_lock(pthread_spinlock_t *l)
{
    struct ltp_tls *t = ltp_enter();
    if (__builtin_expect(!t, 0))
        return ltp_real.spin_lock(l);
    uint64_t pmc0 = ltp_pmc(t);
    uint64_t t0 = ltp_now(), t1 = t0;
    int contended = 0;
    int r = ltp_real.spin_trylock(l);
    if (r == EBUSY) {
        contended = 1;
        r = ltp_real.spin_lock(l);
        t1 = ltp_now();
    } else {
        t1 = ltp_took(t0);
    }
    if (r == 0)
        ltp_acquired(t, (void *)l, LTP_KIND_SPIN, 0, t0, t1, contended, pmc0, LTP_CALLER);
    return r;
}

LTP_EXPORT int pthread_spin_trylock(pthread_spinlock_t *l)
{
    struct ltp_tls *t = ltp_enter();
    if (__builtin_expect(!t, 0))
        return ltp_real.spin_trylock(l);
    uint64_t pmc0 = ltp_pmc(t);
    uint64_t t0 = ltp_now();
    int r = ltp_real.spin_trylock(l);
    if (r == 0)
        ltp_acquired(t, (void *)l, LTP_KIND_SPIN, 0, t0, t0, 0, pmc0, LTP_CALLER);
    else if (r == EBUSY)
        ltp_trylock_failed(t, (void *)l, LTP_KIND_SPIN);
    return r;
}

LTP_EXPORT int pthread_spin_unlock(pthread_spinlock_t *l)
{
    struct ltp_tls *t = ltp_enter();
    if (__builtin_expect(!t, 0))
        return ltp_real.spin_unlock(l);
    uint64_t t2 = ltp_now();
    struct ltp_held *h = ltp_held_find(t, (void *)l);
    int r = ltp_real.spin_unlock(l);
    if (h) {
        if (r == 0)
            ltp_released(t, h, t2, ltp_now(), ltp_pmc(t));
    } else {
        ltp_unheld(t);
    }
    return r;
}

/* ---------------------------------------------------------------- condition variables */

LTP_EXPORT int pthread_cond_init(pthread_cond_t *c, const pthread_condattr_t *a)
{
    struct ltp_tls *t = ltp_enter();
    int r = ltp_real.cond_init(c, a);
    int v;
    if (r == 0 && t)
        born(c, LTP_KIND_COND,
             a && pthread_condattr_getpshared(a, &v) == 0 && v == PTHREAD_PROCESS_SHARED
                 ? LTP_ATTR_PSHARED
                 : 0);
    return r;
}

LTP_EXPORT int pthread_cond_destroy(pthread_cond_t *c)
{
    struct ltp_tls *t = ltp_enter();
    int r = ltp_real.cond_destroy(c);
    if (r == 0 && t)
        ltp_locktab_died(c, LTP_KIND_COND);
    return r;
}

/* The condition variable's slot in this thread, or NULL (untracked). */
static inline struct ltp_raw_slot *cond_slot(struct ltp_tls *t, pthread_cond_t *c)
{
    struct ltp_lockent *e;
    return ltp_slot_of(t, c, LTP_KIND_COND, &e);
}

/* No thread waits on c: glibc's signal and broadcast return at once on this very test
 * (nptl/pthread_cond_signal.c: __wrefs >> 3, the waiter reference count, is 0). */
static inline int cond_unwaited(pthread_cond_t *c)
{
    return (__atomic_load_n(&c->__data.__wrefs, __ATOMIC_RELAXED) >> 3) == 0;
}

LTP_EXPORT int pthread_cond_signal(pthread_cond_t *c)
{
    struct ltp_tls *t = ltp_enter();
    if (__builtin_expect(t != NULL, 1)) {
        struct ltp_raw_slot *s = cond_slot(t, c);
        if (s) {
            s->signals++;
            s->signals_unwaited += (uint64_t)cond_unwaited(c);
        }
    }
    return ltp_real.cond_signal(c);
}

LTP_EXPORT int pthread_cond_broadcast(pthread_cond_t *c)
{
    struct ltp_tls *t = ltp_enter();
    if (__builtin_expect(t != NULL, 1)) {
        struct ltp_raw_slot *s = cond_slot(t, c);
        if (s) {
            s->broadcasts++;
            s->broadcasts_unwaited += (uint64_t)cond_unwaited(c);
        }
    }
    return ltp_real.cond_broadcast(c);
}

/* glibc releases and re-acquires the mutex inside the wait, not through the PLT: the wait
 * ends one critical section, and its return starts another (an acquisition whose time
 * waiting for the signal is cond_wait, not lock wait).  The condition variable's own slot
 * is found before the wait: once it returns, another thread may destroy c. */
static inline uint64_t wait_begins(struct ltp_tls *t, pthread_mutex_t *m)
{
    uint64_t tw = ltp_now();
    struct ltp_held *h = ltp_held_find(t, m);
    if (!h)
        ltp_unheld(t);
    else if (h->timed)
        ltp_released(t, h, tw, tw, ltp_pmc(t));
    else
        ltp_pop(t, h, tw);
    return tw;
}

/* `cs`: the condition variable's slot (or NULL); `timed`: a timed wait, `r` its result. */
static inline void wait_ends(struct ltp_tls *t, pthread_mutex_t *m, uint64_t tw,
                             struct ltp_raw_slot *cs, int timed, int r, uint64_t ra)
{
    uint64_t tr = ltp_now();
    uint64_t w = ltp_elapsed(tw, tr, &t->rec->clock_noise);
    struct ltp_raw_slot *s = ltp_acquired(t, m, LTP_KIND_MUTEX, 0, tr, tr, 0, ltp_pmc(t), ra);
    if (s) {
        s->cond_waits++;
        s->cond_wait += w;
    }
    if (cs) {
        cs->cond_waits++;
        cs->cond_wait += w;
        if (w > cs->max_cond_wait)
            cs->max_cond_wait = w;
        cs->timed_waits += (uint64_t)timed;
        cs->timeouts += (uint64_t)(timed && r == ETIMEDOUT);
    }
}

LTP_EXPORT int pthread_cond_wait(pthread_cond_t *c, pthread_mutex_t *m)
{
    struct ltp_tls *t = ltp_enter();
    if (__builtin_expect(!t, 0))
        return ltp_real.cond_wait(c, m);
    struct ltp_raw_slot *cs = cond_slot(t, c);
    uint64_t tw = wait_begins(t, m);
    int r = ltp_real.cond_wait(c, m);
    wait_ends(t, m, tw, cs, 0, r, LTP_CALLER);
    return r;
}

LTP_EXPORT int pthread_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m,
                                      const struct timespec *abstime)
{
    struct ltp_tls *t = ltp_enter();
    if (__builtin_expect(!t, 0))
        return ltp_real.cond_timedwait(c, m, abstime);
    struct ltp_raw_slot *cs = cond_slot(t, c);
    uint64_t tw = wait_begins(t, m);
    int r = ltp_real.cond_timedwait(c, m, abstime);
    wait_ends(t, m, tw, cs, 1, r, LTP_CALLER);
    return r;
}

LTP_EXPORT int pthread_cond_clockwait(pthread_cond_t *c, pthread_mutex_t *m, clockid_t clock,
                                      const struct timespec *abstime)
{
    struct ltp_tls *t = ltp_enter();
    if (__builtin_expect(!t, 0))
        return ltp_real.cond_clockwait(c, m, clock, abstime);
    struct ltp_raw_slot *cs = cond_slot(t, c);
    uint64_t tw = wait_begins(t, m);
    int r = ltp_real.cond_clockwait(c, m, clock, abstime);
    wait_ends(t, m, tw, cs, 1, r, LTP_CALLER);
    return r;
}

/* ---------------------------------------------------------------- threads */

struct start {
    void *(*fn)(void *);
    void *arg;
};

static void *trampoline(void *p)
{
    struct start s = *(struct start *)p;
    free(p);
    ltp_enter(); /* the thread's record, from its first instant */
    return s.fn(s.arg);
}

LTP_EXPORT int pthread_create(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *),
                              void *arg)
{
    struct ltp_tls *t = ltp_enter();
    struct start *s = t ? malloc(sizeof *s) : NULL;
    if (!s)
        return ltp_real.create(th, attr, fn, arg);
    s->fn = fn;
    s->arg = arg;
    int r = ltp_real.create(th, attr, trampoline, s);
    if (r == 0)
        __atomic_fetch_add(&ltp_hdr()->threads_created, 1, __ATOMIC_RELAXED);
    else
        free(s);
    return r;
}
