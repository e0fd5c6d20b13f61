/*
 * mcscr - MCS with concurrency restriction (Dice, "Malthusian Locks"): MCSCR-STP.
 *
 * When more threads want a lock than it can keep busy, the surplus gains nothing by
 * circulating: it only evicts the others' data from the caches and (on a small machine) takes
 * CPUs from the threads that do the work.  MCSCR keeps an active set of threads circulating
 * (the MCS queue) and moves the surplus to a passive set (PS), where they park; it takes them
 * back when the queue runs dry, and now and then admits the eldest for long-term fairness.
 * The lock operation is plain MCS; only unlock changes.  The PS is a doubly linked list
 * edited only by the lock holder, inside unlock, so the lock itself protects it.
 *
 * unlock, in order (n is the holder's node, succ = n.next):
 *   1. fairness: with probability 1/1000 (thread-local xorshift) and a non-empty PS, take the
 *      PS's eldest (tail), graft it right after n, grant it.  If n has no successor yet it
 *      becomes the new tail by CAS(tail, n -> e), else e.next = succ.
 *   2. cull: succ exists and has a successor of its own (so succ is not the tail, which
 *      arriving threads link to): move succ to the PS head, grant its successor.
 *   3. hand over: succ exists: grant it.
 *   4. reprovision: no successor, PS non-empty, and its head (the most recently culled) still
 *      spinning - or the lock is in drain mode (below): pop it, CAS(tail, n -> p), grant p.
 *      If an arrival raced in, p goes back and the arrival gets the lock.
 *   5. release: CAS(tail, n -> NULL); if an arrival raced in, wait for its link and grant it.
 *   Every PS edit happens before the grant, because the grantee may edit the PS at once.
 *
 * Parked passive waiters (our departure from the paper).  The paper reprovisions the PS head
 * whatever its state, which on a machine with fewer CPUs than threads means handing the lock,
 * again and again, to a thread that sleeps: the lock stays idle for a wake-up (2-50 us here)
 * each time the active set is briefly away, and throughput collapses.  Here a *parked* PS head
 * is not reprovisioned while the active set keeps the lock busy: the lock is released instead
 * and the next arrival takes it.  Work conservation comes back two ways:
 *   - a parked waiter sleeps at most PS_TIMEOUT (1 ms, doubling to 8 ms while nothing
 *     changes); if it then finds the lock free (tail NULL, so it cannot be in the queue), the
 *     active set has gone: it takes the lock with a fresh node, removes its old node from the
 *     PS as the holder, and puts the lock in drain mode;
 *   - in drain mode every unlock that finds no successor reprovisions the PS head, parked or
 *     not, so the passive set is admitted one after another; a hand-over to a queued
 *     successor (an active arrival) ends drain mode.
 * Long-term fairness is unchanged (the 1/1000 eldest grants).
 *
 *   node.state: WAITING --(spin budget)--> PARKED;  WAITING/PARKED --(grant: XCHG)--> GRANTED
 *   A culled node simply stays WAITING (then PARKED) until reprovisioned, granted, or it
 *   admits itself after a timeout.
 *
 * Short-term unfair by design (Gini ~0.08 in the paper), long-term fair.  Waiting:
 * LT_WAIT_PARK (spin for the budget, then futex): the paper's recommended form - the next
 * owner is usually a recent, still spinning arrival, so hand-overs rarely pay a wake-up, and
 * the passive set sleeps instead of taking CPUs.  Holds up under oversubscription.
 * State: 32 bytes + a 128-byte node per thread per lock held or awaited.
 */
#include <stdio.h>
#include <stdlib.h>

#include "../futex.h"
#include "../thread.h"
#include "mcs_core.h"

#define FAIRNESS_PERIOD 1000     /* the paper's: one eldest grant per ~1000 unlocks */
#define PS_TIMEOUT_MIN  1000000u /* a parked waiter checks for an idle lock after 1 ms, */
#define PS_TIMEOUT_MAX  8000000u /* then after 2, 4, 8 ms */

struct mcscr_lock {
    struct mcs_core q;                  /* the queue and the holder's node (mcs_core.h) */
    struct lt_qnode *ps_head, *ps_tail; /* passive set: head = latest culled, tail = eldest */
    uint32_t drain;                     /* admit the passive set even if it sleeps */
};
LT_STATE_FITS(struct mcscr_lock);

enum wait_result { GRANTED, IDLE_LOCK };

static int mcscr_init(lt_mutex_t *m)
{
    (void)m;
    return 0;
}

