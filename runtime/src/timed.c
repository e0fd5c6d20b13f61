/*
 * timed.c - what the algorithms share for timedlock (algo.h): polling trylock for a deadline,
 * and the timed waiters a releaser hands the lock to.  Its own unit: no algorithm and no
 * entry point of mutex.c needs its insides, only lt_timedlock_poll, lt_timedlock_handoff and,
 * on mutex.c's release slow path, lt_timed_handoff.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "algo.h"
#include "futex.h"
#include "lll.h"
#include "mutex.h"
#include "thread.h"

int lt_abstime_check(const struct timespec *abstime)
{
    return abstime && abstime->tv_nsec >= 0 && abstime->tv_nsec < 1000000000L ? 0 : EINVAL;
}

static int64_t ns_until(const struct timespec *abstime);

int lt_timedlock_poll(lt_mutex_t *m, int (*trylock)(lt_mutex_t *), const struct timespec *abstime)
{
    if (trylock(m) == 0)
        return 0;
    if (lt_abstime_check(abstime))
        return EINVAL;
    lt_contended(m);
    struct lt_spin s = LT_SPIN_INIT;
    int64_t delay = 1000;
    for (;;) {
        if (trylock(m) == 0)
            return 0;
        int64_t left = ns_until(abstime);
        if (left <= 0)
            return ETIMEDOUT;
        if (!lt_spin_poll(&s, LT_WAIT_PARK))
            continue; /* within the spin budget: poll again */
        int64_t d = delay < left ? delay : left;
        struct timespec ts = {(time_t)(d / 1000000000), (long)(d % 1000000000)};
        nanosleep(&ts, NULL);
        delay = delay * 2 > 1000000 ? 1000000 : delay * 2;
    }
}

/* ---- timedlock: the timed waiter is handed the lock ----
 *
 * A timed waiter cannot join most of the algorithms' queues (a ticket cannot be given back, an
 * MCS node cannot leave), and polling trylock never wins against a FIFO queue that never
 * empties.  So a timed waiter announces itself, and a releaser hands it the lock:
 *
 *   waiter:   trylock.  Failing that: append a record {m, tid, word = WAITING} to the timed
 *             list (lock `timed_lock`) and set TIMED in m->_flags - from then on every lock
 *             operation on m takes mutex.c's slow path.  trylock again (a release that read
 *             the flags before they changed handed nobody the lock), then sleep on the word
 *             until GRANTED, polling trylock now and then, or until the deadline.
 *   release:  (release_slow, by lt_mutex_unlock and by lt_execute's lock-call-unlock, which
 *             the flag selects) TIMED set and HANDED clear: take the list's lock, unlink m's
 *             eldest record, make its thread the owner (the owner field, the count) - the
 *             algorithm's state stays "held": every algorithm that uses this scheme releases
 *             a lock for any thread that unlocks it (its holder's node is kept in the lock,
 *             not in the thread) - set HANDED, clear TIMED if no record of m is left, store
 *             GRANTED (release: the new owner sees the section's writes) and wake the waiter.
 *             HANDED set: clear it and release normally.  So timed waiters get at most every
 *             other release of a lock, and the others' queue keeps moving: a queued waiter
 *             waits at most one extra section per timed waiter's acquisition.
 *   deadline: take the list's lock; GRANTED already: the lock is ours (0).  Else unlink the
 *             record, clear TIMED if it was m's last, and return ETIMEDOUT.
 *
 *   record.word:  WAITING --(waiter: spin budget spent, CAS)--> PARKED (futex wait, timed)
 *                 WAITING/PARKED --(releaser, under timed_lock: unlinked, owner set; XCHG,
 *                                   FUTEX_WAKE if PARKED)--> GRANTED
 *
 * A record lives on its waiter's stack: only holders of timed_lock touch another thread's
 * record, and a granted waiter takes timed_lock once before it returns, so the releaser is
 * done with the record (and its FUTEX_WAKE) by then.  The flags are read relaxed: a releaser
 * that misses a TIMED bit just set releases normally, and the waiter's second trylock or its
 * polls (at most TIMED_POLL_NS apart) take the lock if it is left free.  The deadline is kept
 * to within a wake-up: the waiter sleeps with the deadline as its futex timeout.
 *
 * fork: the child forgets the records (their threads are gone) and clears their locks' bits
 * (lt_mutex_timed_fork_child, from thread.c's child handler). */
struct timed_waiter {
    lt_mutex_t *m;
    struct timed_waiter *next;
    uint32_t word; /* atomic: LT_WAITING, LT_PARKED, LT_GRANTED */
    int32_t tid;
};

static uint32_t timed_lock;                                         /* lll.h */
static struct timed_waiter *timed_head, **timed_tail = &timed_head; /* FIFO, under timed_lock */

#define TIMED_POLL_NS 1000000 /* a timed waiter tries the lock itself at least every 1 ms */

static int timed_has(const lt_mutex_t *m)
{
    for (struct timed_waiter *w = timed_head; w; w = w->next)
        if (w->m == m)
            return 1;
    return 0;
}

/* Unlink w (under timed_lock); clears TIMED when it was m's last record. */
static void timed_unlink(struct timed_waiter *w)
{
    struct timed_waiter **p = &timed_head;
    while (*p != w)
        p = &(*p)->next;
    *p = w->next;
    if (timed_tail == &w->next)
        timed_tail = p;
    if (!timed_has(w->m))
        __atomic_fetch_and(&w->m->_flags, ~LT_MUTEX_F_TIMED_, __ATOMIC_RELAXED);
}

