/*
 * cond.c - condition variables that work with every lock algorithm.
 *
 * A FIFO of waiters, each with a wait node on its own stack, behind a small futex lock
 * (lll.h).  A waiter sleeps on its own node's word, so a wake-up is aimed at one thread:
 *
 *   signal     dequeues the eldest waiter and wakes it alone.
 *   broadcast  detaches the whole list and wakes only its first waiter; each woken waiter,
 *              once it holds the mutex again, wakes the next one.  The waiters return one
 *              after another instead of stampeding onto the mutex - what FUTEX_CMP_REQUEUE
 *              does for glibc's futex mutexes, done here for any lock algorithm.
 *
 * Wait morphing: a waiter woken while the waker still holds the mutex can only run into the
 * held mutex - and, woken onto the waker's own CPU, it preempts the very thread it waits for.
 * So a wake-up issued by the mutex's holder (signal and broadcast called under the mutex,
 * which POSIX recommends, and every link of a broadcast chain) is deferred: the node goes on
 * the holder's thread-local list and is woken right after the holder releases that mutex
 * (lt_mutex_unlock, or the release inside its next lt_cond_wait).
 *
 * A node's word, and who moves it (a waker claims a node under the list lock, and wakes it
 * after releasing that lock, or later still when the wake-up is deferred):
 *
 *   WAITING --signal/broadcast, under the list lock: CAS--> CLAIMED --wake--> WOKEN (return)
 *      |                                                             or WOKEN_CHAIN (re-lock,
 *      |                                                                 then wake node->next)
 *      +--timeout: CAS--> LEAVING: no waker owns the node; under the list lock, unlink it, or,
 *         if a waker already unlinked it (and skipped it), count ourselves out of `_leaving`;
 *         ETIMEDOUT.
 *   A timeout whose CAS fails (CLAIMED): a waker owns the node; wait, without a deadline, for
 *   its word to turn WOKEN*.  The condition variable is never touched again.
 *
 * So a waiter that a waker has claimed never touches the condition variable again - the waker
 * may destroy and free it as soon as it returns (POSIX allows destroying a condition variable
 * once its waiters are woken) - and a LEAVING waiter, which does touch it, is still listed or
 * counted in `_leaving`, which lt_cond_destroy waits to drain.  A waker touches the node only
 * while it owns it (CLAIMED), or under the list lock (the LEAVING waiter takes that lock before
 * it returns): a node on a waiter's stack is never touched after its waiter returned.  A
 * deferred node stays alive meanwhile: CLAIMED, its waiter waits for its word whatever its
 * timeout.  Timed waits use the clock set by
 * pthread_condattr_setclock (CLOCK_REALTIME by default).  Process-shared condition variables are
 * glibc's, kept inline.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdbool.h>
#include <string.h>

#include "algo.h"
#include "diag.h"
#include "futex.h"
#include "lll.h"
#include "mutex.h"
#include "thread.h"

enum { W_WAITING = 0, W_WOKEN = 1, W_WOKEN_CHAIN = 2, W_CLAIMED = 3, W_LEAVING = 4 };

#define COND_F_MONOTONIC 1u
#define COND_F_NATIVE    2u

struct cond_node {
    struct cond_node *next;  /* list link; after a broadcast, the next waiter to wake */
    uint32_t word;           /* W_* (atomic) */
    uint32_t how;            /* deferred: the W_* to store; owned by the deferring thread */
    struct cond_node *dnext; /* deferred list link; owned by the deferring thread */
};

#define HEAD(c)    ((struct cond_node **)&(c)->_u._q._head)
#define TAIL(c)    ((struct cond_node **)&(c)->_u._q._tail)
#define MUTEX(c)   ((lt_mutex_t **)&(c)->_u._q._mutex)
#define LEAVING(c) (&(c)->_u._q._leaving)

LT_API int lt_cond_init(lt_cond_t *c, const pthread_condattr_t *attr)
{
    memset(c, 0, sizeof *c);
    if (attr) {
        int pshared = PTHREAD_PROCESS_PRIVATE;
        clockid_t clock = CLOCK_REALTIME;
        pthread_condattr_getpshared(attr, &pshared);
        pthread_condattr_getclock(attr, &clock);
        if (pshared == PTHREAD_PROCESS_SHARED) {
            c->_flags = COND_F_NATIVE;
            return pthread_cond_init(&c->_u._posix, attr);
        }
        if (clock == CLOCK_MONOTONIC)
            c->_flags = COND_F_MONOTONIC;
        else if (clock != CLOCK_REALTIME)
            return EINVAL;
    }
    return 0;
}

