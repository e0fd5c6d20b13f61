/*
 * dsmsynch - DSM-Synch (Fatourou & Kallimanis; the RCL paper §2.3.3).
 *
 * CC-Synch's combining queue, but a thread always waits on a node of its own (one it
 * allocated, from its pool): the queue is MCS-shaped, and the price is a few more atomics.
 *
 *   execute: n = our node {fn, ctx, next NULL, WAITING, not done}
 *            pred = XCHG(tail, n)                       (acq_rel)
 *            pred: pred->next = n (release); wait while n is WAITING; done: return its result
 *            else (no pred, or GO without done) we are the combiner, at n:
 *   combine: run the node's request; find its successor - none: CAS(tail, node -> NULL) ends
 *            the queue (idle), or wait for the successor's link; mark the node done and GO
 *            (not ours: we keep our own node); move on.  At a HOLD request, or past
 *            lt_combine_max sections at the first node whose owner is awake (not PARKED; at
 *            lt_combine_hard whatever its state: combining.h), hand on: GO without done -
 *            that node's owner combines.
 *
 *   node.state: WAITING --combiner ran it: done, then GO (release)--> GO (return the result)
 *                       --hand on (release)----------------------> GO, not done (combine)
 *               WAITING --waiter: budget spent (LT_WAIT_PARK)--> PARKED --GO by exchange and
 *                       FUTEX_WAKE (lt_combining_grant)--> GO, as above (handed on: past
 *                       lt_combine_hard only)
 *
 * The successor of a node is always read before the node's owner is released, so a released
 * node is never touched again and goes straight back to its owner's pool.  An idle queue is a
 * NULL tail, so a zeroed lock is valid and an idle lock owns no memory.
 *
 * lock() queues a HOLD node and holds the lock once handed on there (or at once on an idle
 * queue); unlock() combines from that node as a combiner would after its own request.  A
 * condition wait's release and a step aside (combining.h) hand on at once, after the node in
 * progress.
 *
 * FIFO.  The combiner also waits for a successor between its XCHG and its link; a preempted
 * successor stalls the queue until it runs (the paper §2.3.4).  The role itself goes only to
 * an awake owner before the hard bound: once the queue is asleep, handing the role to a parked
 * owner stopped the lock for a wake-up every lt_combine_max sections (issue 12); a parked
 * owner is served instead, and woken with its result (ccsynch.c says why not after the
 * session).  Waiting: the lock's policy (wait.h), spin-then-park by default, so that waiters
 * give their CPUs to the combiner; `dsmsynch:spin` spins, then yields, and collapses
 * oversubscribed (no waiter parks, so the role goes on at lt_combine_max).  Every GO goes through
 * lt_combining_grant, which wakes a parked waiter (the combiner's own wait for a link stays a
 * spin: the linker is between two instructions).
 * lock() waits behind the admission gate (gate.h) under LT_WAIT_PARK: its HOLD request is a
 * strict FIFO hand-over, and without the gate lock()-only use collapsed as the FIFO locks did
 * (0.048 M acquisitions/s at 16 threads on 2 CPUs, glibc 9.5 M).  State: 32 bytes.
 */
#include "../algo.h"
#include "../gate.h"
#include "../qnode.h"
#include "combining.h"

#define DSM_HOLD ((lt_cs_fn)(uintptr_t)1)

enum { DSM_WAITING = LT_WAITING, DSM_GO = LT_GRANTED };

struct dsm_lock {
    struct lt_qnode *tail; /* atomic: NULL when idle */
    struct lt_qnode *hold; /* a lock() holder's node */
    struct lt_gate gate;   /* lock()'s waiters (gate.h) */
};
LT_STATE_FITS(struct dsm_lock);

static int dsm_unlock(lt_mutex_t *m);

static int dsm_init(lt_mutex_t *m)
{
    (void)m;
    lt_combining_setup();
    return 0;
}

static int dsm_destroy(lt_mutex_t *m)
{
    return __atomic_load_n(&LT_STATE(m, struct dsm_lock)->tail, __ATOMIC_RELAXED) ? EBUSY : 0;
}

static inline struct lt_qnode *fresh_node(lt_cs_fn fn, void *ctx)
{
    struct lt_qnode *n = lt_qnode_get();
    n->fn = fn;
    n->ctx = ctx;
    n->done = 0;
    __atomic_store_n(&n->next, NULL, __ATOMIC_RELAXED);
    __atomic_store_n(&n->state, DSM_WAITING, __ATOMIC_RELAXED);
    return n;
}

/* The gate's test (gate.h): seq_cst, the passive waiter's half of its Dekker pair. */
static bool dsm_free(lt_mutex_t *m)
{
    return __atomic_load_n(&LT_STATE(m, struct dsm_lock)->tail, __ATOMIC_SEQ_CST) == NULL;
}

/* t's successor: NULL when t was the tail and the queue is now empty (CAS), else its linked
 * successor (waiting for the link when a thread is between its XCHG and its link). */
