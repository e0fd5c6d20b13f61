/*
 * mcscr - MCS with concurrency restriction (Dice, "Malthusian Locks"): MCSCR-STP.
 *
 * When more threads want a lock than it can keep busy, the surplus gains nothing by
 * circulating: it only evicts the others' data from the caches and (on a small machine) takes
 * CPUs from the threads that do the work.  MCSCR keeps an active set of threads circulating
 * (the MCS queue) and moves the surplus to a passive set (PS), where they park; it takes them
 * back when the active set runs dry, and now and then admits the eldest for long-term
 * fairness.  The lock operation is plain MCS; only unlock changes.  The PS is a doubly linked
 * list edited only by the lock holder, inside unlock, so the lock itself protects it.
 *
 * unlock, in order (n is the holder's node, succ = n.next):
 *   1. fairness: with probability 1/FAIRNESS_PERIOD (thread-local xorshift) and a non-empty
 *      PS, take the PS's eldest (tail) out of the PS and tell it to queue again (state
 *      REQUEUE, woken once we are done) as an arrival that is never culled (node.done = 1):
 *      it gets the lock in FIFO order.  The paper grafts it right after n and grants it; a
 *      passive waiter sleeps, so that made the lock wait for its wake-up every 1000 unlocks.
 *      Then go on with 2-5.
 *   2. cull: succ exists, is not a fairness re-arrival, and has a successor of its own (so
 *      succ is not the tail, which arriving threads link to): move succ to the PS head and
 *      tell it at once (its state becomes PARKED): it parks instead of spinning out its
 *      budget.  Grant its successor.
 *      2b. succ is the tail and already parked, and the PS is non-empty (the lock has had more
 *      threads than it needs: surplus) and not draining: cull it too, and release the lock in
 *      the same CAS(tail, succ -> NULL).  A hand-over to a sleeping thread costs a wake-up,
 *      while the thread that just left takes the lock again at once; this is what keeps two
 *      threads from handing the lock back and forth through wake-ups when threads outnumber
 *      CPUs.  If an arrival raced in behind succ, grant it.  With an empty PS (no surplus
 *      seen: two threads, say) the parked successor is granted, as in MCS: culling it could
 *      leave the lock idle while its holder is between sections.
 *   3. hand over: succ exists: grant it (and leave drain mode: the active set is back).
 *   4. reprovision in drain mode (below): no successor and a non-empty PS: pop the PS head,
 *      CAS(tail, n -> p), grant p (if an arrival raced in, p goes back and the arrival gets
 *      the lock).
 *   5. release: CAS(tail, n -> NULL); if an arrival raced in, wait for its link and grant it.
 *   Before 2b, 3 and 5 (the lock goes to an arrival, or is released), a PS without a standby
 *   gets one: its head (not before 4, which grants the head at once).  Every PS edit happens
 *   before the grant or the release, because the next holder may edit the PS at once.
 *
 * Reprovisioning (work conservation).  The paper grants the PS head whenever an unlock finds
 * the queue empty.  With fewer CPUs than threads that hands the lock, again and again, to a
 * thread that sleeps while the active thread that just left is about to come back: the lock
 * waits for a wake-up (2-50 us here, far more on a loaded machine) and the active set grows
 * by one each time, so every later hand-over is to a parked thread, and throughput collapses
 * to one wake-up per acquisition.  An empty queue does not mean an empty active set (its
 * members may be between two sections).  So here one passive waiter, the *standby* (the
 * LOITER lock's, [MAL] Appendix A.1), sleeps with a timeout of STANDBY_NS and watches the
 * lock.  If it finds the lock free at two looks in a row, the lock has room for another thread
 * (the active set is too small to keep it busy, for instance after culls by 2b): it takes the
 * lock itself with a fresh node (as the holder it then removes its old node from the PS) and
 * so joins the active set.  If, besides, no release happened between the two looks
 * (l.releases, counted by every unlock while the PS is non-empty), the active set has gone:
 * the lock goes into drain mode, where every unlock that finds no successor grants the PS
 * head (step 4) until an active arrival is handed the lock.  The lock is thus never left idle
 * while passive waiters want it for more than about 2 x STANDBY_NS plus a wake-up: never
 * milliseconds.  The other passive waiters sleep without a timeout (only the standby's timer
 * runs, as the paper recommends).
 *
 * l.standby is 1 while the PS has a standby: set by the holder that makes the PS head the
 * standby (its state -> STANDBY, woken if parked), cleared by the holder that takes it out of
 * the PS (fairness grant, or drain) or by the standby itself once it holds the lock.  All
 * under the lock, so a plain holder-only field would do; it is atomic only because the
 * fork handler and destroy read it.
 *
 *   node.state (a chain node):  WAITING --(spin budget: CAS)--> PARKED
 *                               WAITING/PARKED --(grant: XCHG)--> GRANTED
 *   culled into the PS:         --(holder: store)--> PARKED (futex sleep, no timeout)
 *                               PARKED --(holder: XCHG, wake)--> STANDBY (timed sleep)
 *                               PARKED --(holder, step 4: grant)--> GRANTED
 *                               PARKED/STANDBY --(holder, step 1: XCHG, wake)--> REQUEUE,
 *                               then the thread queues the node again: WAITING
 *   A PS node leaves the PS only under the lock: popped by a holder (steps 1, 4), or unlinked
 *   by its own thread once it holds the lock with a fresh node (the standby's self-admission).
 *
 * Long-term fairness bound: each unlock with a non-empty PS re-admits the eldest passive
 * waiter with probability 1/FAIRNESS_PERIOD, so a waiter that is k-th from the PS's tail is
 * re-admitted after k * FAIRNESS_PERIOD such unlocks on average (the paper's Bernoulli trial:
 * the PS's tail leaves only this way or by a drain, and new culls go to the head); once
 * re-admitted it waits in the queue like any arrival and is not culled before its turn.
 *
 * Short-term unfair by design (Gini ~0.08 in the paper), long-term fair.  Waiting:
 * LT_WAIT_PARK (spin for the budget, then futex): the paper's recommended form - the next
 * owner is usually a recent, still spinning arrival, so hand-overs rarely pay a wake-up, and
 * the passive set sleeps instead of taking CPUs.  Holds up under oversubscription.
 * State: 40 bytes + a 128-byte node per thread per lock held or awaited.
 */
