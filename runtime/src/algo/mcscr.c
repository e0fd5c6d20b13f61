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
 *   4. reprovision: no successor, PS non-empty: pop the PS head (the most recently culled,
 *      likeliest still spinning), CAS(tail, n -> p): grant p.  If an arrival raced in, p goes
 *      back and the arrival gets the lock.  (Work conserving: the lock is never left free
 *      while a passive waiter could run.)
 *   5. release: CAS(tail, n -> NULL); if an arrival raced in, wait for its link and grant it.
 *   Every PS edit happens before the grant, because the grantee may edit the PS at once.
 *
 *   node.state: WAITING --(spin budget)--> PARKED;  WAITING/PARKED --(grant: XCHG)--> GRANTED
 *   A culled node simply stays WAITING (then PARKED) until reprovisioned or granted.
 *
 * Short-term unfair by design (Gini ~0.08 in the paper), long-term fair (1/1000 eldest
 * grants).  Waiting: LT_WAIT_PARK (spin for the budget, then futex): the paper's recommended
 * form - the next owner is usually a recent, still spinning arrival, so hand-overs rarely pay
 * a wake-up, and the passive set sleeps instead of taking CPUs.  Holds up under
 * oversubscription.  State: 32 bytes + a 128-byte node per thread per lock held or awaited.
 */
#include "../algo.h"
#include "../qnode.h"
#include "../thread.h"

#define FAIRNESS_PERIOD 1000 /* the paper's: one eldest grant per ~1000 unlocks */

struct mcscr_lock {
    struct lt_qnode *tail;
    struct lt_qnode *owner;             /* the holder's node (atomic, relaxed) */
    struct lt_qnode *ps_head, *ps_tail; /* passive set: head = latest culled, tail = eldest */
};
LT_STATE_FITS(struct mcscr_lock);

static int mcscr_init(lt_mutex_t *m)
{
    (void)m;
    return 0;
}

static int mcscr_destroy(lt_mutex_t *m)
{
    return __atomic_load_n(&LT_STATE(m, struct mcscr_lock)->tail, __ATOMIC_RELAXED) ? EBUSY : 0;
}

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

static struct lt_qnode *ps_pop_head(struct mcscr_lock *l)
{
    struct lt_qnode *x = l->ps_head;
    l->ps_head = x->ps_next;
    if (l->ps_head)
        l->ps_head->ps_prev = NULL;
    else
        l->ps_tail = NULL;
    return x;
}

static struct lt_qnode *ps_pop_tail(struct mcscr_lock *l)
{
    struct lt_qnode *x = l->ps_tail;
    l->ps_tail = x->ps_prev;
    if (l->ps_tail)
        l->ps_tail->ps_next = NULL;
    else
        l->ps_head = NULL;
    return x;
}

static struct lt_qnode *fresh_node(void)
{
    struct lt_qnode *n = lt_qnode_get();
    __atomic_store_n(&n->next, NULL, __ATOMIC_RELAXED);
    __atomic_store_n(&n->state, LT_WAITING, __ATOMIC_RELAXED);
    return n;
}

static int mcscr_lock(lt_mutex_t *m)
{
    struct mcscr_lock *l = LT_STATE(m, struct mcscr_lock);
    struct lt_qnode *n = fresh_node();
    /* acq_rel: as in mcs (publish the node; take over the queue). */
    struct lt_qnode *pred = __atomic_exchange_n(&l->tail, n, __ATOMIC_ACQ_REL);
    if (pred) {
        lt_stat(lt_site(m), LT_STAT_CONTENDED);
        __atomic_store_n(&pred->next, n, __ATOMIC_RELEASE);
        lt_wait_word(&n->state, LT_WAIT_PARK, lt_site(m));
    }
    __atomic_store_n(&l->owner, n, __ATOMIC_RELAXED);
    return 0;
}