static struct lt_qnode *successor(lt_mutex_t *m, struct lt_qnode *t)
{
    /* acquire: the successor's node fields, written before its release link. */
    struct lt_qnode *next = __atomic_load_n(&t->next, __ATOMIC_ACQUIRE);
    if (next)
        return next;
    struct lt_qnode *expected = t;
    /* release: the next thread to find the queue empty sees every section run so far; seq_cst:
     * then the gate's passive count is read (gate.h's Dekker pair; the same instruction on
     * x86-64). */
    if (__atomic_compare_exchange_n(&LT_STATE(m, struct dsm_lock)->tail, &expected, NULL, 0,
                                    __ATOMIC_SEQ_CST, __ATOMIC_RELAXED)) {
        lt_gate_idle(&LT_STATE(m, struct dsm_lock)->gate, m, dsm_free); /* the lock is idle */
        return NULL;
    }
    struct lt_spin s = LT_SPIN_INIT;
    while (!(next = __atomic_load_n(&t->next, __ATOMIC_ACQUIRE)))
        lt_combining_poll(&s);
    return next;
}

/* Hand the role on after t (t's request is run, or in progress): to its successor, or to
 * nobody when the queue ends at t. */
static void hand_on_after(lt_mutex_t *m, struct lt_qnode *t)
{
    struct lt_qnode *next = successor(m, t);
    if (!next)
        return;
    lt_stat(lt_site(m), LT_STAT_HANDOVERS);
    /* release: the new combiner sees every section run so far. */
    lt_combining_grant(m, &next->state, DSM_GO);
}

/* Combine from t, which is `own` (our node: its request first, none if HOLD) or a node whose
 * request is not run yet.  Ends the session by handing on, or with an empty queue; `own` is
 * the caller's to put back (its result is in it). */
static void combine_from(lt_mutex_t *m, struct lt_serving *frame, struct lt_qnode *t,
                         struct lt_qnode *own)
{
    unsigned ran = 0;
    for (;;) {
        if (t != own &&
            (t->fn == DSM_HOLD || (ran >= lt_combine_max &&
                                   (ran >= lt_combine_hard || lt_combining_awake(&t->state))))) {
            lt_stat(lt_site(m), LT_STAT_HANDOVERS);
            lt_combining_grant(m, &t->state, DSM_GO); /* t's owner combines */
            break;
        }
        if (t->fn != DSM_HOLD) {
            frame->pos = t;
            t->ctx = t->fn(t->ctx);
            ran++;
            lt_stat(lt_site(m), LT_STAT_ACQUIRED);
            if (t != own)
                lt_stat(lt_site(m), LT_STAT_DELEGATED);
            if (frame->stepped) { /* handed on after t; we hold m by lock() */
                if (t != own) {
                    t->done = 1;
                    lt_combining_grant(m, &t->state, DSM_GO);
                }
                lt_serving_pop(frame);
                lt_combining_unlock_held(m, dsm_unlock);
                return;
            }
        }
        struct lt_qnode *next = successor(m, t);
        if (t != own) {
            t->done = 1;
            /* release: the owner sees the section's writes and its result. */
            lt_combining_grant(m, &t->state, DSM_GO);
        }
        if (!next)
            break;
        t = next;
    }
    lt_serving_pop(frame);
}

/* We are the combiner at our own node n: run our request, then the queue. */
static void *session(lt_mutex_t *m, struct lt_qnode *n)
{
    struct lt_serving frame;
    lt_serving_push(&frame, m);
    lt_stat(lt_site(m), LT_STAT_SESSIONS);
    combine_from(m, &frame, n, n);
    void *r = n->ctx;
    lt_qnode_put(n);
    return r;
}

static __attribute__((noinline)) void *dsm_wait(lt_mutex_t *m, struct lt_qnode *n)
{
    lt_stat(lt_site(m), LT_STAT_CONTENDED);
    /* acquire (lt_wait_word): pairs with the combiner's release of GO. */
    lt_wait_word(&n->state, lt_wait_of(m), lt_site(m));
    if (n->done) {
        void *r = n->ctx;
        lt_qnode_put(n);
        return r;
    }
    return session(m, n);
}

static void *dsm_execute(lt_mutex_t *m, lt_cs_fn fn, void *ctx, unsigned flags)
{
    if (flags & (LT_EXEC_ON_CALLER | LT_EXEC_MAY_WAIT))
        return lt_execute_on_caller(m, fn, ctx);
    if (__builtin_expect(lt_serving_top != NULL, 0) && lt_serving_find(m))
        lt_combining_relock(m);
    struct dsm_lock *l = LT_STATE(m, struct dsm_lock);
    struct lt_qnode *n = fresh_node(fn, ctx);
    /* acq_rel: release publishes our node to the thread that links to it; acquire takes over
     * the queue (and, when it was empty, the last session's writes). */
    struct lt_qnode *pred = __atomic_exchange_n(&l->tail, n, __ATOMIC_ACQ_REL);
    if (!pred)
        return session(m, n);
    /* release: the combiner that follows the link sees our request. */
    __atomic_store_n(&pred->next, n, __ATOMIC_RELEASE);
    return dsm_wait(m, n);
}