#include <stdio.h>
#include <stdlib.h>

#include "../futex.h"
#include "../thread.h"
#include "mcs_core.h"

#define FAIRNESS_PERIOD 1000    /* the paper's: one eldest grant per ~1000 unlocks */
#define STANDBY_NS      200000u /* the standby looks at the lock every 0.2 ms */
#define MCSCR_STANDBY   3       /* node.state: the passive waiter that watches the lock */
#define MCSCR_REQUEUE   4       /* node.state: out of the PS for fairness: queue again */

struct mcscr_lock {
    struct mcs_core q;                  /* the queue and the holder's node (mcs_core.h) */
    struct lt_qnode *ps_head, *ps_tail; /* passive set: head = latest culled, tail = eldest */
    uint32_t releases; /* atomic: unlocks while the PS was non-empty (holder writes) */
    uint8_t standby;   /* atomic: the PS has a standby (holder writes) */
    uint8_t drain;     /* grant the PS head when the queue is empty (holder only) */
};
LT_STATE_FITS(struct mcscr_lock);

static int mcscr_init(lt_mutex_t *m)
{
    (void)m;
    return 0;
}

static int mcscr_destroy(lt_mutex_t *m)
{
    struct mcscr_lock *l = LT_STATE(m, struct mcscr_lock);
    /* Passive waiters may sleep on a free lock for a moment (the standby's timeout). */
    return mcs_core_busy(&l->q) || l->ps_head ? EBUSY : 0;
}

/* ---- the passive set: a doubly linked list, edited by the lock holder only ---- */

