/*
 * mcstp - MCS with time-published preemption tolerance (after He, Scherer & Scott, "MCS-TP").
 *
 * MCS's weakness with more threads than CPUs is the hand-over to a waiter that is not
 * running: the lock then waits for the scheduler.  Here every waiter publishes, while it
 * spins, the time it was last running (node.stamp); the unlocker hands the lock to the first
 * waiter whose stamp is fresh and removes the stale ones it passes, which re-enqueue at the
 * tail when they next run.  The other weakness, a holder preempted inside its critical
 * section, is met as MCS-TP meets it: waiters spin while the lock keeps changing hands and
 * yield the CPU when it has not for STUCK_NS - the holder (or the waiter it was just handed
 * to) is then presumably off its CPU and needs one.  (MCS-TP publishes the holder's start
 * time; a generation count that every acquisition bumps gives waiters the same information
 * without a clock read on the uncontended path.)  A waiter that yielded on a timer would go
 * stale each time and be skipped, again and again: it only yields when yielding helps.
 *
 *   node.state: WAITING --(unlocker: fresh stamp)--> GRANTED
 *                  |
 *                  +-----(unlocker: stale stamp, and node.next already linked - or node is
 *                         the tail and CAS(tail, node -> NULL) succeeded)--> REMOVED
 *                         (the waiter re-initialises its node and enqueues again)
 *
 *   unlock: cand = node.next (or CAS(tail, node -> NULL): free)
 *           loop: cand fresh -> grant it, done
 *                 next = cand.next;  NULL: CAS(tail, cand -> NULL) succeeds -> remove cand,
 *                                          the lock is free; fails -> wait for the link
 *                 remove cand; cand = next
 *
 * Only the lock holder changes a waiter's state, and it removes a node only once nobody else
 * can still refer to it (its successor has linked, or it was the tail and left the queue), so
 * a removed waiter may reuse its node at once.  A running waiter publishes its stamp every 8
 * polls (well under 1 us); stale means not seen running for STALE_NS = 4 us.  (The MCS-TP
 * authors allow 10 us for a stamp to be seen on their machine; a longer threshold here let
 * the lock go to waiters preempted a moment earlier by the unlocking thread itself, which then
 * waited for its own CPU.)
 *
 * Not strictly FIFO (a preempted waiter loses its place).  Waiting: spin publishing stamps,
 * yield while the lock is stuck (never parks in the queue).  A timed waiter does not queue: a
 * release hands it the lock (mutex.c, "timedlock").
 *
 * In front of the queue, the admission gate (gate.h), as for mcs: at most CPUs - 1 waiters
 * queue, the surplus sleeps at the gate.  Skipping stale waiters alone left it at 0.1-0.2x
 * glibc with 4 to 64 threads on 2 CPUs, every spinning waiter taking CPU time from the holder
 * and from the waiter it would grant; gated, 0.7-0.9x (bench/results/gate-2cpu-2026-11-26).
 * With no more threads than CPUs the gate never closes, and the lock is MCS-TP.
 * State: 40 bytes (tail, holder's node, generation, the gate) + a 128-byte node per thread per
 * lock held or awaited.
 */
#include <sched.h>

#include "../gate.h"
#include "mcs_core.h"

enum { TP_GRANTED = LT_GRANTED, TP_REMOVED = LT_GRANTED + 1 };

#define STALE_NS 4000 /* a waiter not seen running for this long is presumed preempted */
#define STUCK_NS 8000 /* a lock that has not changed hands for this long: holder preempted */

struct mcstp_lock {
    struct mcs_core q; /* the queue and the holder's node (mcs_core.h) */
    uint32_t gen;      /* bumped by every acquisition (atomic, relaxed) */
    struct lt_gate gate;
};
LT_STATE_FITS(struct mcstp_lock);

static int mcstp_init(lt_mutex_t *m)
{
    (void)m;
    return 0;
}

static int mcstp_destroy(lt_mutex_t *m)
{
    return mcs_core_busy(&LT_STATE(m, struct mcstp_lock)->q) ? EBUSY : 0;
}