LT_API int lt_cond_destroy(lt_cond_t *c)
{
    if (c->_flags & COND_F_NATIVE)
        return pthread_cond_destroy(&c->_u._posix);
    for (;;) {
        lt_lll_lock(&c->_lock);
        int busy = *HEAD(c) != NULL;
        uint32_t leaving = *LEAVING(c);
        lt_lll_unlock(&c->_lock);
        if (busy)
            return EBUSY;
        if (!leaving)
            return 0;
        /* Timed-out waiters a waker skipped: each is about to take the list lock, find itself
         * unlinked and leave (a few instructions; the list lock is all it waits for). */
        sched_yield();
    }
}

/* Under the list lock: remove n if it is still listed. */
static int unlink_node(lt_cond_t *c, struct cond_node *n)
{
    struct cond_node **pp = HEAD(c), *prev = NULL;
    while (*pp && *pp != n) {
        prev = *pp;
        pp = &(*pp)->next;
    }
    if (!*pp)
        return 0;
    /* The list head is read without the lock by signal/broadcast's empty check: atomic. */
    __atomic_store_n(pp, n->next, __ATOMIC_RELAXED);
    if (*TAIL(c) == n)
        *TAIL(c) = prev;
    return 1;
}

/* Under the list lock: take n for a wake-up, unless its waiter timed out and is leaving. */
static bool claim(struct cond_node *n)
{
    uint32_t expect = W_WAITING;
    /* relaxed: against the waiter's CAS to LEAVING, on the same word; the wake-up that follows
     * is a release store. */
    return __atomic_compare_exchange_n(&n->word, &expect, W_CLAIMED, 0, __ATOMIC_RELAXED,
                                       __ATOMIC_RELAXED);
}

static void wake_node(struct cond_node *n, uint32_t how)
{
    /* release: the woken waiter sees the list edits and, for a chain, its next link. */
    __atomic_store_n(&n->word, how, __ATOMIC_RELEASE);
    lt_futex_wake(&n->word, 1); /* n may be gone by now: a stray wake is harmless */
}

void lt_cond_flush_deferred(void)
{
    struct lt_thread *t = &lt_thread_self;
    struct cond_node *n = t->deferred;
    t->deferred = NULL;
    t->deferred_mutex = NULL;
    while (n) {
        struct cond_node *next = n->dnext; /* read before the wake: n may vanish after */
        wake_node(n, n->how);
        n = next;
    }
}

/* Wake n now, or - when the caller holds m - once it releases m. */
static void wake_or_defer(struct cond_node *n, uint32_t how, lt_mutex_t *m)
{
    struct lt_thread *t = &lt_thread_self;
    if (!m || !lt_mutex_held(m)) {
        wake_node(n, how);
        return;
    }
    if (t->deferred && t->deferred_mutex != m)
        lt_cond_flush_deferred(); /* one mutex at a time: the older ones go now */
    n->how = how;
    n->dnext = t->deferred;
    t->deferred = n;
    t->deferred_mutex = m;
}

int lt_cond_wait_generic(lt_cond_t *c, lt_mutex_t *m, const struct timespec *abstime)
{
    if (abstime && lt_abstime_check(abstime))
        return EINVAL;
    int r = lt_mutex_cond_check(m);
    if (r != 0)
        return r;
    struct cond_node n = {NULL, W_WAITING, 0, NULL};
    lt_lll_lock(&c->_lock);
    if (*TAIL(c))
        (*TAIL(c))->next = &n;
    else
        __atomic_store_n(HEAD(c), &n, __ATOMIC_RELAXED);
    *TAIL(c) = &n;
    *MUTEX(c) = m; /* POSIX: every concurrent waiter uses the same mutex */
    lt_lll_unlock(&c->_lock);

    /* Read before the mutex is released: from then on a signaller may wake us, destroy the
     * condition variable and free it. */
    clockid_t clock = (c->_flags & COND_F_MONOTONIC) ? CLOCK_MONOTONIC : CLOCK_REALTIME;
    uint32_t depth;
    lt_mutex_cond_release(m, &depth); /* cannot fail: lt_mutex_cond_check passed */
    lt_stat(m->_site, LT_STAT_COND_WAITS);
    int ret = 0;
    const struct timespec *deadline = abstime;
    uint32_t w;
    /* acquire: pairs with wake_node's release store. */
    while ((w = __atomic_load_n(&n.word, __ATOMIC_ACQUIRE)) == W_WAITING || w == W_CLAIMED) {
        if (lt_futex_wait(&n.word, w, w == W_WAITING ? deadline : NULL, clock) != ETIMEDOUT)
            continue;
        /* relaxed: the node's owner is decided by this CAS against the wakers' claim (one
         * word); what we do next is ordered by the list lock, and a claimed node's wake-up by
         * the acquire load above. */
        uint32_t expect = W_WAITING;
        if (!__atomic_compare_exchange_n(&n.word, &expect, W_LEAVING, 0, __ATOMIC_RELAXED,
                                         __ATOMIC_RELAXED))
            continue; /* claimed: a waker owns the node, its wake-up comes */
        lt_lll_lock(&c->_lock);
        if (!unlink_node(c, &n))
            (*LEAVING(c))--; /* a waker unlinked us, and counted us */
        lt_lll_unlock(&c->_lock);
        ret = ETIMEDOUT;
        break;
    }
    lt_mutex_cond_reacquire(m, depth);
    if (ret == 0 && w == W_WOKEN_CHAIN && n.next)
        wake_or_defer(n.next, W_WOKEN_CHAIN, m); /* we hold m: woken when we release it */
    return ret;
}

