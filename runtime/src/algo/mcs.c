/*
 * mcs - the MCS queue lock (Mellor-Crummey & Scott).
 *
 * Waiters form a linked queue of nodes; each spins on its own node, so a hand-over touches
 * one waiter's cache line.  The lock holds the queue's tail, and the holder's node (POSIX
 * unlock passes no node, so the lock remembers it).  Nodes come from the thread's pool
 * (thread.h): one per lock held or awaited.
 *
 *   lock:   node.next = NULL, node.state = WAITING
 *           CAS(tail, NULL -> node): owner.  Else, past the admission gate (gate.h, under
 *           LT_WAIT_PARK):
 *           pred = XCHG(tail, node)              (acq_rel: we publish our node, and take over
 *           pred == NULL: owner                   the queue from the previous tail)
 *           else: pred.next = node; spin until node.state == GRANTED
 *   unlock: succ = node.next
 *           succ == NULL: CAS(tail, node -> NULL) succeeds: free.   (release)
 *                         fails: a waiter is between its XCHG and its link: wait for it.
 *           succ.state = GRANTED                 (release: the hand-over)
 *
 *   node.state:  WAITING --(predecessor's unlock)--------------------------> GRANTED
 *                   |                                                         ^
 *                   +--(waiter: budget spent, CAS)--> PARKED --(unlock: XCHG, FUTEX_WAKE)--+
 *                   |                                   |                     |
 *                   +--(unlock two ahead: CAS)--> NEAR <+-(CAS, FUTEX_WAKE)   +-(unlock: XCHG)
 *
 *   Under LT_WAIT_PARK an unlock that hands over to succ first promotes the waiter after succ
 *   (wait.h, "waking ahead"): it is awake and spinning by the time succ hands over to it.
 *
 * Strict FIFO.  Waiting: the lock's policy (wait.h), spin-then-park by default (`mcs:park`):
 * the waiter waits on its node through lt_wait_word, and unlock grants with lt_wake_word,
 * which wakes it if it parked.  `mcs:spin` is the classic MCS-S: the successor is always the
 * eldest waiter, the one most likely to have been descheduled, so with more threads than CPUs
 * the hand-over waits for the scheduler again and again and throughput collapses; its unlock
 * grants with a plain release store (the waiter never parks).  Parked, a hand-over costs a
 * wake-up, but the holder is never kept off a CPU by spinners (mcstp skips descheduled
 * waiters; mcscr keeps the queue short).
 * Under LT_WAIT_PARK the admission gate (gate.h) keeps all but CPUs - 1 waiters asleep outside
 * the queue, so the hand-over goes to a running waiter; an unlock that frees the lock wakes a
 * passive waiter.
 * State: 32 bytes (tail, holder's node, the gate) + a 128-byte node per thread per lock held
 * or awaited.
 * The queue operations are mcs_core.h's, shared with mcstp and mcscr.
 */
#include "../gate.h"
#include "mcs_core.h"

struct mcs_lock {
    struct mcs_core q;
    struct lt_gate gate;
};
LT_STATE_FITS(struct mcs_lock);

static int mcs_init(lt_mutex_t *m)
{
    (void)m;
    return 0;
}

static int mcs_destroy(lt_mutex_t *m)
{
    return mcs_core_busy(&LT_STATE(m, struct mcs_lock)->q) ? EBUSY : 0;
}

/* The gate's test (gate.h): seq_cst, the passive waiter's half of its Dekker pair. */
static bool mcs_free(lt_mutex_t *m)
{
    return __atomic_load_n(&LT_STATE(m, struct mcs_lock)->q.tail, __ATOMIC_SEQ_CST) == NULL;
}

static __attribute__((noinline)) int mcs_lock_slow(lt_mutex_t *m, struct lt_qnode *n)
{
    struct mcs_lock *l = LT_STATE(m, struct mcs_lock);
    enum lt_wait_policy p = lt_wait_of(m);
    lt_contended(m);
    lt_gate_enter(&l->gate, m, p, mcs_free);
    struct lt_qnode *pred = mcs_enqueue(&l->q, n);
    if (pred) {
        mcs_link(pred, n);
        lt_wait_word(&n->state, p, lt_site(m));
    }
    lt_gate_acquired(&l->gate, p);
    mcs_set_owner(&l->q, n);
    return lt_acquired(m);
}

