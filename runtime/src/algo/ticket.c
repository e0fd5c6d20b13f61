/*
 * ticket - the ticket lock: take a number, wait until it is served.
 *
 *   next:  the next ticket to hand out     owner: the ticket being served
 *   free iff next == owner;  waiters = next - owner - 1
 *
 *   lock:   free (next == owner): CAS(next, owner -> owner + 1): owner
 *           else (past the admission gate, gate.h, under LT_WAIT_PARK):
 *           t = FETCH_ADD(next, 1); spin until owner == t (acquire)
 *   unlock: owner = owner + 1 (release store; only the holder writes owner)
 *
 * Strict FIFO: the doorway (the fetch-and-add) is wait-free and fixes the order.  Every waiter
 * reads `owner`, so each hand-over invalidates every waiter's copy of the line (global
 * spinning; twa fixes that).  The cheapest lock when uncontended: one atomic to lock, a plain
 * store to unlock.
 *
 * Waiting: the lock's policy (wait.h), spin-then-park by default.  Every waiter reads the one
 * word `owner`, so a parked waiter sleeps on the slot of (lock, its ticket) in wait.c's array
 * (lt_slot_wait), and unlock under LT_WAIT_PARK stores owner with seq_cst and then kicks the
 * slot of the ticket it serves if someone sleeps there (the Dekker pair of wait.h):
 *
 *   lock (park):   t = FETCH_ADD(next, 1); lt_slot_wait(owner == t, slot(l, t)): parks only
 *                  while more than one ticket away (the next in line spins)
 *   unlock (park): owner = o (seq_cst); lt_slot_kick_if_parked(slot(l, o)), and of o + 1: the
 *                  waiter that is now next in line wakes while o's holder works
 *
 * A ticket cannot be given back, so a waiter cannot leave (a timed waiter takes no ticket: a
 * release hands it the lock, mutex.c) and cannot be skipped: the hand-over to a parked waiter
 * costs a wake-up.  `ticket:spin` (plain release store to unlock) hands the lock to
 * descheduled waiters in turn when threads outnumber CPUs, and throughput collapses.
 * Under LT_WAIT_PARK the admission gate (gate.h) keeps all but CPUs - 1 waiters asleep outside
 * the queue, before they take a ticket: the hand-over then goes to a running waiter, and an
 * unlock that leaves the lock free (next == o) wakes a passive waiter.
 * State: 24 bytes (next, owner, and the gate's 16).
 */
#include "../algo.h"
#include "../gate.h"

struct ticket_lock {
    uint32_t next, owner;
    struct lt_gate gate;
};
LT_STATE_FITS(struct ticket_lock);

static int ticket_init(lt_mutex_t *m)
{
    (void)m;
    return 0;
}

static int ticket_destroy(lt_mutex_t *m)
{
    struct ticket_lock *l = LT_STATE(m, struct ticket_lock);
    return __atomic_load_n(&l->next, __ATOMIC_RELAXED) !=
                   __atomic_load_n(&l->owner, __ATOMIC_RELAXED)
               ? EBUSY
               : 0;
}

/* Take the lock if it is free: next == owner, then ticket owner is served at once.  acquire:
 * pairs with the previous holder's release of owner. */
