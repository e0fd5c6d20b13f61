/*
 * shfl_core.h - ShflLock (Kashyap, "Scaling Synchronization Primitives", ch. 5), shared by
 * shfl (non-blocking) and shfl-block (blocking): the two files instantiate these inline
 * functions with `blocking` false or true.
 *
 * A test-and-set word decoupled from an MCS-style queue of waiters:
 *
 *   locked: 0/1      no_steal: 1 while waiters queue (shfl), while an impatient head waits
 *                    (shfl-block)                                      tail: the queue's last node
 *
 *   lock: fast path  no_steal == 0, then CAS(locked, 0 -> 1)
 *         slow path  join the queue with a node on our stack; wait until we are its head
 *                    (READY); then spin on `locked` and take it with CAS(locked, 0 -> 1),
 *                    whatever no_steal says; finally make our successor the head (READY) -
 *                    the "MCS unlock" happens at the end of lock, so the holder keeps no node.
 *   unlock: locked = 0 (a release store).     trylock: the fast path.
 *   (The word and its two fast paths are in shfl_word.h, which mutex.c inlines too.)
 *
 * The dissertation packs LOCKED and NO_STEAL in one word (one CAS tests both) and unlocks with
 * a byte store; C11 has no mixed-size atomics, so here they are two words: a stealer that
 * read no_steal == 0 just before the first waiter set it may steal once more - a bypass, never
 * a breach of mutual exclusion, which the CAS on `locked` alone guarantees - and unlock stays a
 * plain store.
 *
 * Shuffling: a waiter (the shuffler; at first the queue head) walks the queue behind it while
 * it waits, off the critical path, and groups the waiters of its own NUMA node right behind
 * itself, in batches of at most MAX_SHUFFLES; the role passes to the last node it grouped.
 * It never moves its own successor's predecessor link, the tail (arrivals link to it), or a
 * node whose next is not linked yet.  On a one-node machine the grouping moves nothing.
 *
 * shfl (non-blocking): the first waiter sets no_steal, so with a queue the lock goes to the
 * queue head in order (no starvation); the last waiter to leave clears it.  Waiting:
 * LT_WAIT_SPIN.  The head hand-over is FIFO, so a descheduled head stalls the lock: it
 * collapses when threads outnumber CPUs - not for oversubscribed use.
 *
 * shfl-block: arriving threads may steal the lock, so a descheduled head does not stall it -
 * until the head has waited SH_PATIENCE_NS: it then sets no_steal (an impatient head, as
 * Linux's mutex hand-off bit) and the lock is its at the next release; it clears no_steal once
 * it holds the lock.  That bounds the bypass: a queue head waits at most SH_PATIENCE_NS, plus
 * the section in progress, plus the stealers that read no_steal before it was set; a waiter
 * behind it, that for each head before it (FIFO on one NUMA node; shuffling moves a waiter
 * back by at most MAX_SHUFFLES).  Without it, threads that release and re-take the lock at
 * once can pass a head that competes only when it runs.  Non-head waiters spin for the spin
 * budget, then park
 * (node.status WAITING -> PARKED by CAS, futex wait).  Wake-ups stay off the critical path:
 * the head wakes its successor (PARKED -> SPINNING, or WAITING -> SPINNING) before it spins
 * on the lock word, and the shuffler does the same for the next WAKE_AHEAD waiters it passes.
 * A SPINNING waiter never parks again.  The dissertation's shuffler wakes every node it
 * groups; on one NUMA node that is the whole queue and would keep every waiter spinning, so
 * here only the next WAKE_AHEAD are woken ahead of their turn.
 *
 *   node.status: WAITING --(budget, CAS)--> PARKED        (shfl-block)
 *                WAITING/PARKED --(shuffler or head: CAS; FUTEX_WAKE if PARKED)--> SPINNING
 *                any --(predecessor, at the end of its lock: XCHG)--> READY
 */
#ifndef LT_SHFL_CORE_H
#define LT_SHFL_CORE_H

#define _GNU_SOURCE
#include <sched.h>
#include <stdbool.h>

#include "../algo.h"
#include "../futex.h"
#include "shfl_word.h"

#define MAX_SHUFFLES   1024u
#define SH_WAKE_AHEAD  2u
#define SH_PATIENCE_NS 1000000u /* shfl-block: how long a head lets others steal */

enum { SH_WAITING = LT_WAITING, SH_PARKED = LT_PARKED, SH_READY = 2, SH_SPINNING = 3 };

struct shfl_node {
    struct shfl_node *next; /* atomic */
    uint32_t status;        /* atomic: SH_* */
    uint32_t batch;         /* atomic: position in its shuffle batch, 0 = not grouped */
    uint32_t is_shuffler;   /* atomic */
    int numa;               /* NUMA node at enqueue; written before the node is published */
} __attribute__((aligned(64)));

static inline int shfl_numa_node(void)
{
    unsigned cpu, node;
    return getcpu(&cpu, &node) == 0 ? (int)node : 0;
}