LT_API int lt_cond_timedwait(lt_cond_t *c, lt_mutex_t *m, const struct timespec *abstime)
{
    if (c->_flags & COND_F_NATIVE) {
        if (!(m->_flags & LT_MUTEX_F_NATIVE_)) {
            lt_misuse(m, LT_MISUSE_COND_NATIVE);
            return EINVAL;
        }
        lt_stat(m->_site, LT_STAT_COND_WAITS);
        return abstime ? pthread_cond_timedwait(&c->_u._posix, &m->_u._posix, abstime)
                       : pthread_cond_wait(&c->_u._posix, &m->_u._posix);
    }
    if (!(m->_flags & LT_MUTEX_F_NATIVE_)) {
        const struct lt_algo *a =
            __atomic_load_n((const struct lt_algo *const *)&m->_ops, __ATOMIC_ACQUIRE);
        if ((uintptr_t)a > 2 && a->cond_wait)
            return a->cond_wait(c, m, abstime);
    }
    return lt_cond_wait_generic(c, m, abstime);
}

LT_API int lt_cond_wait(lt_cond_t *c, lt_mutex_t *m)
{
    return lt_cond_timedwait(c, m, NULL);
}

LT_API int lt_cond_signal(lt_cond_t *c)
{
    if (c->_flags & COND_F_NATIVE)
        return pthread_cond_signal(&c->_u._posix);
    /* relaxed: a waiter enqueues before releasing the mutex, so a signaller that holds the
     * mutex sees it; one that does not hold it has no guarantee under POSIX either. */
    if (!__atomic_load_n(HEAD(c), __ATOMIC_RELAXED))
        return 0;
    lt_lll_lock(&c->_lock);
    struct cond_node *n;
    lt_mutex_t *m = *MUTEX(c);
    while ((n = *HEAD(c)) != NULL) {
        __atomic_store_n(HEAD(c), n->next, __ATOMIC_RELAXED);
        if (!n->next)
            *TAIL(c) = NULL;
        if (claim(n))
            break;
        (*LEAVING(c))++; /* a timed-out waiter: unlinked for it, it counts itself out */
    }
    lt_lll_unlock(&c->_lock);
    if (n)
        wake_or_defer(n, W_WOKEN, m);
    return 0;
}

LT_API int lt_cond_broadcast(lt_cond_t *c)
{
    if (c->_flags & COND_F_NATIVE)
        return pthread_cond_broadcast(&c->_u._posix);
    if (!__atomic_load_n(HEAD(c), __ATOMIC_RELAXED))
        return 0;
    lt_lll_lock(&c->_lock);
    struct cond_node *first = *HEAD(c);
    lt_mutex_t *m = *MUTEX(c);
    __atomic_store_n(HEAD(c), NULL, __ATOMIC_RELAXED);
    *TAIL(c) = NULL;
    /* Claim every waiter; the timed-out ones leave the chain (they are leaving on their own). */
    for (struct cond_node **pp = &first; *pp;) {
        if (claim(*pp)) {
            pp = &(*pp)->next;
        } else {
            *pp = (*pp)->next;
            (*LEAVING(c))++;
        }
    }
    lt_lll_unlock(&c->_lock);
    if (first)
        wake_or_defer(first, W_WOKEN_CHAIN, m);
    return 0;
}
