/*
 * clh - the CLH queue lock (Craig; Landin & Hagersten).
 *
 * Like MCS, but implicit: a waiter spins on its *predecessor's* node, so nobody has to link
 * anything - the XCHG on the tail is the whole enqueue.  The node of the thread ahead becomes
 * free the moment we are admitted, and we keep it (nodes migrate between threads' pools; the
 * total stays constant).  Unlike textbook CLH there is no dummy node: an empty queue is a NULL
 * tail (zero-initialised locks work), and an unlock with nobody behind resets the tail to NULL,
 * so an idle lock holds no node.
 *
 *   node.state: HELD while its thread waits or holds, FREE once it unlocks; PARKED while the
 *               successor sleeps on it (wait.h's values: HELD is LT_WAITING, FREE a grant)
 *   lock:   node.state = HELD; CAS(tail, NULL -> node): owner.  Else, past the admission
 *           gate (gate.h, under LT_WAIT_PARK): pred = XCHG(tail, node)       (acq_rel)
 *           pred == NULL: owner.  Else wait until pred.state == FREE (acquire; lt_wait_word,
 *           which may move it HELD -> PARKED and sleep); pred is ours now.
 *   unlock: CAS(tail, node -> NULL) succeeds: free, the node is ours again.   (release)
 *           fails: node.state = FREE (release: the hand-over; under LT_WAIT_PARK by
 *           lt_wake_word, which wakes the successor if it parked); the successor keeps the node.
 *
 *   node.state:  HELD --(unlock)--> FREE;   HELD --(successor: CAS)--> PARKED --(unlock: XCHG,
 *                FUTEX_WAKE)--> FREE
 *
 * Strict FIFO.  Waiting: the lock's policy (wait.h), spin-then-park by default; `clh:spin`
 * spins and then yields, and as for MCS hand-overs to descheduled waiters make it collapse
 * when threads outnumber CPUs.  The FUTEX_WAKE after the exchange may reach a node the
 * successor has already taken back into its pool: a spurious wake-up of whoever waits there
 * next, which re-checks its word (futex.h).
 * Under LT_WAIT_PARK the admission gate (gate.h) keeps all but CPUs - 1 waiters asleep outside
 * the queue; an unlock that frees the lock wakes a passive waiter.
 * State: 32 bytes (tail, holder's node, the gate) + a 128-byte node per thread per lock held
 * or awaited.
 */
#include "../algo.h"
#include "../gate.h"
#include "../qnode.h"

enum { CLH_HELD = LT_WAITING, CLH_FREE = LT_GRANTED };

struct clh_lock {
    struct lt_qnode *tail;
    struct lt_qnode *owner; /* the holder's node (atomic, relaxed) */
    struct lt_gate gate;
};
LT_STATE_FITS(struct clh_lock);

static int clh_init(lt_mutex_t *m)
{
    (void)m;
    return 0;
}

static int clh_destroy(lt_mutex_t *m)
{
    return __atomic_load_n(&LT_STATE(m, struct clh_lock)->tail, __ATOMIC_RELAXED) ? EBUSY : 0;
}

/* The gate's test (gate.h): seq_cst, the passive waiter's half of its Dekker pair. */
static bool clh_free(lt_mutex_t *m)
{
    return __atomic_load_n(&LT_STATE(m, struct clh_lock)->tail, __ATOMIC_SEQ_CST) == NULL;
}

static __attribute__((noinline)) int clh_lock_slow(lt_mutex_t *m, struct lt_qnode *n)
{
    struct clh_lock *l = LT_STATE(m, struct clh_lock);
    enum lt_wait_policy p = lt_wait_of(m);
    lt_contended(m);
    lt_gate_enter(&l->gate, m, p, clh_free);
    /* acq_rel: release publishes state = HELD to our successor before it can read it;
     * acquire takes over the queue from the previous tail. */
    struct lt_qnode *pred = __atomic_exchange_n(&l->tail, n, __ATOMIC_ACQ_REL);
    if (pred) {
        /* acquire (lt_wait_word): pairs with the predecessor's release of FREE (its section). */
        lt_wait_word(&pred->state, p, lt_site(m));
        lt_qnode_put(pred); /* nobody else refers to it any more */
    }
    lt_gate_acquired(&l->gate, p);
    __atomic_store_n(&l->owner, n, __ATOMIC_RELAXED);
    return lt_acquired(m);
}