static void ps_push_head(struct mcscr_lock *l, struct lt_qnode *x)
{
    x->ps_prev = NULL;
    x->ps_next = l->ps_head;
    if (l->ps_head)
        l->ps_head->ps_prev = x;
    else
        l->ps_tail = x;
    l->ps_head = x;
}

static void ps_unlink(struct mcscr_lock *l, struct lt_qnode *x)
{
    if (x->ps_prev)
        x->ps_prev->ps_next = x->ps_next;
    else
        l->ps_head = x->ps_next;
    if (x->ps_next)
        x->ps_next->ps_prev = x->ps_prev;
    else
        l->ps_tail = x->ps_prev;
}

static struct lt_qnode *ps_pop_head(struct mcscr_lock *l)
{
    struct lt_qnode *x = l->ps_head;
    ps_unlink(l, x);
    return x;
}

static struct lt_qnode *ps_pop_tail(struct mcscr_lock *l)
{
    struct lt_qnode *x = l->ps_tail;
    ps_unlink(l, x);
    return x;
}

static int ps_contains(const struct mcscr_lock *l, const struct lt_qnode *x)
{
    for (const struct lt_qnode *p = l->ps_head; p; p = p->ps_next)
        if (p == x)
            return 1;
    return 0;
}

/* ---- lock ---- */

/* Wait on n until it is granted (returns NULL), or a fairness admission takes it out of the
 * PS (returns n: queue it again), or, as the standby, n's thread finds the lock idle and takes
 * it with a fresh node (returns that node: the caller holds the lock; *gone: the active set
 * has gone). */
static struct lt_qnode *mcscr_wait(struct mcscr_lock *l, struct lt_qnode *n, int site, int *gone)
{
    struct lt_spin s = LT_SPIN_INIT;
    int counted = 0;   /* this wait's sleep was counted in the statistics */
    int idle_seen = 0; /* as the standby: found the lock free at the last look */
    uint32_t seen = 0; /* ... with this many releases */
    for (;;) {
        /* acquire: the grant carries the previous holder's critical section. */
        uint32_t v = __atomic_load_n(&n->state, __ATOMIC_ACQUIRE);
        if (v == LT_GRANTED)
            return NULL;
        if (v == MCSCR_REQUEUE)
            return n; /* out of the PS: queue again (the caller) */
        if (v == LT_WAITING) {
            if (!lt_spin_poll(&s, LT_WAIT_PARK))
                continue;
            uint32_t e = LT_WAITING;
            /* relaxed: parking publishes nothing; the futex re-checks the word. */
            if (!__atomic_compare_exchange_n(&n->state, &e, LT_PARKED, 0, __ATOMIC_RELAXED,
                                             __ATOMIC_RELAXED))
                continue; /* granted, or culled, meanwhile */
            v = LT_PARKED;
        }
        if (!counted)
            lt_stat(site, LT_STAT_PARKED);
        counted = 1;
        if (v == LT_PARKED) { /* our budget spent, or culled: sleep until woken */
            lt_futex_wait(&n->state, LT_PARKED, NULL, CLOCK_MONOTONIC);
            continue;
        }
        /* The standby: look at the lock every STANDBY_NS. */
        uint64_t t = lt_now_ns() + STANDBY_NS;
        struct timespec deadline = {(time_t)(t / 1000000000u), (long)(t % 1000000000u)};
        if (lt_futex_wait(&n->state, MCSCR_STANDBY, &deadline, CLOCK_MONOTONIC) != ETIMEDOUT)
            continue; /* woken (granted), or a spurious wake-up: look at the state again */
        /* relaxed: a hint; the CAS below decides, and we look twice STANDBY_NS apart. */
        uint32_t r = __atomic_load_n(&l->releases, __ATOMIC_RELAXED);
        if (mcs_core_busy(&l->q) || !idle_seen) {
            idle_seen = !mcs_core_busy(&l->q);
            seen = r;
            continue;
        }
        /* Free twice in a row: the lock has room for us.  No release between: the active set
         * has gone (drain the PS). */
        *gone = r == seen;
        seen = r;
        struct lt_qnode *f = mcs_fresh_node();
        if (mcs_try_enter(&l->q, f))
            return f;
        lt_qnode_put(f);
        idle_seen = 0;
    }
}

