/*
 * mcs_core.h - the MCS queue (Mellor-Crummey & Scott) that mcs, mcstp and mcscr share: the
 * three differ only in how a waiter waits and in what unlock does when others queue (mcstp
 * skips descheduled waiters, mcscr culls the surplus to a passive set).  Each embeds a
 * `struct mcs_core` at the start of its state and calls these inline functions, as the two
 * ShflLocks share shfl_core.h.
 *
 *   tail   the last queued node (NULL: free)       owner  the holder's node (POSIX unlock
 *                                                         passes no node, so the lock keeps it)
 *
 *   enter:    n = mcs_fresh_node(); pred = mcs_enqueue(c, n)  (pred NULL: ours; else link and
 *             wait for a grant on n->state)
 *   try:      mcs_try_enter(c, n): CAS(tail, NULL -> n)
 *   leave:    succ = n->next; none: mcs_leave_if_last(c, n) (CAS(tail, n -> NULL));
 *             that failed: a waiter is between its XCHG and its link: mcs_await_link(n)
 *
 * Memory order, once for all three: the XCHG and the CASes that take the queue are acq_rel -
 * release publishes our node's initialisation to whoever links to it, acquire takes over the
 * queue (and, when it was empty, the last holder's writes); leaving is a release CAS (seq_cst:
 * mcs's admission gate reads its passive count next; the next
 * XCHG, acquire, sees the critical section); a successor's link is a release store that the
 * holder reads with acquire before writing its node.
 */
#ifndef LT_MCS_CORE_H
#define LT_MCS_CORE_H

#include "../algo.h"
#include "../qnode.h"

struct mcs_core {
    struct lt_qnode *tail;
    struct lt_qnode *owner; /* atomic, relaxed: holder-only in correct use */
};

/* A node from the thread's pool, ready to queue. */
static inline struct lt_qnode *mcs_fresh_node(void)
{
    struct lt_qnode *n = lt_qnode_get();
    __atomic_store_n(&n->next, NULL, __ATOMIC_RELAXED);
    __atomic_store_n(&n->state, LT_WAITING, __ATOMIC_RELAXED);
    return n;
}

/* Queue n; its predecessor, or NULL when the lock was free and is now ours. */
static inline struct lt_qnode *mcs_enqueue(struct mcs_core *c, struct lt_qnode *n)
{
    return __atomic_exchange_n(&c->tail, n, __ATOMIC_ACQ_REL);
}

/* Take the lock with n if it is free. */
static inline bool mcs_try_enter(struct mcs_core *c, struct lt_qnode *n)
{
    struct lt_qnode *none = NULL;
    return __atomic_compare_exchange_n(&c->tail, &none, n, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
}

/* Link n behind pred (after mcs_enqueue returned pred). */
static inline void mcs_link(struct lt_qnode *pred, struct lt_qnode *n)
{
    __atomic_store_n(&pred->next, n, __ATOMIC_RELEASE);
}

static inline void mcs_set_owner(struct mcs_core *c, struct lt_qnode *n)
{
    __atomic_store_n(&c->owner, n, __ATOMIC_RELAXED);
}

static inline struct lt_qnode *mcs_owner(struct mcs_core *c)
{
    return __atomic_load_n(&c->owner, __ATOMIC_RELAXED);
}

/* n's successor if it has linked itself, else NULL. */
static inline struct lt_qnode *mcs_next(struct lt_qnode *n)
{
    return __atomic_load_n(&n->next, __ATOMIC_ACQUIRE);
}

/* The holder's node n is the last: free the lock.  False when a waiter arrived.  seq_cst
 * (release would do for the lock itself): mcs's gate reads its passive count next, the
 * releaser's half of gate.h's Dekker pair; on x86-64 the same locked instruction either way. */
static inline bool mcs_leave_if_last(struct mcs_core *c, struct lt_qnode *n)
{
    struct lt_qnode *expected = n;
    return __atomic_compare_exchange_n(&c->tail, &expected, NULL, 0, __ATOMIC_SEQ_CST,
                                       __ATOMIC_RELAXED);
}

/* Wait for the waiter between its XCHG and its link to link itself behind n. */
static inline struct lt_qnode *mcs_await_link(struct lt_qnode *n)
{
    struct lt_qnode *next;
    struct lt_spin s = LT_SPIN_INIT;
    while (!(next = mcs_next(n)))
        lt_spin_poll(&s, LT_WAIT_SPIN);
    return next;
}

static inline int mcs_core_busy(struct mcs_core *c)
{
    return __atomic_load_n(&c->tail, __ATOMIC_RELAXED) != NULL;
}

/* fork (mutex.c): the nodes after the holder's belong to threads the child lost.  The holder's
 * node (owner) is intact: it stays the whole queue, or the queue goes. */
static inline void mcs_core_fork_child(struct mcs_core *c, int held)
{
    struct lt_qnode *n = held ? mcs_owner(c) : NULL;
    if (n)
        __atomic_store_n(&n->next, NULL, __ATOMIC_RELAXED);
    __atomic_store_n(&c->tail, n, __ATOMIC_RELAXED);
}

#endif