/* In mutex.c's release_slow, with TIMED or HANDED set: 1 when the lock went to a timed waiter (it
 * stays held, by that waiter now), 0 when the caller must release it. */
int lt_timed_handoff(lt_mutex_t *m)
{
    if (__atomic_load_n(&m->_flags, __ATOMIC_RELAXED) & LT_MUTEX_F_HANDED_) {
        __atomic_fetch_and(&m->_flags, ~LT_MUTEX_F_HANDED_, __ATOMIC_RELAXED);
        return 0; /* the previous release went to a timed waiter: this one to the queue */
    }
    lt_lll_lock(&timed_lock);
    struct timed_waiter *w = timed_head;
    while (w && w->m != m)
        w = w->next;
    if (!w) {
        lt_lll_unlock(&timed_lock);
        return 0;
    }
    timed_unlink(w);
    __atomic_fetch_or(&m->_flags, LT_MUTEX_F_HANDED_, __ATOMIC_RELAXED);
    m->_count = 1;
    __atomic_store_n(&m->_owner, w->tid, __ATOMIC_RELAXED); /* as mutex.c's owner field */
    lt_stat(m->_site, LT_STAT_HANDOVERS);
    lt_wake_word(&w->word, LT_GRANTED); /* release: the section's writes go with the lock */
    lt_lll_unlock(&timed_lock);
    return 1;
}

static int64_t ns_until(const struct timespec *abstime)
{
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    return (int64_t)(abstime->tv_sec - now.tv_sec) * 1000000000 + (abstime->tv_nsec - now.tv_nsec);
}

int lt_timedlock_handoff(lt_mutex_t *m, int (*trylock)(lt_mutex_t *),
                         const struct timespec *abstime)
{
    if (trylock(m) == 0)
        return 0;
    if (lt_abstime_check(abstime))
        return EINVAL;
    if (ns_until(abstime) <= 0)
        return ETIMEDOUT;
    lt_contended(m);
    struct timed_waiter w = {m, NULL, LT_WAITING, lt_self()};
    lt_lll_lock(&timed_lock);
    *timed_tail = &w;
    timed_tail = &w.next;
    /* seq_cst: the bit is set before the trylock below reads the lock's state, so a release
     * either comes after that read (and its releaser can see the bit) or leaves the lock free
     * for that trylock.  (The releaser's read is relaxed: the polls cover what it misses.) */
    __atomic_fetch_or(&m->_flags, LT_MUTEX_F_TIMED_, __ATOMIC_SEQ_CST);
    lt_lll_unlock(&timed_lock);
    struct lt_spin s = LT_SPIN_INIT;
    int r = ETIMEDOUT;
    for (;;) {
        /* acquire: pairs with the releaser's release exchange (lt_wake_word). */
        if (__atomic_load_n(&w.word, __ATOMIC_ACQUIRE) == LT_GRANTED) {
            r = 0;
            break;
        }
        if (trylock(m) == 0) {
            r = EAGAIN; /* ours by trylock: withdraw the record below */
            break;
        }
        int64_t left = ns_until(abstime);
        if (left <= 0)
            break;
        if (!lt_spin_poll(&s, LT_WAIT_PARK))
            continue;
        /* Park (wait.h's protocol: the releaser's exchange sees PARKED and wakes us).  relaxed:
         * parking publishes nothing; the futex re-checks the word. */
        uint32_t e = LT_WAITING;
        if (!__atomic_compare_exchange_n(&w.word, &e, LT_PARKED, 0, __ATOMIC_RELAXED,
                                         __ATOMIC_RELAXED) &&
            e != LT_PARKED)
            continue; /* granted meanwhile */
        if (left > TIMED_POLL_NS) {
            uint64_t t = lt_now_ns() + TIMED_POLL_NS;
            struct timespec poll = {(time_t)(t / 1000000000u), (long)(t % 1000000000u)};
            lt_futex_wait(&w.word, LT_PARKED, &poll, CLOCK_MONOTONIC);
        } else {
            lt_futex_wait(&w.word, LT_PARKED, abstime, CLOCK_REALTIME);
        }
    }
    lt_lll_lock(&timed_lock);
    if (__atomic_load_n(&w.word, __ATOMIC_ACQUIRE) == LT_GRANTED) {
        /* Handed the lock (perhaps as the deadline passed: a success, as when trylock wins
         * at the last moment).  The releaser recorded us as the owner. */
        lt_lll_unlock(&timed_lock);
        if (r == EAGAIN) { /* impossible: a releaser held the lock while we took it */
            fputs("locktune: internal error: a timed waiter was handed a lock it took\n", stderr);
            abort();
        }
        lt_stat(m->_site, LT_STAT_ACQUIRED);
        return 0;
    }
    timed_unlink(&w);
    lt_lll_unlock(&timed_lock);
    return r == EAGAIN ? 0 : r;
}

void lt_mutex_timed_prepare_fork(void)
{
    lt_lll_lock(&timed_lock); /* the list is whole at the fork */
}

void lt_mutex_timed_parent_after_fork(void)
{
    lt_lll_unlock(&timed_lock);
}

void lt_mutex_timed_fork_child(void)
{
    for (struct timed_waiter *w = timed_head; w; w = w->next)
        __atomic_fetch_and(&w->m->_flags, ~(LT_MUTEX_F_TIMED_ | LT_MUTEX_F_HANDED_),
                           __ATOMIC_RELAXED);
    timed_head = NULL;
    timed_tail = &timed_head;
    lt_lll_unlock(&timed_lock); /* taken by this thread in lt_mutex_timed_prepare_fork */
}