static __attribute__((noinline)) int mcscr_queue(lt_mutex_t *m, struct lt_qnode *n,
                                                 struct lt_qnode *pred)
{
    struct mcscr_lock *l = LT_STATE(m, struct mcscr_lock);
    int site = lt_site(m);
    lt_contended(m);
    /* relaxed: published by the link (release); holders read it before culling n. */
    __atomic_store_n(&n->done, 0, __ATOMIC_RELAXED);
    mcs_link(pred, n);
    for (;;) {
        int gone = 0;
        struct lt_qnode *f = mcscr_wait(l, n, site, &gone);
        if (!f)
            break; /* granted */
        if (f == n) {
            /* Admitted for fairness: queue again as an arrival that is never culled (done),
             * so the lock passes to us in FIFO order, with no wake-up while it is held. */
            __atomic_store_n(&n->next, NULL, __ATOMIC_RELAXED);
            __atomic_store_n(&n->state, LT_WAITING, __ATOMIC_RELAXED);
            __atomic_store_n(&n->done, 1, __ATOMIC_RELAXED);
            pred = mcs_enqueue(&l->q, n);
            if (!pred)
                break; /* the lock was free: ours */
            mcs_link(pred, n);
            continue;
        }
        /* We hold the lock with f.  n is in the PS, unless a holder took it out for fairness
         * (REQUEUE) after our last look at its state: then nobody refers to it any more.  A
         * node in the queue would imply a non-NULL tail, and the lock was free.  acquire (and
         * the CAS that took the lock): n's state is written by holders only, before their
         * release. */
        if (__atomic_load_n(&n->state, __ATOMIC_ACQUIRE) == MCSCR_REQUEUE) {
            lt_qnode_put(n);
            n = f;
            break;
        }
        if (!ps_contains(l, n)) {
            fputs("locktune: mcscr: internal error: a passive waiter is in no queue\n", stderr);
            abort();
        }
        ps_unlink(l, n);
        __atomic_store_n(&l->standby, 0, __ATOMIC_RELAXED); /* holder-only writes */
        if (gone)
            l->drain = 1;
        lt_qnode_put(n);
        n = f;
        lt_stat(site, LT_STAT_SELF_ADMITTED);
        lt_stat(site, LT_STAT_REPROVISIONED);
        break;
    }
    mcs_set_owner(&l->q, n);
    return lt_acquired(m);
}

static int mcscr_lock(lt_mutex_t *m)
{
    struct mcscr_lock *l = LT_STATE(m, struct mcscr_lock);
    struct lt_qnode *n = mcs_fresh_node();
    struct lt_qnode *pred = mcs_enqueue(&l->q, n);
    if (__builtin_expect(pred != NULL, 0))
        return mcscr_queue(m, n, pred);
    mcs_set_owner(&l->q, n);
    return lt_acquired(m);
}

static int mcscr_trylock(lt_mutex_t *m)
{
    struct mcscr_lock *l = LT_STATE(m, struct mcscr_lock);
    struct lt_qnode *n = mcs_fresh_node();
    /* A NULL tail: free (passive waiters may sleep; the standby watches). */
    if (!mcs_try_enter(&l->q, n)) {
        lt_qnode_put(n);
        return EBUSY;
    }
    mcs_set_owner(&l->q, n);
    return lt_acquired(m);
}

static int mcscr_timedlock(lt_mutex_t *m, const struct timespec *abstime)
{
    return lt_timedlock_handoff(m, mcscr_trylock, abstime);
}

/* ---- unlock ---- */

