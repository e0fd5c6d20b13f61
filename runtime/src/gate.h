/*
 * gate.h - concurrency restriction for the strict FIFO queue locks: an admission gate in front
 * of the queue (part of the waiting policy, LT_WAIT_PARK only).
 *
 * Why.  A strict FIFO lock hands over to the eldest waiter.  Once threads outnumber CPUs that
 * waiter has parked, or been descheduled, and every hand-over waits for a wake-up: 1-5% of
 * glibc's throughput at 4 to 32 threads on 2 CPUs (bench/results/locks-quiet-2cpu-2026-11-26).
 * The Malthusian paper's remedy applies to any lock: keep a small *active* set circulating
 * the lock - as many waiters as there are CPUs besides the holder's, each spinning on its own
 * CPU - and let the surplus wait *passively* (asleep) outside the queue, rotating them in for
 * long-term fairness.  mcscr does that inside its MCS queue; this gate does it in front of
 * any queue, so mcs, clh, ticket and twa keep their own code.
 *
 *   admitted   waiters let through the gate that do not hold the lock yet (in the queue, or
 *              about to enter it);  limit = CPUs - 1 (at least 1; lt_wait_cpus())
 *   passive    waiters asleep at the gate, or about to be
 *   seq        the passive waiters' futex word: an idle release bumps it and wakes one
 *   waking     1 while such a wake-up is in flight
 *
 * A lock's slow path (its fast attempt failed: the lock was held):
 *
 *   enter:  FETCH_ADD(admitted) < limit:  through; queue as before
 *           else: passive (gate.c) until one of
 *             - the lock went idle with nobody admitted (the releaser wakes one passive
 *               waiter: the Malthusian "never idle while someone waits"),
 *             - admitted < limit when it looks again,
 *             - its patience ran out (long-term fairness): it goes through over the limit.
 *               The next thread to arrive finds the gate full and goes passive in its place,
 *               so the active set rotates without growing.  Patience: 1 ms per passive
 *               waiter at the time it sleeps (1 to 100 ms; LOCKTUNE_GATE_TURN_NS sets the
 *               1 ms), so the set rotates about once a millisecond whatever the thread
 *               count, and nobody waits more than ~100 ms at the gate.
 *   acquired (after waiting in the queue): admitted -= 1
 *   release that left the lock free (no successor): passive > 0 and no wake-up in flight
 *            (waking 0 -> 1): seq += 1, FUTEX_WAKE 1 (it woke nobody: waking = 0)
 *   a passive waiter that finds seq moved (woken, or about to sleep when it moved):
 *            waking = 0, before it looks at the lock again
 *
 * One wake-up in flight at a time: oversubscribed, the lock goes idle for an instant at many
 * releases (an active thread is about to take it again), and a FUTEX_WAKE at each, for a
 * waiter that then finds the gate full and sleeps again, took 60% of the CPU time at 16
 * threads on 2 CPUs (0.7x glibc; 1.4x with one in flight).
 *
 * Nothing depends on the gate for mutual exclusion or progress: the queue does the locking,
 * and a passive waiter leaves on its own when its patience runs out, so a lost wake-up, a
 * miscount, or the counts of threads lost in a fork only delay a waiter (a forked child's
 * lock is repaired by the algorithm's fork_child, which calls lt_gate_fork_child).
 *
 * The one race that matters for throughput - a waiter going passive just as the last holder
 * leaves, so that the lock sits idle until a patience runs out - is closed by a Dekker pair:
 *
 *   passive waiter:  passive += 1 (seq_cst RMW); is the lock free? (seq_cst loads)
 *   idle releaser:   its releasing store or CAS (seq_cst); passive > 0? (seq_cst load)
 *
 * Either the waiter sees the lock free (and does not sleep), or the releaser sees it passive
 * and wakes one; a wake between the waiter's sample of seq and its futex_wait changes seq, so
 * the kernel does not put it to sleep.  The releaser's seq_cst costs nothing on x86-64, where
 * the release is a locked instruction already (mcs, clh: CAS; ticket, twa under LT_WAIT_PARK:
 * a seq_cst store of the grant that wait.h's slots need anyway).
 *
 * admitted is a hint (relaxed): a transient over-count sends a thread to the passive side
 * while a slot is free, and the idle releaser or its patience brings it back.
 *
 * Uncontended, the gate costs nothing: the algorithm's fast attempt takes a free lock before
 * any of this, and a release reads `passive` on the lock's own line (a load that finds 0).
 * With no more threads than CPUs, admitted never reaches the limit and nobody goes passive.
 */