static inline void publish(struct lt_qnode *n, uint64_t now)
{
    /* relaxed: a timestamp; the unlocker tolerates a slightly old one. */
    __atomic_store_n(&n->stamp, now, __ATOMIC_RELAXED);
}

/* Record an acquisition: the lock changed hands (waiters watch this; see above). */
static inline int mcstp_acquired(lt_mutex_t *m, struct mcstp_lock *l, struct lt_qnode *n)
{
    mcs_set_owner(&l->q, n);
    /* relaxed: a progress hint; we own the line already (we just swapped the tail). */
    __atomic_store_n(&l->gen, __atomic_load_n(&l->gen, __ATOMIC_RELAXED) + 1, __ATOMIC_RELAXED);
    return lt_acquired(m);
}

/* Spin until the holder grants or removes us, publishing our stamp; yield only while the
 * lock does not change hands. */
static uint32_t mcstp_wait(struct mcstp_lock *l, struct lt_qnode *n)
{
    uint64_t changed = lt_now_ns();
    uint32_t gen = __atomic_load_n(&l->gen, __ATOMIC_RELAXED);
    for (unsigned polls = 1;; polls++) {
        /* acquire: the grant carries the previous holder's critical section. */
        uint32_t st = __atomic_load_n(&n->state, __ATOMIC_ACQUIRE);
        if (st != LT_WAITING)
            return st;
        lt_cpu_relax();
        if ((polls & 7) == 0) {
            uint64_t now = lt_now_ns();
            publish(n, now);
            uint32_t g = __atomic_load_n(&l->gen, __ATOMIC_RELAXED);
            if (g != gen) {
                gen = g;
                changed = now;
            } else if (now - changed >= STUCK_NS) {
                sched_yield(); /* the holder seems descheduled: give it a CPU */
                changed = lt_now_ns();
                publish(n, changed);
            }
        }
    }
}

/* The gate's test (gate.h): seq_cst, the passive waiter's half of its Dekker pair. */
static bool mcstp_free(lt_mutex_t *m)
{
    return __atomic_load_n(&LT_STATE(m, struct mcstp_lock)->q.tail, __ATOMIC_SEQ_CST) == NULL;
}

static __attribute__((noinline)) int mcstp_queue(lt_mutex_t *m, struct lt_qnode *n)
{
    struct mcstp_lock *l = LT_STATE(m, struct mcstp_lock);
    lt_contended(m);
    /* The gate under the park policy, whatever the waiting in the queue (top). */
    lt_gate_enter(&l->gate, m, LT_WAIT_PARK, mcstp_free);
    struct lt_qnode *pred = mcs_enqueue(&l->q, n);
    while (pred) {
        /* The unlocker reads our stamp only after it sees our link (release below). */
        publish(n, lt_now_ns());
        mcs_link(pred, n);
        if (mcstp_wait(l, n) == TP_GRANTED)
            break;
        /* REMOVED: we were passed over while descheduled; the holder is done with our node */
        __atomic_store_n(&n->next, NULL, __ATOMIC_RELAXED);
        __atomic_store_n(&n->state, LT_WAITING, __ATOMIC_RELAXED);
        pred = mcs_enqueue(&l->q, n);
    }
    lt_gate_acquired(&l->gate, LT_WAIT_PARK);
    return mcstp_acquired(m, l, n);
}

static int mcstp_lock(lt_mutex_t *m)
{
    struct mcstp_lock *l = LT_STATE(m, struct mcstp_lock);
    struct lt_qnode *n = mcs_fresh_node();
    /* A free lock is taken by CAS rather than XCHG, so that a waiter passes the gate before
     * it queues. */
    if (__builtin_expect(!mcs_try_enter(&l->q, n), 0))
        return mcstp_queue(m, n);
    return mcstp_acquired(m, l, n);
}

