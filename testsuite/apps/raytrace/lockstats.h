/*
 * lockstats.h - optional per-lock instrumentation of the bundled apps (build with
 * CPPFLAGS=-DAPP_LOCKSTATS).  Every app carries an identical copy, so that each app directory
 * builds on its own.
 *
 * Without APP_LOCKSTATS this header defines two empty macros and nothing else: the program's
 * lock calls are the plain pthread calls, which is what the profiler and the rewriter see.
 *
 * With APP_LOCKSTATS, included after <pthread.h>, it redirects pthread_mutex_lock, _trylock,
 * _unlock and pthread_cond_wait, _timedwait (by function-like macros) to wrappers that count,
 * per named lock:
 *   acquisitions  successful lock and trylock calls (a condition wait's re-acquisition is a
 *                 cond_wait, not an acquisition)
 *   contended     lock calls that found the lock held (a trylock first, then the real lock)
 *   wait_ns       time spent in those contended lock calls
 *   hold_ns       time from acquisition to release, minus the time slept in condition waits
 *   cond_waits    condition waits
 *
 * One source file of the program (the one with main) defines LOCKSTATS_MAIN before it includes
 * this header.  Name every lock the program uses before its threads start:
 * LOCKSTATS_NAME(&lock, "name").
 * Locks that share a name (an array of locks, one lock per thread) are summed.  A lock call on
 * a lock without a name aborts the program with a message: the counts are then complete.
 * LOCKSTATS_REPORT(phase_ns, threads) prints, on stderr, one line per name, busiest first:
 *
 *   lockstats: name=NAME acquisitions=N contended=N wait_ns=N hold_ns=N cond_waits=N
 *              held=F cs=F
 *
 * held = hold_ns / phase_ns: the share of the phase during which the lock was held (above 1
 * only for a name that covers several locks); cs = (wait_ns + hold_ns) / (threads * phase_ns):
 * the share of thread time spent acquiring or holding it (the RCL profiler's "% in CS").
 * Timestamps cost two clock_gettime calls per critical section, which lengthens short critical
 * sections: use the figures to rank locks, not as the program's own.
 */
#ifndef LOCKSTATS_H
#define LOCKSTATS_H

#ifndef APP_LOCKSTATS

#define LOCKSTATS_NAME(lock, name)           ((void)0)
#define LOCKSTATS_REPORT(phase_ns, nthreads) ((void)0)

#else

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define LOCKSTATS_MAX_NAMES 16
#define LOCKSTATS_SLOTS     16384 /* a power of two: the most locks a program can name */

struct lockstats_name {
    const char *name;
    /* Locks sharing a name can be held at the same time by different threads, so the sums
     * are atomic; relaxed, because they are read only after the threads are joined. */
    _Atomic uint64_t acquisitions, contended, wait_ns, hold_ns, cond_waits;
};

struct lockstats_slot {
    const pthread_mutex_t *lock;
    struct lockstats_name *name;
    uint64_t acquired_at; /* written and read only by the thread holding the lock */
};

/* Filled before the threads start (pthread_create orders it before their lock calls), read
 * only afterwards: the lookups need no synchronisation.  One file of the program defines
 * LOCKSTATS_MAIN before including this header, and holds the tables. */
#ifdef LOCKSTATS_MAIN
struct lockstats_name lockstats_names[LOCKSTATS_MAX_NAMES];
struct lockstats_slot lockstats_slots[LOCKSTATS_SLOTS];
int lockstats_nnames, lockstats_nslots;
#else
extern struct lockstats_name lockstats_names[LOCKSTATS_MAX_NAMES];
extern struct lockstats_slot lockstats_slots[LOCKSTATS_SLOTS];
extern int lockstats_nnames, lockstats_nslots;
#endif

static inline uint64_t lockstats_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline size_t lockstats_home(const pthread_mutex_t *lock)
{
    return (size_t)(((uintptr_t)lock >> 3) * 0x9e3779b97f4a7c15u >> 40) & (LOCKSTATS_SLOTS - 1);
}

static inline struct lockstats_slot *lockstats_find(const pthread_mutex_t *lock)
{
    for (size_t i = lockstats_home(lock);; i = (i + 1) & (LOCKSTATS_SLOTS - 1)) {
        if (lockstats_slots[i].lock == lock)
            return &lockstats_slots[i];
        if (lockstats_slots[i].lock == NULL) {
            fprintf(stderr, "lockstats: lock %p was never named (LOCKSTATS_NAME)\n",
                    (const void *)lock);
            abort();
        }
    }
}

static inline void lockstats_name(const pthread_mutex_t *lock, const char *name)
{
    struct lockstats_name *n = NULL;
    for (int i = 0; i < lockstats_nnames; i++)
        if (lockstats_names[i].name == name || strcmp(lockstats_names[i].name, name) == 0)
            n = &lockstats_names[i];
    if (n == NULL) {
        if (lockstats_nnames == LOCKSTATS_MAX_NAMES) {
            fprintf(stderr, "lockstats: more than %d lock names\n", LOCKSTATS_MAX_NAMES);
            abort();
        }
        n = &lockstats_names[lockstats_nnames++];
        n->name = name;
    }
    if (lockstats_nslots == LOCKSTATS_SLOTS / 2) {
        fprintf(stderr, "lockstats: more than %d locks named\n", LOCKSTATS_SLOTS / 2);
        abort();
    }
    size_t i = lockstats_home(lock);
    while (lockstats_slots[i].lock != NULL && lockstats_slots[i].lock != lock)
        i = (i + 1) & (LOCKSTATS_SLOTS - 1);
    if (lockstats_slots[i].lock == NULL)
        lockstats_nslots++;
    lockstats_slots[i].lock = lock;
    lockstats_slots[i].name = n;
}