static int mcscr_trylock(lt_mutex_t *m)
{
    struct mcscr_lock *l = LT_STATE(m, struct mcscr_lock);
    struct lt_qnode *n = fresh_node(), *none = NULL;
    /* A NULL tail means free with an empty passive set (the set is never left waiting on a
     * free lock). */
    if (!__atomic_compare_exchange_n(&l->tail, &none, n, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
        lt_qnode_put(n);
        return EBUSY;
    }
    __atomic_store_n(&l->owner, n, __ATOMIC_RELAXED);
    return 0;
}

static int mcscr_timedlock(lt_mutex_t *m, const struct timespec *abstime)
{
    return lt_timedlock_poll(m, mcscr_trylock, abstime);
}

static void grant(int site, struct lt_qnode *x)
{
    lt_stat(site, LT_STAT_HANDOVERS);
    lt_wake_word(&x->state, LT_GRANTED); /* release XCHG; FUTEX_WAKE if it parked */
}

static struct lt_qnode *await_link(struct lt_qnode *n)
{
    struct lt_qnode *next;
    struct lt_spin s = LT_SPIN_INIT;
    /* acquire: pairs with the release link of the thread behind n. */
    while (!(next = __atomic_load_n(&n->next, __ATOMIC_ACQUIRE)))
        lt_spin_poll(&s, LT_WAIT_SPIN);
    return next;
}

/* Make x the only queued node after n (x becomes tail) if nobody arrived; else false. */
static int replace_tail(struct mcscr_lock *l, struct lt_qnode *n, struct lt_qnode *x)
{
    struct lt_qnode *expected = n;
    __atomic_store_n(&x->next, NULL, __ATOMIC_RELAXED);
    /* acq_rel: release publishes x.next = NULL (and our section) to whoever links to x. */
    return __atomic_compare_exchange_n(&l->tail, &expected, x, 0, __ATOMIC_ACQ_REL,
                                       __ATOMIC_RELAXED);
}

static int mcscr_unlock(lt_mutex_t *m)
{
    struct mcscr_lock *l = LT_STATE(m, struct mcscr_lock);
    int site = lt_site(m);
    struct lt_qnode *n = __atomic_load_n(&l->owner, __ATOMIC_RELAXED);
    struct lt_qnode *succ = __atomic_load_n(&n->next, __ATOMIC_ACQUIRE);

    if (l->ps_tail && lt_rand() % FAIRNESS_PERIOD == 0) { /* 1. long-term fairness */
        struct lt_qnode *e = ps_pop_tail(l);
        lt_stat(site, LT_STAT_FAIR_GRANTS);
        if (!succ) {
            if (replace_tail(l, n, e)) {
                grant(site, e);
                goto out;
            }
            succ = await_link(n);
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
        grant(site, succ); /* 3. */
        goto out;
    }
    if (l->ps_head) { /* 4. reprovision */
        struct lt_qnode *p = ps_pop_head(l);
        if (replace_tail(l, n, p)) {
            lt_stat(site, LT_STAT_REPROVISIONED);
            grant(site, p);
            goto out;
        }
        ps_push_head(l, p); /* an arrival raced in: it gets the lock */
    } else {
        struct lt_qnode *expected = n;
        /* 5. release: the next XCHG on tail (acquire) sees our critical section. */
        if (__atomic_compare_exchange_n(&l->tail, &expected, NULL, 0, __ATOMIC_RELEASE,
                                        __ATOMIC_RELAXED))
            goto out;
    }
    grant(site, await_link(n));
out:
    lt_qnode_put(n);
    return 0;
}

const struct lt_algo lt_algo_mcscr = {
    .name = "mcscr",
    .caps = LT_CAP_SUPPORTS_COND | LT_CAP_BLOCKING | LT_CAP_OVERSUB_SAFE,
    .counts = LT_STAT_BIT(LT_STAT_PARKED) | LT_STAT_BIT(LT_STAT_HANDOVERS) |
              LT_STAT_BIT(LT_STAT_CULLED) | LT_STAT_BIT(LT_STAT_REPROVISIONED) |
              LT_STAT_BIT(LT_STAT_FAIR_GRANTS),
    .size = sizeof(struct mcscr_lock),
    .wait = "spin for the budget, then park (futex)",
    .init = mcscr_init,
    .destroy = mcscr_destroy,
    .lock = mcscr_lock,
    .trylock = mcscr_trylock,
    .timedlock = mcscr_timedlock,
    .unlock = mcscr_unlock,
};