/* Wake a waiter ahead of its turn: it will not park (again). */
static inline void shfl_keep_spinning(struct shfl_node *q)
{
    /* relaxed: a hint; the hand-over itself is the release XCHG to READY.  Read first: a
     * waiter already spinning must not have its line stolen by a CAS that would fail. */
    uint32_t e = __atomic_load_n(&q->status, __ATOMIC_RELAXED);
    if (e != SH_WAITING && e != SH_PARKED)
        return;
    if (__atomic_compare_exchange_n(&q->status, &e, SH_SPINNING, 0, __ATOMIC_RELAXED,
                                    __ATOMIC_RELAXED)) {
        if (e == SH_PARKED)
            lt_futex_wake(&q->status, 1);
        return;
    }
    if (e == SH_PARKED && __atomic_compare_exchange_n(&q->status, &e, SH_SPINNING, 0,
                                                      __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        lt_futex_wake(&q->status, 1); /* it parked between our load and our CAS */
}

static inline void shfl_shuffle(struct shfl_lock *l, struct shfl_node *n, bool head, bool blocking)
{
    struct shfl_node *qlast = n, *qprev = n, *qcurr, *qnext;
    uint32_t batch = __atomic_load_n(&n->batch, __ATOMIC_RELAXED), woken = 0;
    if (batch == 0)
        __atomic_store_n(&n->batch, batch = 1, __ATOMIC_RELAXED);
    __atomic_store_n(&n->is_shuffler, 0, __ATOMIC_RELAXED);
    if (batch >= MAX_SHUFFLES)
        return; /* batch quota spent: no more favouring of this node's socket */
    for (;;) {
        /* acquire: the nodes we walk were published by their owners' release links. */
        qcurr = __atomic_load_n(&qprev->next, __ATOMIC_ACQUIRE);
        if (!qcurr || qcurr == __atomic_load_n(&l->tail, __ATOMIC_ACQUIRE))
            break; /* never touch the tail: arriving threads link to it */
        if (qcurr->numa == n->numa) {
            if (qprev->numa == n->numa) { /* already right behind the batch */
                __atomic_store_n(&qcurr->batch, ++batch, __ATOMIC_RELAXED);
                qlast = qprev = qcurr;
            } else { /* other nodes' waiters sit in between: move qcurr up behind qlast */
                qnext = __atomic_load_n(&qcurr->next, __ATOMIC_ACQUIRE);
                if (!qnext)
                    break; /* its link is being written: do not move it */
                __atomic_store_n(&qcurr->batch, ++batch, __ATOMIC_RELAXED);
                __atomic_store_n(&qprev->next, qnext, __ATOMIC_RELEASE);
                __atomic_store_n(&qcurr->next, __atomic_load_n(&qlast->next, __ATOMIC_RELAXED),
                                 __ATOMIC_RELEASE);
                __atomic_store_n(&qlast->next, qcurr, __ATOMIC_RELEASE);
                qlast = qcurr;
            }
            if (blocking && woken < SH_WAKE_AHEAD) {
                woken++;
                shfl_keep_spinning(qcurr);
            }
        } else {
            qprev = qcurr;
        }
        if (batch >= MAX_SHUFFLES)
            break;
        if (head ? !__atomic_load_n(&l->locked, __ATOMIC_RELAXED)
                 : __atomic_load_n(&n->status, __ATOMIC_RELAXED) == SH_READY)
            break; /* our own turn has come */
    }
    __atomic_store_n(&qlast->is_shuffler, 1, __ATOMIC_RELEASE);
}

/* Queue for the word and take it; the caller records the acquisition (lt_acquired). */
static __attribute__((noinline)) void shfl_wait(lt_mutex_t *m, bool blocking)
{
    struct shfl_lock *l = LT_STATE(m, struct shfl_lock);
    int site = lt_site(m);
    lt_contended(m);
    struct shfl_node n;
    __atomic_store_n(&n.next, NULL, __ATOMIC_RELAXED);
    __atomic_store_n(&n.status, SH_WAITING, __ATOMIC_RELAXED);
    __atomic_store_n(&n.batch, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&n.is_shuffler, 0, __ATOMIC_RELAXED);
    n.numa = shfl_numa_node();
    /* acq_rel: publish our node; take over the queue from the previous tail. */
    struct shfl_node *pred = __atomic_exchange_n(&l->tail, &n, __ATOMIC_ACQ_REL);
    if (pred) {
        __atomic_store_n(&pred->next, &n, __ATOMIC_RELEASE);
        struct lt_spin s = LT_SPIN_INIT;
        for (;;) {
            /* acquire: pairs with the predecessor's release XCHG to READY. */
            uint32_t st = __atomic_load_n(&n.status, __ATOMIC_ACQUIRE);
            if (st == SH_READY)
                break;
            if (__atomic_load_n(&n.is_shuffler, __ATOMIC_ACQUIRE))
                shfl_shuffle(l, &n, false, blocking);
            /* A waiter woken ahead of its turn (SPINNING) never parks again: it spins, and
             * yields once the budget is spent, like the non-blocking variant. */
            bool may_park = blocking && st == SH_WAITING;
            if (lt_spin_poll(&s, may_park ? LT_WAIT_PARK : LT_WAIT_SPIN) && may_park) {
                uint32_t e = SH_WAITING;
                if (__atomic_compare_exchange_n(&n.status, &e, SH_PARKED, 0, __ATOMIC_RELAXED,
                                                __ATOMIC_RELAXED))
                    lt_park(&n.status, SH_PARKED, site);
            }
        }
    } else if (!blocking) {
        /* First waiter: from now on the lock goes to the queue head (no starvation). */
        __atomic_store_n(&l->no_steal, 1, __ATOMIC_RELAXED);
    }

    /* We are the queue head.  Wake our successor ahead of its turn, then take the word. */
    struct lt_spin s = LT_SPIN_INIT;
    bool prewoken = false, impatient = false;
    uint64_t head_since = blocking ? lt_now_ns() : 0;
    for (unsigned polls = 0;; polls++) {
        if (__atomic_load_n(&n.batch, __ATOMIC_RELAXED) == 0 ||
            __atomic_load_n(&n.is_shuffler, __ATOMIC_ACQUIRE))
            shfl_shuffle(l, &n, true, blocking);
        if (blocking && !prewoken) {
            struct shfl_node *succ = __atomic_load_n(&n.next, __ATOMIC_ACQUIRE);
            if (succ) {
                prewoken = true;
                shfl_keep_spinning(succ);
            }
        }
        if (shfl_take(l)) /* no_steal is for the others */
            break;
        if (blocking && !impatient && (polls & 63) == 63 &&
            lt_now_ns() - head_since >= SH_PATIENCE_NS) {
            impatient = true; /* relaxed: a hint, as every read of it (the header) */
            __atomic_store_n(&l->no_steal, 1, __ATOMIC_RELAXED);
        }
        lt_spin_poll(&s, LT_WAIT_SPIN); /* the head never parks */
    }
    /* Ours now: the others may steal again (shfl_fast, in lock and trylock, reads no_steal).
     * relaxed: a hint; and the next head's own store of 1 cannot be undone by this one - it
     * comes after our release XCHG to READY below, which that head acquired. */
    if (impatient)
        __atomic_store_n(&l->no_steal, 0, __ATOMIC_RELAXED);

    /* Hand the head role on: the MCS unlock, done at the end of lock. */
    struct shfl_node *next = __atomic_load_n(&n.next, __ATOMIC_ACQUIRE);
    if (!next) {
        struct shfl_node *expected = &n;
        /* release: a later waiter that finds the queue empty must not see our stale node. */
        if (__atomic_compare_exchange_n(&l->tail, &expected, NULL, 0, __ATOMIC_RELEASE,
                                        __ATOMIC_RELAXED)) {
            if (!blocking) /* the last waiter leaves: stealing allowed again (a race with a
                              new first waiter only costs it some fairness) */
                __atomic_store_n(&l->no_steal, 0, __ATOMIC_RELAXED);
            return;
        }
        struct lt_spin s2 = LT_SPIN_INIT;
        while (!(next = __atomic_load_n(&n.next, __ATOMIC_ACQUIRE)))
            lt_spin_poll(&s2, LT_WAIT_SPIN);
    }
    /* release: our queue position (and the shuffle's writes) go to the new head.  The XCHG
     * tells us whether it sleeps.  After it, our stack node is never touched again. */
    if (__atomic_exchange_n(&next->status, SH_READY, __ATOMIC_RELEASE) == SH_PARKED)
        lt_futex_wake(&next->status, 1);
}

static inline int shfl_lock_slow(lt_mutex_t *m, bool blocking)
{
    shfl_wait(m, blocking);
    return lt_acquired(m);
}

static inline int shfl_trylock_any(lt_mutex_t *m)
{
    return shfl_fast(LT_STATE(m, struct shfl_lock)) ? lt_acquired(m) : EBUSY;
}

/* fork (mutex.c): every queued node is a lost thread's (on its stack); the holder keeps the
 * word, which is the whole lock. */
static inline void shfl_fork_child_any(lt_mutex_t *m, int held)
{
    struct shfl_lock *l = LT_STATE(m, struct shfl_lock);
    __atomic_store_n(&l->locked, held ? 1u : 0u, __ATOMIC_RELAXED);
    __atomic_store_n(&l->no_steal, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&l->tail, NULL, __ATOMIC_RELAXED);
}

static inline int shfl_destroy_any(lt_mutex_t *m)
{
    return __atomic_load_n(&LT_STATE(m, struct shfl_lock)->tail, __ATOMIC_RELAXED) ? EBUSY : 0;
}

#endif