static int mcstp_trylock(lt_mutex_t *m)
{
    struct mcstp_lock *l = LT_STATE(m, struct mcstp_lock);
    struct lt_qnode *n = mcs_fresh_node();
    if (!mcs_try_enter(&l->q, n)) {
        lt_qnode_put(n);
        return EBUSY;
    }
    return mcstp_acquired(m, l, n);
}

static int mcstp_timedlock(lt_mutex_t *m, const struct timespec *abstime)
{
    return lt_timedlock_handoff(m, mcstp_trylock, abstime);
}

static __attribute__((noinline)) int mcstp_handover(lt_mutex_t *m, struct lt_qnode *n,
                                                    struct lt_qnode *cand)
{
    struct mcstp_lock *l = LT_STATE(m, struct mcstp_lock);
    if (!cand) /* a waiter is between its XCHG and its link */
        cand = mcs_await_link(n);
    lt_qnode_put(n); /* linked behind: nobody refers to our node any more */
    int site = lt_site(m);
    for (;;) {
        uint64_t now = lt_now_ns();
        int64_t age = (int64_t)(now - __atomic_load_n(&cand->stamp, __ATOMIC_RELAXED));
        if (age < STALE_NS) {
            lt_stat(site, LT_STAT_HANDOVERS);
            /* release: the hand-over. */
            __atomic_store_n(&cand->state, TP_GRANTED, __ATOMIC_RELEASE);
            return 0;
        }
        struct lt_qnode *next = __atomic_load_n(&cand->next, __ATOMIC_ACQUIRE);
        if (!next) {
            /* cand is the tail: leave the queue empty, the lock free. */
            if (mcs_leave_if_last(&l->q, cand)) {
                lt_stat(site, LT_STAT_SKIPPED);
                __atomic_store_n(&cand->state, TP_REMOVED, __ATOMIC_RELEASE);
                lt_gate_idle(&l->gate, m, mcstp_free); /* the lock is free */
                return 0;
            }
            next = mcs_await_link(cand);
        }
        lt_stat(site, LT_STAT_SKIPPED);
        /* release: orders our reads of cand before its owner reuses the node. */
        __atomic_store_n(&cand->state, TP_REMOVED, __ATOMIC_RELEASE);
        cand = next;
    }
}

static int mcstp_unlock(lt_mutex_t *m)
{
    struct mcstp_lock *l = LT_STATE(m, struct mcstp_lock);
    struct lt_qnode *n = mcs_owner(&l->q);
    struct lt_qnode *cand = mcs_next(n);
    if (__builtin_expect(!cand, 1) && mcs_leave_if_last(&l->q, n)) {
        lt_qnode_put(n);
        lt_gate_idle(&l->gate, m, mcstp_free); /* the lock is idle: bring in a passive waiter */
        return 0;
    }
    return mcstp_handover(m, n, cand);
}

/* fork (mutex.c): as mcs - the holder's node stays the whole queue, or the queue goes. */
static void mcstp_fork_child(lt_mutex_t *m, int held)
{
    mcs_core_fork_child(&LT_STATE(m, struct mcstp_lock)->q, held);
    lt_gate_fork_child(&LT_STATE(m, struct mcstp_lock)->gate);
}

const struct lt_algo lt_algo_mcstp = {
    .name = "mcstp",
    .caps = LT_CAP_SUPPORTS_COND | LT_CAP_OVERSUB_SAFE,
    .counts = LT_STAT_BIT(LT_STAT_PARKED) | LT_STAT_BIT(LT_STAT_HANDOVERS) |
              LT_STAT_BIT(LT_STAT_SKIPPED) | LT_STAT_BIT(LT_STAT_GATED) |
              LT_STAT_BIT(LT_STAT_GATE_TURNS),
    .size = sizeof(struct mcstp_lock),
    .wait = "spin publishing a timestamp, then yield; stale waiters are skipped",
    .init = mcstp_init,
    .destroy = mcstp_destroy,
    .lock = mcstp_lock,
    .trylock = mcstp_trylock,
    .timedlock = mcstp_timedlock,
    .unlock = mcstp_unlock,
    .fork_child = mcstp_fork_child,
};