static __attribute__((noinline)) int dsm_lock_slow(lt_mutex_t *m, struct lt_qnode *n)
{
    struct dsm_lock *l = LT_STATE(m, struct dsm_lock);
    enum lt_wait_policy p = lt_wait_of(m);
    lt_contended(m);
    /* A HOLD request is a strict FIFO hand-over, so lock() waits behind the gate (gate.h);
     * execute()'s requests, run by the combiner, do not. */
    lt_gate_enter(&l->gate, m, p, dsm_free);
    struct lt_qnode *pred = __atomic_exchange_n(&l->tail, n, __ATOMIC_ACQ_REL); /* as above */
    if (pred) {
        __atomic_store_n(&pred->next, n, __ATOMIC_RELEASE);
        lt_wait_word(&n->state, p, lt_site(m)); /* GO, not done: we hold it */
    }
    lt_gate_acquired(&l->gate, p);
    l->hold = n;
    return lt_acquired(m);
}

static int dsm_lock(lt_mutex_t *m)
{
    struct dsm_lock *l = LT_STATE(m, struct dsm_lock);
    struct lt_qnode *n = fresh_node(DSM_HOLD, NULL), *none = NULL;
    /* A free lock is taken by CAS (acq_rel, as the XCHG above), so that a waiter passes the
     * gate before it queues. */
    if (__builtin_expect(
            !__atomic_compare_exchange_n(&l->tail, &none, n, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED),
            0))
        return dsm_lock_slow(m, n);
    l->hold = n;
    return lt_acquired(m);
}

static int dsm_trylock(lt_mutex_t *m)
{
    struct dsm_lock *l = LT_STATE(m, struct dsm_lock);
    if (__atomic_load_n(&l->tail, __ATOMIC_RELAXED))
        return EBUSY;
    struct lt_qnode *n = fresh_node(DSM_HOLD, NULL), *none = NULL;
    /* acq_rel as in dsm_execute. */
    if (!__atomic_compare_exchange_n(&l->tail, &none, n, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
        lt_qnode_put(n);
        return EBUSY;
    }
    l->hold = n;
    return lt_acquired(m);
}

static int dsm_timedlock(lt_mutex_t *m, const struct timespec *abstime)
{
    return lt_timedlock_handoff(m, dsm_trylock, abstime);
}

static int dsm_unlock(lt_mutex_t *m)
{
    struct lt_serving *s = lt_stepping(m);
    if (__builtin_expect(s != NULL, 0)) { /* a combined section's condition wait */
        hand_on_after(m, s->pos);
        return 0;
    }
    struct dsm_lock *l = LT_STATE(m, struct dsm_lock);
    struct lt_qnode *h = l->hold;
    l->hold = NULL;
    if (lt_quiet_release()) { /* a condition wait's release: run nothing */
        hand_on_after(m, h);
        lt_qnode_put(h);
        return 0;
    }
    struct lt_serving frame;
    lt_serving_push(&frame, m);
    combine_from(m, &frame, h, h);
    lt_qnode_put(h);
    return 0;
}

/* fork (mutex.c): the nodes after a lock() holder's (l->hold) are lost threads', and so is a
 * combining session; the holder's node stays the whole queue, or the queue goes. */
static void dsm_fork_child(lt_mutex_t *m, int held)
{
    struct dsm_lock *l = LT_STATE(m, struct dsm_lock);
    struct lt_qnode *h = held ? l->hold : NULL;
    if (h)
        __atomic_store_n(&h->next, NULL, __ATOMIC_RELAXED);
    l->hold = h;
    __atomic_store_n(&l->tail, h, __ATOMIC_RELAXED);
    lt_gate_fork_child(&l->gate);
}

const struct lt_algo lt_algo_dsmsynch = {
    .name = "dsmsynch",
    .caps = LT_CAP_BLOCKING | LT_CAP_DELEGATES | LT_CAP_SUPPORTS_COND | LT_CAP_FIFO,
    .counts = LT_STAT_BIT(LT_STAT_PARKED) | LT_STAT_BIT(LT_STAT_HANDOVERS) |
              LT_STAT_BIT(LT_STAT_DELEGATED) | LT_STAT_BIT(LT_STAT_SESSIONS) |
              LT_STAT_BIT(LT_STAT_STEPPED_ASIDE) | LT_STAT_BIT(LT_STAT_ON_CALLER) |
              LT_STAT_BIT(LT_STAT_GATED) | LT_STAT_BIT(LT_STAT_GATE_TURNS),
    .size = sizeof(struct dsm_lock),
    .wait = "on own node, by the lock's policy (default spin-then-park)",
    .waits = LT_WAIT_BIT(LT_WAIT_SPIN) | LT_WAIT_BIT(LT_WAIT_PARK) | LT_WAIT_BIT(LT_WAIT_YIELD),
    .wait_default = LT_WAIT_PARK,
    .init = dsm_init,
    .destroy = dsm_destroy,
    .lock = dsm_lock,
    .trylock = dsm_trylock,
    .timedlock = dsm_timedlock,
    .unlock = dsm_unlock,
    .fork_child = dsm_fork_child,
    .execute = dsm_execute,
    .cond_wait = lt_combining_cond_wait,
};