static int mcs_lock(lt_mutex_t *m)
{
    struct mcs_lock *l = LT_STATE(m, struct mcs_lock);
    struct lt_qnode *n = mcs_fresh_node();
    /* A free lock is taken by CAS rather than XCHG, so that a waiter passes the gate before
     * it queues. */
    if (__builtin_expect(!mcs_try_enter(&l->q, n), 0))
        return mcs_lock_slow(m, n);
    mcs_set_owner(&l->q, n);
    return lt_acquired(m);
}

static int mcs_trylock(lt_mutex_t *m)
{
    struct mcs_lock *l = LT_STATE(m, struct mcs_lock);
    struct lt_qnode *n = mcs_fresh_node();
    if (!mcs_try_enter(&l->q, n)) {
        lt_qnode_put(n);
        return EBUSY;
    }
    mcs_set_owner(&l->q, n);
    return lt_acquired(m);
}

static int mcs_timedlock(lt_mutex_t *m, const struct timespec *abstime)
{
    return lt_timedlock_handoff(m, mcs_trylock, abstime);
}

static __attribute__((noinline)) int mcs_handover(lt_mutex_t *m, struct lt_qnode *n,
                                                  struct lt_qnode *succ)
{
    if (!succ) /* a waiter is between its XCHG and its link */
        succ = mcs_await_link(n);
    lt_stat(lt_site(m), LT_STAT_HANDOVERS);
    /* release: the hand-over.  Under LT_WAIT_PARK the waiter may sleep: the exchange tells and
     * wakes it; under the others it never parks, and a store suffices. */
    if (lt_wait_of(m) == LT_WAIT_PARK) {
        /* Wake the waiter after succ ahead (wait.h, "waking ahead"), while we still hold the
         * lock: its node cannot go away before succ grants it, which succ cannot do yet. */
        struct lt_qnode *next = mcs_next(succ);
        if (next)
            lt_wait_promote(&next->state);
        lt_wake_word(&succ->state, LT_GRANTED);
    } else
        __atomic_store_n(&succ->state, LT_GRANTED, __ATOMIC_RELEASE);
    lt_qnode_put(n);
    return 0;
}

static int mcs_unlock(lt_mutex_t *m)
{
    struct mcs_lock *l = LT_STATE(m, struct mcs_lock);
    struct lt_qnode *n = mcs_owner(&l->q);
    struct lt_qnode *succ = mcs_next(n);
    if (__builtin_expect(!succ, 1) && mcs_leave_if_last(&l->q, n)) {
        lt_qnode_put(n);
        /* the lock is idle: bring in a passive waiter, if any */
        lt_gate_idle(&l->gate, m, mcs_free);
        return 0;
    }
    return mcs_handover(m, n, succ);
}

static void mcs_fork_child(lt_mutex_t *m, int held)
{
    mcs_core_fork_child(&LT_STATE(m, struct mcs_lock)->q, held);
    lt_gate_fork_child(&LT_STATE(m, struct mcs_lock)->gate);
}

const struct lt_algo lt_algo_mcs = {
    .name = "mcs",
    .caps = LT_CAP_SUPPORTS_COND | LT_CAP_FIFO | LT_CAP_BLOCKING,
    .counts = LT_STAT_BIT(LT_STAT_PARKED) | LT_STAT_BIT(LT_STAT_HANDOVERS) |
              LT_STAT_BIT(LT_STAT_GATED) | LT_STAT_BIT(LT_STAT_GATE_TURNS),
    .size = sizeof(struct mcs_lock),
    .wait = "on own node, by the lock's policy (default spin-then-park)",
    .waits = LT_WAIT_BIT(LT_WAIT_SPIN) | LT_WAIT_BIT(LT_WAIT_PARK) | LT_WAIT_BIT(LT_WAIT_YIELD),
    .wait_default = LT_WAIT_PARK,
    .init = mcs_init,
    .destroy = mcs_destroy,
    .lock = mcs_lock,
    .trylock = mcs_trylock,
    .timedlock = mcs_timedlock,
    .unlock = mcs_unlock,
    .fork_child = mcs_fork_child,
};
