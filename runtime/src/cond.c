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
 * A node's word, and who moves it:
 *
 *   WAITING --signal (after dequeueing it)------------------> WOKEN        (return)
 *      |    --broadcast (after detaching the list)---------> WOKEN_CHAIN  (re-lock, then
 *      |                                                                   wake node->next)
 *      +--timeout: under the list lock, still listed? unlink, ETIMEDOUT.  Not listed: a waker
 *         owns the node; wait (without timeout) for its word to change.
 *
 * A waker touches the condition variable only under the list lock, and the node only after
 * releasing it: once a waiter has been woken, nothing in the condition variable is touched on
 * its behalf, so it may destroy it.  Timed waits use the clock set by pthread_condattr_setclock
 * (CLOCK_REALTIME by default).  Process-shared condition variables are glibc's, kept inline.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>

#include "algo.h"
#include "diag.h"
#include "futex.h"
#include "lll.h"
#include "mutex.h"

enum { W_WAITING = 0, W_WOKEN = 1, W_WOKEN_CHAIN = 2 };

#define COND_F_MONOTONIC 1u
#define COND_F_NATIVE    2u

struct cond_node {
    struct cond_node *next; /* list link; after a broadcast, the next waiter to wake */
    uint32_t word;          /* W_* (atomic) */
};

#define HEAD(c) ((struct cond_node **)&(c)->_u._q._head)
#define TAIL(c) ((struct cond_node **)&(c)->_u._q._tail)

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
    lt_lll_lock(&c->_lock);
    int busy = *HEAD(c) != NULL;
    lt_lll_unlock(&c->_lock);
    return busy ? EBUSY : 0;
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

static void wake_node(struct cond_node *n, uint32_t how)
{
    /* release: the woken waiter sees the list edits and, for a chain, its next link. */
    __atomic_store_n(&n->word, how, __ATOMIC_RELEASE);
    lt_futex_wake(&n->word, 1); /* n may be gone by now: a stray wake is harmless */
}

int lt_cond_wait_generic(lt_cond_t *c, lt_mutex_t *m, const struct timespec *abstime)
{
    if (abstime && lt_abstime_check(abstime))
        return EINVAL;
    int r = lt_mutex_cond_check(m);
    if (r != 0)
        return r;
    struct cond_node n = {NULL, W_WAITING};
    lt_lll_lock(&c->_lock);
    if (*TAIL(c))
        (*TAIL(c))->next = &n;
    else
        __atomic_store_n(HEAD(c), &n, __ATOMIC_RELAXED);
    *TAIL(c) = &n;
    lt_lll_unlock(&c->_lock);

    uint32_t depth;
    lt_mutex_cond_release(m, &depth); /* cannot fail: lt_mutex_cond_check passed */
    lt_stat(m->_site, LT_STAT_COND_WAITS);
    clockid_t clock = (c->_flags & COND_F_MONOTONIC) ? CLOCK_MONOTONIC : CLOCK_REALTIME;
    int ret = 0;
    const struct timespec *deadline = abstime;
    uint32_t w;
    /* acquire: pairs with wake_node's release store. */
    while ((w = __atomic_load_n(&n.word, __ATOMIC_ACQUIRE)) == W_WAITING) {
        if (lt_futex_wait(&n.word, W_WAITING, deadline, clock) != ETIMEDOUT)
            continue;
        lt_lll_lock(&c->_lock);
        int listed = unlink_node(c, &n);
        lt_lll_unlock(&c->_lock);
        if (listed) {
            ret = ETIMEDOUT;
            break;
        }
        deadline = NULL; /* a waker owns the node: its word changes soon */
    }
    lt_mutex_cond_reacquire(m, depth);
    if (ret == 0 && w == W_WOKEN_CHAIN && n.next)
        wake_node(n.next, W_WOKEN_CHAIN);
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
    struct cond_node *n = *HEAD(c);
    if (n) {
        __atomic_store_n(HEAD(c), n->next, __ATOMIC_RELAXED);
        if (!n->next)
            *TAIL(c) = NULL;
    }
    lt_lll_unlock(&c->_lock);
    if (n)
        wake_node(n, W_WOKEN);
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
    __atomic_store_n(HEAD(c), NULL, __ATOMIC_RELAXED);
    *TAIL(c) = NULL;
    lt_lll_unlock(&c->_lock);
    if (first)
        wake_node(first, W_WOKEN_CHAIN);
    return 0;
}