static inline bool ticket_take_free(struct ticket_lock *l)
{
    uint32_t o = __atomic_load_n(&l->owner, __ATOMIC_ACQUIRE), t = o;
    return __atomic_compare_exchange_n(&l->next, &t, o + 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
}

/* The gate's test (gate.h): seq_cst, the passive waiter's half of its Dekker pair. */
static bool ticket_free(lt_mutex_t *m)
{
    struct ticket_lock *l = LT_STATE(m, struct ticket_lock);
    return __atomic_load_n(&l->owner, __ATOMIC_SEQ_CST) ==
           __atomic_load_n(&l->next, __ATOMIC_SEQ_CST);
}

static __attribute__((noinline)) int ticket_lock_slow(lt_mutex_t *m)
{
    struct ticket_lock *l = LT_STATE(m, struct ticket_lock);
    enum lt_wait_policy p = lt_wait_of(m);
    lt_contended(m);
    lt_gate_enter(&l->gate, m, p, ticket_free);
    /* relaxed: ordering comes from the acquire load of owner that admits us. */
    uint32_t t = __atomic_fetch_add(&l->next, 1, __ATOMIC_RELAXED);
    lt_slot_wait(&l->owner, t, l, p, lt_site(m)); /* acquire on owner */
    lt_gate_acquired(&l->gate, p);
    return lt_acquired(m);
}

static int ticket_lock(lt_mutex_t *m)
{
    /* A free lock is taken by CAS, as trylock does, so that a waiter passes the gate before it
     * takes a ticket (a ticket cannot be given back). */
    if (__builtin_expect(ticket_take_free(LT_STATE(m, struct ticket_lock)), 1))
        return lt_acquired(m);
    return ticket_lock_slow(m);
}

static int ticket_trylock(lt_mutex_t *m)
{
    return ticket_take_free(LT_STATE(m, struct ticket_lock)) ? lt_acquired(m) : EBUSY;
}

static int ticket_timedlock(lt_mutex_t *m, const struct timespec *abstime)
{
    return lt_timedlock_handoff(m, ticket_trylock, abstime);
}

static __attribute__((noinline)) void ticket_count_handover(lt_mutex_t *m, uint32_t o)
{
    if (__atomic_load_n(&LT_STATE(m, struct ticket_lock)->next, __ATOMIC_RELAXED) != o)
        lt_stat(lt_site(m), LT_STAT_HANDOVERS);
}

static int ticket_unlock(lt_mutex_t *m)
{
    struct ticket_lock *l = LT_STATE(m, struct ticket_lock);
    uint32_t o = __atomic_load_n(&l->owner, __ATOMIC_RELAXED) + 1; /* only we write it */
    if (__builtin_expect(lt_stats_on, 0))
        ticket_count_handover(m, o);
    /* release: the critical section's writes go to the thread holding ticket o.  Under
     * LT_WAIT_PARK, seq_cst and then a look at o's slot: the granter's half of wait.h's Dekker
     * pair (its waiter may be asleep there). */
    if (lt_wait_of(m) != LT_WAIT_PARK) {
        __atomic_store_n(&l->owner, o, __ATOMIC_RELEASE);
        return 0;
    }
    __atomic_store_n(&l->owner, o, __ATOMIC_SEQ_CST);
    lt_slot_kick_if_parked(lt_slot(l, o));     /* o's waiter, should it sleep */
    lt_slot_kick_if_parked(lt_slot(l, o + 1)); /* now next in line: wake it ahead */
    /* The gate (gate.h): passive waiters and nobody holds ticket o - the lock is idle. */
    if (lt_gate_passive(&l->gate) && __atomic_load_n(&l->next, __ATOMIC_SEQ_CST) == o)
        lt_gate_wake(&l->gate, m, ticket_free);
    return 0;
}

/* fork (mutex.c): the tickets between owner and next were taken by threads the child lost;
 * the holder, if any, holds ticket `owner`. */
static void ticket_fork_child(lt_mutex_t *m, int held)
{
    struct ticket_lock *l = LT_STATE(m, struct ticket_lock);
    uint32_t o = __atomic_load_n(&l->owner, __ATOMIC_RELAXED);
    __atomic_store_n(&l->next, held ? o + 1 : o, __ATOMIC_RELAXED);
    lt_gate_fork_child(&l->gate);
}

const struct lt_algo lt_algo_ticket = {
    .name = "ticket",
    .caps = LT_CAP_SUPPORTS_COND | LT_CAP_FIFO | LT_CAP_BLOCKING,
    .counts = LT_STAT_BIT(LT_STAT_PARKED) | LT_STAT_BIT(LT_STAT_HANDOVERS) |
              LT_STAT_BIT(LT_STAT_GATED) | LT_STAT_BIT(LT_STAT_GATE_TURNS),
    .size = sizeof(struct ticket_lock),
    .wait = "on the lock (parked: on its ticket's slot), by the lock's policy (default "
            "spin-then-park)",
    .waits = LT_WAIT_BIT(LT_WAIT_SPIN) | LT_WAIT_BIT(LT_WAIT_PARK) | LT_WAIT_BIT(LT_WAIT_YIELD),
    .wait_default = LT_WAIT_PARK,
    .init = ticket_init,
    .destroy = ticket_destroy,
    .lock = ticket_lock,
    .trylock = ticket_trylock,
    .timedlock = ticket_timedlock,
    .unlock = ticket_unlock,
    .fork_child = ticket_fork_child,
};