static int clh_lock(lt_mutex_t *m)
{
    struct clh_lock *l = LT_STATE(m, struct clh_lock);
    struct lt_qnode *n = lt_qnode_get(), *none = NULL;
    __atomic_store_n(&n->state, CLH_HELD, __ATOMIC_RELAXED);
    /* A free lock is taken by CAS rather than XCHG, so that a waiter passes the gate before
     * it queues.  acq_rel: as the XCHG below. */
    if (__builtin_expect(
            !__atomic_compare_exchange_n(&l->tail, &none, n, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED),
            0))
        return clh_lock_slow(m, n);
    __atomic_store_n(&l->owner, n, __ATOMIC_RELAXED);
    return lt_acquired(m);
}

static int clh_trylock(lt_mutex_t *m)
{
    struct clh_lock *l = LT_STATE(m, struct clh_lock);
    struct lt_qnode *n = lt_qnode_get(), *none = NULL;
    __atomic_store_n(&n->state, CLH_HELD, __ATOMIC_RELAXED);
    if (!__atomic_compare_exchange_n(&l->tail, &none, n, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
        lt_qnode_put(n);
        return EBUSY;
    }
    __atomic_store_n(&l->owner, n, __ATOMIC_RELAXED);
    return lt_acquired(m);
}

static int clh_timedlock(lt_mutex_t *m, const struct timespec *abstime)
{
    return lt_timedlock_handoff(m, clh_trylock, abstime);
}

static int clh_unlock(lt_mutex_t *m)
{
    struct clh_lock *l = LT_STATE(m, struct clh_lock);
    struct lt_qnode *n = __atomic_load_n(&l->owner, __ATOMIC_RELAXED), *expected = n;
    /* release: the next XCHG on tail (acquire) sees our critical section; seq_cst: then the
     * gate's passive count is read, the releaser's half of gate.h's Dekker pair (on x86-64 the
     * same locked instruction). */
    if (__atomic_compare_exchange_n(&l->tail, &expected, NULL, 0, __ATOMIC_SEQ_CST,
                                    __ATOMIC_RELAXED)) {
        lt_qnode_put(n);
        /* the lock is idle: bring in a passive waiter, if any */
        lt_gate_idle(&l->gate, m, clh_free);
        return 0;
    }
    lt_stat(lt_site(m), LT_STAT_HANDOVERS);
    /* release: the hand-over.  From here the node belongs to our successor.  Only under
     * LT_WAIT_PARK may it sleep on the node: the exchange tells and wakes it. */
    if (lt_wait_of(m) == LT_WAIT_PARK)
        lt_wake_word(&n->state, CLH_FREE);
    else
        __atomic_store_n(&n->state, CLH_FREE, __ATOMIC_RELEASE);
    return 0;
}

/* fork (mutex.c): the nodes swapped in after the holder's belong to threads the child lost.
 * The holder's node (l->owner, HELD) becomes the tail again, or the queue goes. */
static void clh_fork_child(lt_mutex_t *m, int held)
{
    struct clh_lock *l = LT_STATE(m, struct clh_lock);
    struct lt_qnode *n = held ? __atomic_load_n(&l->owner, __ATOMIC_RELAXED) : NULL;
    __atomic_store_n(&l->tail, n, __ATOMIC_RELAXED);
    lt_gate_fork_child(&l->gate);
}

const struct lt_algo lt_algo_clh = {
    .name = "clh",
    .caps = LT_CAP_SUPPORTS_COND | LT_CAP_FIFO | LT_CAP_BLOCKING,
    .counts = LT_STAT_BIT(LT_STAT_PARKED) | LT_STAT_BIT(LT_STAT_HANDOVERS) |
              LT_STAT_BIT(LT_STAT_GATED) | LT_STAT_BIT(LT_STAT_GATE_TURNS),
    .size = sizeof(struct clh_lock),
    .wait = "on predecessor's node, by the lock's policy (default spin-then-park)",
    .waits = LT_WAIT_BIT(LT_WAIT_SPIN) | LT_WAIT_BIT(LT_WAIT_PARK) | LT_WAIT_BIT(LT_WAIT_YIELD),
    .wait_default = LT_WAIT_PARK,
    .init = clh_init,
    .destroy = clh_destroy,
    .lock = clh_lock,
    .trylock = clh_trylock,
    .timedlock = clh_timedlock,
    .unlock = clh_unlock,
    .fork_child = clh_fork_child,
};