static int mcscr_destroy(lt_mutex_t *m)
{
    struct mcscr_lock *l = LT_STATE(m, struct mcscr_lock);
    /* Passive waiters may sleep on a free lock (see above): they wait for it too. */
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

/* Spin for the budget, then park; a park that times out with the lock idle returns
 * IDLE_LOCK (the caller may then admit itself). */
static enum wait_result mcscr_wait(struct mcscr_lock *l, struct lt_qnode *n, int site)
{
    struct lt_spin s = LT_SPIN_INIT;
    uint64_t timeout = PS_TIMEOUT_MIN;
    for (;;) {
        /* acquire: the grant carries the previous holder's critical section. */
        uint32_t v = __atomic_load_n(&n->state, __ATOMIC_ACQUIRE);
        if (v == LT_GRANTED)
            return GRANTED;
        if (v == LT_WAITING) {
            if (!lt_spin_poll(&s, LT_WAIT_PARK))
                continue;
            uint32_t e = LT_WAITING;
            /* relaxed: parking publishes nothing; the futex re-checks the word. */
            if (!__atomic_compare_exchange_n(&n->state, &e, LT_PARKED, 0, __ATOMIC_RELAXED,
                                             __ATOMIC_RELAXED))
                continue; /* granted meanwhile */
            lt_stat(site, LT_STAT_PARKED);
        }
        uint64_t now = lt_now_ns() + timeout;
        struct timespec deadline = {(time_t)(now / 1000000000u), (long)(now % 1000000000u)};
        if (lt_futex_wait(&n->state, LT_PARKED, &deadline, CLOCK_MONOTONIC) == ETIMEDOUT &&
            __atomic_load_n(&n->state, __ATOMIC_ACQUIRE) == LT_PARKED) {
            if (!mcs_core_busy(&l->q))
                return IDLE_LOCK;
            timeout = timeout < PS_TIMEOUT_MAX ? timeout * 2 : PS_TIMEOUT_MAX;
        }
    }
}

static __attribute__((noinline)) int mcscr_queue(lt_mutex_t *m, struct lt_qnode *n,
                                                 struct lt_qnode *pred)
{
    struct mcscr_lock *l = LT_STATE(m, struct mcscr_lock);
    int site = lt_site(m);
    lt_contended(m);
    mcs_link(pred, n);
    while (mcscr_wait(l, n, site) != GRANTED) {
        /* The lock is idle and we sleep in the passive set (a queued node implies a non-NULL
         * tail): the active set has gone.  Take the lock with a fresh node - our old one stays
         * linked in the PS, where nobody but a holder touches it. */
        struct lt_qnode *f = mcs_fresh_node();
        if (!mcs_try_enter(&l->q, f)) {
            lt_qnode_put(f);
            continue;
        }
        if (!ps_contains(l, n)) {
            fputs("locktune: mcscr: internal error: a sleeping waiter is in no queue\n", stderr);
            abort();
        }
        ps_unlink(l, n); /* we hold the lock: the PS is ours to edit */
        lt_qnode_put(n);
        n = f;
        l->drain = 1;
        lt_stat(site, LT_STAT_SELF_ADMITTED);
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
    /* A NULL tail: free (passive waiters may still sleep; the holder's unlock deals with
     * them). */
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
    lt_wake_word(&x->state, LT_GRANTED); /* release XCHG; FUTEX_WAKE if it parked */
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

    if (l->ps_tail && lt_rand() % FAIRNESS_PERIOD == 0) { /* 1. long-term fairness */
        struct lt_qnode *e = ps_pop_tail(l);
        lt_stat(site, LT_STAT_FAIR_GRANTS);
        if (!succ) {
            if (replace_tail(l, n, e)) {
                grant(site, e);
                goto out;
            }
            succ = mcs_await_link(n);
        }
        __atomic_store_n(&e->next, succ, __ATOMIC_RELAXED); /* published by the grant */
        grant(site, e);
        goto out;
    }
    if (succ) {
        struct lt_qnode *ss = __atomic_load_n(&succ->next, __ATOMIC_ACQUIRE);
        if (ss) { /* 2. cull: succ is surplus; it keeps waiting (and parks) in the PS */
            ps_push_head(l, succ);
            lt_stat(site, LT_STAT_CULLED);
            succ = ss;
        }
        l->drain = 0;      /* an active arrival: the active set is back */
        grant(site, succ); /* 3. */
        goto out;
    }
    /* 4. reprovision: a spinning PS head, or any in drain mode.  relaxed: a hint; a head that
     * parks meanwhile is woken by the grant's exchange. */
    if (l->ps_head &&
        (l->drain || __atomic_load_n(&l->ps_head->state, __ATOMIC_RELAXED) == LT_WAITING)) {
        struct lt_qnode *p = ps_pop_head(l);
        if (replace_tail(l, n, p)) {
            lt_stat(site, LT_STAT_REPROVISIONED);
            grant(site, p);
            goto out;
        }
        ps_push_head(l, p); /* an arrival raced in: it gets the lock */
    } else {
        /* 5. release (the next XCHG on tail sees our critical section and the PS) */
        if (mcs_leave_if_last(&l->q, n))
            goto out;
    }
    grant(site, mcs_await_link(n));
out:
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
    l->drain = 0;
}

const struct lt_algo lt_algo_mcscr = {
    .name = "mcscr",
    .caps = LT_CAP_SUPPORTS_COND | LT_CAP_BLOCKING | LT_CAP_OVERSUB_SAFE,
    .counts = LT_STAT_BIT(LT_STAT_PARKED) | LT_STAT_BIT(LT_STAT_HANDOVERS) |
              LT_STAT_BIT(LT_STAT_CULLED) | LT_STAT_BIT(LT_STAT_REPROVISIONED) |
              LT_STAT_BIT(LT_STAT_FAIR_GRANTS) | LT_STAT_BIT(LT_STAT_SELF_ADMITTED),
    .size = sizeof(struct mcscr_lock),
    .wait = "spin for the budget, then park (futex, timed for the passive set)",
    .init = mcscr_init,
    .destroy = mcscr_destroy,
    .lock = mcscr_lock,
    .trylock = mcscr_trylock,
    .timedlock = mcscr_timedlock,
    .unlock = mcscr_unlock,
    .fork_child = mcscr_fork_child,
};