static inline void lockstats_add(_Atomic uint64_t *sum, uint64_t v)
{
    atomic_fetch_add_explicit(sum, v, memory_order_relaxed);
}

static inline int lockstats_mutex_lock(pthread_mutex_t *lock)
{
    struct lockstats_slot *s = lockstats_find(lock);
    int err = (pthread_mutex_trylock)(lock); /* parenthesised: the real function */
    if (err == EBUSY) {
        uint64_t t0 = lockstats_now();
        err = (pthread_mutex_lock)(lock);
        if (err != 0)
            return err;
        s->acquired_at = lockstats_now();
        lockstats_add(&s->name->contended, 1);
        lockstats_add(&s->name->wait_ns, s->acquired_at - t0);
    } else if (err == 0) {
        s->acquired_at = lockstats_now();
    } else {
        return err;
    }
    lockstats_add(&s->name->acquisitions, 1);
    return 0;
}

static inline int lockstats_mutex_trylock(pthread_mutex_t *lock)
{
    struct lockstats_slot *s = lockstats_find(lock);
    int err = (pthread_mutex_trylock)(lock);
    if (err == 0) {
        s->acquired_at = lockstats_now();
        lockstats_add(&s->name->acquisitions, 1);
    }
    return err;
}

static inline int lockstats_mutex_unlock(pthread_mutex_t *lock)
{
    struct lockstats_slot *s = lockstats_find(lock);
    lockstats_add(&s->name->hold_ns, lockstats_now() - s->acquired_at);
    return (pthread_mutex_unlock)(lock);
}

static inline int lockstats_cond_timedwait(pthread_cond_t *cond, pthread_mutex_t *lock,
                                           const struct timespec *abstime)
{
    struct lockstats_slot *s = lockstats_find(lock);
    lockstats_add(&s->name->hold_ns, lockstats_now() - s->acquired_at);
    int err =
        abstime ? (pthread_cond_timedwait)(cond, lock, abstime) : (pthread_cond_wait)(cond, lock);
    s->acquired_at = lockstats_now(); /* held again, whatever err says */
    lockstats_add(&s->name->cond_waits, 1);
    return err;
}

static inline void lockstats_report(uint64_t phase_ns, int nthreads)
{
    struct lockstats_name *order[LOCKSTATS_MAX_NAMES];
    for (int i = 0; i < lockstats_nnames; i++) {
        int j = i;
        uint64_t hold = atomic_load_explicit(&lockstats_names[i].hold_ns, memory_order_relaxed);
        for (; j > 0 && atomic_load_explicit(&order[j - 1]->hold_ns, memory_order_relaxed) < hold;
             j--)
            order[j] = order[j - 1];
        order[j] = &lockstats_names[i];
    }
    double phase = phase_ns ? (double)phase_ns : 1.0;
    for (int i = 0; i < lockstats_nnames; i++) {
        struct lockstats_name *n = order[i];
        uint64_t acq = atomic_load_explicit(&n->acquisitions, memory_order_relaxed);
        uint64_t cont = atomic_load_explicit(&n->contended, memory_order_relaxed);
        uint64_t wait = atomic_load_explicit(&n->wait_ns, memory_order_relaxed);
        uint64_t hold = atomic_load_explicit(&n->hold_ns, memory_order_relaxed);
        uint64_t waits = atomic_load_explicit(&n->cond_waits, memory_order_relaxed);
        fprintf(stderr,
                "lockstats: name=%s acquisitions=%llu contended=%llu wait_ns=%llu hold_ns=%llu "
                "cond_waits=%llu held=%.4f cs=%.4f\n",
                n->name, (unsigned long long)acq, (unsigned long long)cont,
                (unsigned long long)wait, (unsigned long long)hold, (unsigned long long)waits,
                (double)hold / phase,
                (double)(wait + hold) / (phase * (nthreads > 0 ? nthreads : 1)));
    }
}

#define pthread_mutex_lock(lock)              lockstats_mutex_lock(lock)
#define pthread_mutex_trylock(lock)           lockstats_mutex_trylock(lock)
#define pthread_mutex_unlock(lock)            lockstats_mutex_unlock(lock)
#define pthread_cond_wait(cond, lock)         lockstats_cond_timedwait(cond, lock, NULL)
#define pthread_cond_timedwait(cond, lock, t) lockstats_cond_timedwait(cond, lock, t)

#define LOCKSTATS_NAME(lock, name)           lockstats_name(lock, name)
#define LOCKSTATS_REPORT(phase_ns, nthreads) lockstats_report(phase_ns, nthreads)

#endif /* APP_LOCKSTATS */
#endif /* LOCKSTATS_H */