static void grant(int site, struct lt_qnode *x)
{
    lt_stat(site, LT_STAT_HANDOVERS);
    /* release: the new owner sees everything we wrote in our critical section.  A passive
     * waiter sleeps on PARKED or, the standby, on STANDBY: either needs the FUTEX_WAKE. */
    uint32_t old = __atomic_exchange_n(&x->state, LT_GRANTED, __ATOMIC_RELEASE);
    if (old == LT_PARKED || old == MCSCR_STANDBY)
        lt_wake_parked(&x->state);
}

/* x leaves the PS for the queue: if it was the standby, the PS has none now. */
static void leave_ps(struct mcscr_lock *l, struct lt_qnode *x)
{
    /* relaxed: only holders write x's state while it is in the PS (its thread only reads it),
     * and the grant that follows publishes both. */
    if (__atomic_load_n(&x->state, __ATOMIC_RELAXED) == MCSCR_STANDBY)
        __atomic_store_n(&l->standby, 0, __ATOMIC_RELAXED);
}

/* Make x the only queued node after n (x becomes tail) if nobody arrived; else false. */
static int replace_tail(struct mcscr_lock *l, struct lt_qnode *n, struct lt_qnode *x)
{
    struct lt_qnode *expected = n;
    __atomic_store_n(&x->next, NULL, __ATOMIC_RELAXED);
    /* acq_rel: release publishes x.next = NULL (and our section) to whoever links to x. */
    return __atomic_compare_exchange_n(&l->q.tail, &expected, x, 0, __ATOMIC_ACQ_REL,
                                       __ATOMIC_RELAXED);
}

static __attribute__((noinline)) int mcscr_unlock_slow(lt_mutex_t *m, struct lt_qnode *n,
                                                       struct lt_qnode *succ)
{
    struct mcscr_lock *l = LT_STATE(m, struct mcscr_lock);
    int site = lt_site(m);
    struct lt_qnode *woken = NULL; /* a passive waiter to wake once we are done */

    if (l->ps_tail && lt_rand() % FAIRNESS_PERIOD == 0) { /* 1. long-term fairness */
        struct lt_qnode *e = ps_pop_tail(l);
        leave_ps(l, e);
        lt_stat(site, LT_STAT_FAIR_GRANTS);
        /* relaxed: e's thread only re-queues its node, which nobody else touches now. */
        uint32_t old = __atomic_exchange_n(&e->state, MCSCR_REQUEUE, __ATOMIC_RELAXED);
        if (old == LT_PARKED || old == MCSCR_STANDBY)
            woken = e;
    }
    struct lt_qnode *ss = succ ? __atomic_load_n(&succ->next, __ATOMIC_ACQUIRE) : NULL;
    struct lt_qnode *dropped = NULL; /* step 2b: a parked tail we take out of the queue */
    /* relaxed: done is written by succ's thread before it linked itself (we read the link
     * with acquire). */
    if (succ && !__atomic_load_n(&succ->done, __ATOMIC_RELAXED)) {
        int parked = __atomic_load_n(&succ->state, __ATOMIC_RELAXED) == LT_PARKED;
        if (ss || (parked && l->ps_head && !l->drain)) { /* 2. cull */
            ps_push_head(l, succ);
            /* relaxed: its state is WAITING or PARKED (only holders grant, and we hold the
             * lock); its thread only reads it, and the next holder to write it is ordered
             * after us by the lock.  A spinning thread sees it at its next poll and parks. */
            __atomic_store_n(&succ->state, LT_PARKED, __ATOMIC_RELAXED);
            lt_stat(site, LT_STAT_CULLED);
            if (!ss)
                dropped = succ;
            succ = ss;
        }
    }
    /* Step 4 grants the PS head at once: no standby needed for that. */
    int reprovision = !succ && !dropped && l->drain && l->ps_head;
    if (!reprovision && l->ps_head && !__atomic_load_n(&l->standby, __ATOMIC_RELAXED)) {
        /* The PS's head becomes its standby (relaxed: holder-only, published by our grant or
         * release).  XCHG: a parked thread must be woken to start its timed sleep. */
        __atomic_store_n(&l->standby, 1, __ATOMIC_RELAXED);
        if (__atomic_exchange_n(&l->ps_head->state, MCSCR_STANDBY, __ATOMIC_RELAXED) == LT_PARKED)
            lt_wake_parked(&l->ps_head->state);
    }
    if (l->ps_head) /* relaxed: the standby's hint that the active set is still there */
        __atomic_store_n(&l->releases, l->releases + 1, __ATOMIC_RELAXED);
    if (dropped) {
        /* 2b. release and drop the parked tail in one CAS; release: as step 5. */
        struct lt_qnode *expected = dropped;
        if (__atomic_compare_exchange_n(&l->q.tail, &expected, NULL, 0, __ATOMIC_RELEASE,
                                        __ATOMIC_RELAXED))
            goto out;
        succ = mcs_await_link(dropped); /* an arrival behind it: it gets the lock */
    }
    if (succ) {
        l->drain = 0;      /* an active arrival: the active set is back */
        grant(site, succ); /* 3. */
        goto out;
    }
    if (reprovision) { /* 4. reprovision: the active set has gone */
        struct lt_qnode *p = ps_pop_head(l);
        int was_standby = __atomic_load_n(&p->state, __ATOMIC_RELAXED) == MCSCR_STANDBY;
        leave_ps(l, p);
        if (replace_tail(l, n, p)) {
            lt_stat(site, LT_STAT_REPROVISIONED);
            grant(site, p);
            goto out;
        }
        ps_push_head(l, p); /* an arrival raced in: it gets the lock */
        if (was_standby)
            __atomic_store_n(&l->standby, 1, __ATOMIC_RELAXED);
    } else if (mcs_leave_if_last(&l->q, n)) { /* 5. release */
        goto out;
    }
    grant(site, mcs_await_link(n));
out:
    if (woken) /* as lt_wake_word: on a node already gone, only a spurious wake-up */
        lt_wake_parked(&woken->state);
    lt_qnode_put(n);
    return 0;
}