#ifndef LT_GATE_H
#define LT_GATE_H

#include <stdbool.h>
#include <stdint.h>

#include "locktune.h"
#include "wait.h"

struct lt_gate {
    uint32_t admitted; /* atomic, relaxed (a hint) */
    uint32_t passive;  /* atomic: the Dekker pair above */
    uint32_t seq;      /* atomic futex word */
    uint32_t waking;   /* atomic: 1 while a wake-up is in flight */
};

/* Patience per passive waiter: 1 ms (LOCKTUNE_GATE_TURN_NS), for at most 100 waiters. */
#define LT_GATE_TURN_NS      1000000u
#define LT_GATE_PATIENCE_MAX 100u
void lt_gate_set_turn(uint64_t ns); /* config.c: LOCKTUNE_GATE_TURN_NS */
/* How long an idle release waits for someone to take the lock before it wakes a passive
 * waiter. */
#define LT_GATE_LINGER_NS 1000u

/* The most admitted waiters: CPUs - 1, at least 1 (cached). */
unsigned lt_gate_limit(void);

/* Passive waiting (gate.c): called with the caller counted in admitted over the limit; returns
 * once it is counted in admitted again (through, or over the limit once its patience ran
 * out).  lock_free(m) tells whether the lock is free, with seq_cst loads. */
void lt_gate_wait(struct lt_gate *g, lt_mutex_t *m, bool (*lock_free)(lt_mutex_t *m));
/* The lock went idle with passive waiters (gate.c): unless someone takes it within
 * LT_GATE_LINGER_NS, wake one of them. */
void lt_gate_wake(struct lt_gate *g, lt_mutex_t *m, bool (*lock_free)(lt_mutex_t *m));

/* The slow path of a lock under policy p, before it queues.  Under LT_WAIT_PARK, returns once
 * the caller is admitted (it must then call lt_gate_acquired when it holds the lock); under the
 * other policies the gate is open and nothing is counted. */
static inline void lt_gate_enter(struct lt_gate *g, lt_mutex_t *m, enum lt_wait_policy p,
                                 bool (*lock_free)(lt_mutex_t *m))
{
    if (p != LT_WAIT_PARK)
        return;
    if (__builtin_expect(__atomic_fetch_add(&g->admitted, 1, __ATOMIC_RELAXED) < lt_gate_limit(),
                         1))
        return;
    lt_gate_wait(g, m, lock_free);
}

/* An admitted waiter now holds the lock. */
static inline void lt_gate_acquired(struct lt_gate *g, enum lt_wait_policy p)
{
    if (p == LT_WAIT_PARK)
        __atomic_fetch_sub(&g->admitted, 1, __ATOMIC_RELAXED);
}

/* Whether anyone waits passively: the releaser's half of the Dekker pair, read after its
 * seq_cst release. */
static inline bool lt_gate_passive(struct lt_gate *g)
{
    return __builtin_expect(__atomic_load_n(&g->passive, __ATOMIC_SEQ_CST) != 0, 0);
}

/* After a release that left the lock free (its releasing operation was seq_cst): wake a
 * passive waiter if there is one. */
static inline void lt_gate_idle(struct lt_gate *g, lt_mutex_t *m, bool (*lock_free)(lt_mutex_t *m))
{
    if (lt_gate_passive(g))
        lt_gate_wake(g, m, lock_free);
}

/* fork (the algorithm's fork_child): the counted waiters were threads the child lost. */
static inline void lt_gate_fork_child(struct lt_gate *g)
{
    __atomic_store_n(&g->waking, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&g->admitted, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&g->passive, 0, __ATOMIC_RELAXED);
}

#endif
