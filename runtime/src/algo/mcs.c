/*
 * mcs - the MCS queue lock (Mellor-Crummey & Scott).
 *
 * Waiters form a linked queue of nodes; each spins on its own node, so a hand-over touches
 * one waiter's cache line.  The lock holds the queue's tail, and the holder's node (POSIX
 * unlock passes no node, so the lock remembers it).  Nodes come from the thread's pool
 * (thread.h): one per lock held or awaited.
 *
 *   lock:   node.next = NULL, node.state = WAITING
 *           pred = XCHG(tail, node)              (acq_rel: we publish our node, and take over
 *           pred == NULL: owner                   the queue from the previous tail)
 *           else: pred.next = node; spin until node.state == GRANTED
 *   unlock: succ = node.next
 *           succ == NULL: CAS(tail, node -> NULL) succeeds: free.   (release)
 *                         fails: a waiter is between its XCHG and its link: wait for it.
 *           succ.state = GRANTED                 (release: the hand-over)
 *
 *   node.state:  WAITING --(predecessor's unlock)--> GRANTED
 *
 * Strict FIFO.  Waiting: LT_WAIT_SPIN, the classic MCS-S: the successor is always the eldest
 * waiter, the one most likely to have been descheduled, so with more threads than CPUs the
 * hand-over waits for the scheduler again and again and throughput collapses (mcstp skips
 * such waiters; mcscr keeps the queue short).  Not for oversubscribed use.
 * State: 16 bytes (tail, holder's node) + a 128-byte node per thread per lock held or awaited.
 */
#include "../algo.h"
#include "../qnode.h"

struct mcs_lock {
    struct lt_qnode *tail;
    struct lt_qnode *owner; /* the holder's node (atomic, relaxed: holder-only in correct use) */
};
LT_STATE_FITS(struct mcs_lock);

static int mcs_init(lt_mutex_t *m)
{
    (void)m;
    return 0;
}

static int mcs_destroy(lt_mutex_t *m)
{
    return __atomic_load_n(&LT_STATE(m, struct mcs_lock)->tail, __ATOMIC_RELAXED) ? EBUSY : 0;
}

static inline struct lt_qnode *fresh_node(void)
{
    struct lt_qnode *n = lt_qnode_get();
    __atomic_store_n(&n->next, NULL, __ATOMIC_RELAXED);
    __atomic_store_n(&n->state, LT_WAITING, __ATOMIC_RELAXED);
    return n;
}

static __attribute__((noinline)) int mcs_wait(lt_mutex_t *m, struct lt_qnode *n,
                                              struct lt_qnode *pred)
{
    lt_contended(m);
    __atomic_store_n(&pred->next, n, __ATOMIC_RELEASE);
    lt_wait_word(&n->state, LT_WAIT_SPIN, lt_site(m));
    __atomic_store_n(&LT_STATE(m, struct mcs_lock)->owner, n, __ATOMIC_RELAXED);
    return lt_acquired(m);
}

static int mcs_lock(lt_mutex_t *m)
{
    struct mcs_lock *l = LT_STATE(m, struct mcs_lock);
    struct lt_qnode *n = fresh_node();
    /* acq_rel: release publishes our node's initialisation to the thread that links to it;
     * acquire takes over the queue (and, if it was empty, the last holder's writes). */
    struct lt_qnode *pred = __atomic_exchange_n(&l->tail, n, __ATOMIC_ACQ_REL);
    if (__builtin_expect(pred != NULL, 0))
        return mcs_wait(m, n, pred);
    __atomic_store_n(&l->owner, n, __ATOMIC_RELAXED);
    return lt_acquired(m);
}

static int mcs_trylock(lt_mutex_t *m)
{
    struct mcs_lock *l = LT_STATE(m, struct mcs_lock);
    struct lt_qnode *n = fresh_node(), *none = NULL;
    /* acq_rel as in mcs_lock. */
    if (!__atomic_compare_exchange_n(&l->tail, &none, n, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
        lt_qnode_put(n);
        return EBUSY;
    }
    __atomic_store_n(&l->owner, n, __ATOMIC_RELAXED);
    return lt_acquired(m);
}

static int mcs_timedlock(lt_mutex_t *m, const struct timespec *abstime)
{
    return lt_timedlock_handoff(m, mcs_trylock, abstime);
}

static __attribute__((noinline)) int mcs_handover(lt_mutex_t *m, struct lt_qnode *n,
                                                  struct lt_qnode *succ)
{
    if (!succ) { /* a waiter is between its XCHG and its link */
        struct lt_spin s = LT_SPIN_INIT;
        while (!(succ = __atomic_load_n(&n->next, __ATOMIC_ACQUIRE)))
            lt_spin_poll(&s, LT_WAIT_SPIN);
    }
    lt_stat(lt_site(m), LT_STAT_HANDOVERS);
    /* release: the hand-over.  The waiter never parks (LT_WAIT_SPIN): a store suffices. */
    __atomic_store_n(&succ->state, LT_GRANTED, __ATOMIC_RELEASE);
    lt_qnode_put(n);
    return 0;
}

static int mcs_unlock(lt_mutex_t *m)
{
    struct mcs_lock *l = LT_STATE(m, struct mcs_lock);
    struct lt_qnode *n = __atomic_load_n(&l->owner, __ATOMIC_RELAXED), *expected = n;
    /* acquire: pairs with the successor's release link; we then write its node. */
    struct lt_qnode *succ = __atomic_load_n(&n->next, __ATOMIC_ACQUIRE);
    /* release: the next XCHG on tail (acquire) sees our critical section. */
    if (__builtin_expect(!succ, 1) &&
        __atomic_compare_exchange_n(&l->tail, &expected, NULL, 0, __ATOMIC_RELEASE,
                                    __ATOMIC_RELAXED)) {
        lt_qnode_put(n);
        return 0;
    }
    return mcs_handover(m, n, succ);
}

/* fork (mutex.c): the nodes after the holder's belong to threads the child lost.  The
 * holder's node (l->owner) is intact: it stays the whole queue, or the queue goes. */
static void mcs_fork_child(lt_mutex_t *m, int held)
{
    struct mcs_lock *l = LT_STATE(m, struct mcs_lock);
    struct lt_qnode *n = held ? __atomic_load_n(&l->owner, __ATOMIC_RELAXED) : NULL;
    if (n)
        __atomic_store_n(&n->next, NULL, __ATOMIC_RELAXED);
    __atomic_store_n(&l->tail, n, __ATOMIC_RELAXED);
}

const struct lt_algo lt_algo_mcs = {
    .name = "mcs",
    .caps = LT_CAP_SUPPORTS_COND | LT_CAP_FIFO,
    .counts = LT_STAT_BIT(LT_STAT_PARKED) | LT_STAT_BIT(LT_STAT_HANDOVERS),
    .size = sizeof(struct mcs_lock),
    .wait = "spin on own node, then yield",
    .init = mcs_init,
    .destroy = mcs_destroy,
    .lock = mcs_lock,
    .trylock = mcs_trylock,
    .timedlock = mcs_timedlock,
    .unlock = mcs_unlock,
    .fork_child = mcs_fork_child,
};