static int mcscr_unlock(lt_mutex_t *m)
{
    struct mcscr_lock *l = LT_STATE(m, struct mcscr_lock);
    struct lt_qnode *n = mcs_owner(&l->q);
    struct lt_qnode *succ = mcs_next(n);
    /* Nobody queued and nobody passive: plain release (step 5). */
    if (__builtin_expect(!succ && !l->ps_head, 1) && mcs_leave_if_last(&l->q, n)) {
        lt_qnode_put(n);
        return 0;
    }
    return mcscr_unlock_slow(m, n, succ);
}

/* fork (mutex.c): as mcs, and the passive set goes too - its nodes are lost threads'. */
static void mcscr_fork_child(lt_mutex_t *m, int held)
{
    struct mcscr_lock *l = LT_STATE(m, struct mcscr_lock);
    mcs_core_fork_child(&l->q, held);
    l->ps_head = l->ps_tail = NULL;
    l->standby = 0;
    l->drain = 0;
}

const struct lt_algo lt_algo_mcscr = {
    .name = "mcscr",
    .caps = LT_CAP_SUPPORTS_COND | LT_CAP_BLOCKING | LT_CAP_OVERSUB_SAFE,
    .counts = LT_STAT_BIT(LT_STAT_PARKED) | LT_STAT_BIT(LT_STAT_HANDOVERS) |
              LT_STAT_BIT(LT_STAT_CULLED) | LT_STAT_BIT(LT_STAT_REPROVISIONED) |
              LT_STAT_BIT(LT_STAT_FAIR_GRANTS) | LT_STAT_BIT(LT_STAT_SELF_ADMITTED),
    .size = sizeof(struct mcscr_lock),
    .wait =
        "spin for the budget, then park (futex); culled waiters park at once, the standby polls",
    .init = mcscr_init,
    .destroy = mcscr_destroy,
    .lock = mcscr_lock,
    .trylock = mcscr_trylock,
    .timedlock = mcscr_timedlock,
    .unlock = mcscr_unlock,
    .fork_child = mcscr_fork_child,
};
