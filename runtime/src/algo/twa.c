/*
 * twa - ticket lock augmented with a waiting array (Dice & Kogan, "TWA").
 *
 * A ticket lock whose far waiters do not spin on the lock: a waiter more than LTT tickets from
 * being served waits on a slot of one array shared by every twa lock of the process (wait.c's
 * slot array, lt_slot), chosen by hashing (lock, ticket); only the next LTT waiters (here 1:
 * the immediate successor) spin on `grant`.  The hand-over store therefore invalidates one waiter's
 * line, not every waiter's.
 *
 *   lock:   free (ticket == grant): CAS(ticket, grant -> grant + 1): owner.  Else, past the
 *           admission gate under LT_WAIT_PARK (gate.h):
 *           tx = FETCH_ADD(ticket, 1); dx = tx - grant
 *           dx == 0: owner.   dx > LTT: long-term wait -
 *             loop { u = slot(tx); recheck dx = tx - grant; dx <= LTT: break;
 *                    wait while slot(tx) == u }            (sample, recheck, then wait)
 *           short-term: wait until grant == tx (lt_slot_wait: parks on slot(tx))
 *   unlock: grant = grant + 1 (release: the hand-over, first; seq_cst under LT_WAIT_PARK,
 *           then kick slot(grant) if its waiter sleeps there: wait.h's Dekker pair)
 *           kick slot(grant + LTT)  (then tell the waiter now LTT away to move up: an RMW
 *           that always changes the slot, and wakes it if it parked; being next in line, it
 *           then waits awake: lt_slot_wait parks only waiters more than one ticket away)
 *           - under LT_WAIT_PARK only if ticket grant + LTT has been taken (see below)
 *
 * Sampling the slot before re-reading grant is what prevents a lost wake-up: an unlock that
 * lands between the two reads changes the slot after the sample.  The slot's value means
 * nothing; a change means "re-read grant".  Collisions only cost a spurious re-read.
 *
 * The paper kicks on every release, an RMW on a line of the shared array that made the
 * uncontended pair cost 1.5x glibc's.  Under LT_WAIT_PARK the grant store is seq_cst already,
 * and the unlocker then reads ticket (seq_cst): only a thread holding ticket grant + LTT can
 * wait for that kick, and it took its ticket with a seq_cst RMW and reads grant seq_cst after
 * it (a Dekker pair on ticket and grant).  Either the unlocker sees that ticket and kicks, or
 * the waiter's grant reads come after the new grant in the single total order, so it finds
 * itself LTT away or closer and never waits on the slot.  Under the spin policies the grant
 * store is a release only, and the kick stays unconditional.
 *
 * Strict FIFO, like ticket.  Waiting: the lock's policy (wait.h), spin-then-park by default
 * (the paper spins; parking is its future work: the slots are futex words here, so a far
 * waiter sleeps where it used to spin).  `twa:spin` spins, then yields, and like every FIFO
 * spin lock collapses when threads outnumber CPUs; under LT_WAIT_PARK the admission gate
 * (gate.h) keeps all but CPUs - 1 waiters asleep outside the queue, so the hand-over goes to a
 * running waiter.  State: 24 bytes per lock (8 and the gate's 16), plus wait.c's 16 KiB slot
 * array per process.
 */
#include <stdint.h>

#include "../algo.h"
#include "../gate.h"

#define TWA_LTT 1u

struct twa_lock {
    uint32_t ticket, grant;
    struct lt_gate gate;
};
LT_STATE_FITS(struct twa_lock);

static int twa_init(lt_mutex_t *m)
{
    (void)m;
    return 0;
}

static int twa_destroy(lt_mutex_t *m)
{
    struct twa_lock *l = LT_STATE(m, struct twa_lock);
    return __atomic_load_n(&l->ticket, __ATOMIC_RELAXED) !=
                   __atomic_load_n(&l->grant, __ATOMIC_RELAXED)
               ? EBUSY
               : 0;
}

/* Take the lock if it is free: grant <= ticket always, and grant only grows, so ticket == g
 * means free, and ticket g is served at once (nobody ever waits for it: the kick protocol
 * above does not see it).  acquire: pairs with the previous holder's release of grant. */
static inline bool twa_take_free(struct twa_lock *l)
{
    uint32_t g = __atomic_load_n(&l->grant, __ATOMIC_ACQUIRE), t = g;
    return __atomic_compare_exchange_n(&l->ticket, &t, g + 1, 0, __ATOMIC_ACQUIRE,
                                       __ATOMIC_RELAXED);
}

/* The gate's test (gate.h): seq_cst, the passive waiter's half of its Dekker pair. */
static bool twa_free(lt_mutex_t *m)
{
    struct twa_lock *l = LT_STATE(m, struct twa_lock);
    return __atomic_load_n(&l->grant, __ATOMIC_SEQ_CST) ==
           __atomic_load_n(&l->ticket, __ATOMIC_SEQ_CST);
}

static __attribute__((noinline)) int twa_lock_slow(lt_mutex_t *m)
{
    struct twa_lock *l = LT_STATE(m, struct twa_lock);
    enum lt_wait_policy p = lt_wait_of(m);
    lt_contended(m);
    lt_gate_enter(&l->gate, m, p, twa_free);
    /* seq_cst, both: the waiter's half of the Dekker pair that lets twa_unlock skip its kick
     * (above); on x86 the RMW is a locked instruction and the load a plain one either way. */
    uint32_t tx = __atomic_fetch_add(&l->ticket, 1, __ATOMIC_SEQ_CST);
    uint32_t dx = tx - __atomic_load_n(&l->grant, __ATOMIC_SEQ_CST);
    struct lt_spin s = LT_SPIN_INIT;
    if (dx > TWA_LTT) {
        uint32_t *w = lt_slot(l, tx);
        for (;;) {
            /* acquire on the slot pairs with the unlocker's release kick: having seen the new
             * slot value, the re-read below sees the grant stored before it. */
            uint32_t u = __atomic_load_n(w, __ATOMIC_ACQUIRE);
            dx = tx - __atomic_load_n(&l->grant, __ATOMIC_SEQ_CST); /* the Dekker pair (top) */
            if (dx <= TWA_LTT)
                break;
            lt_slot_wait_change(w, u, p, &s, lt_site(m));
        }
    }
    lt_slot_wait(&l->grant, tx, l, p, lt_site(m)); /* acquire on grant */
    lt_gate_acquired(&l->gate, p);
    return lt_acquired(m);
}

static int twa_lock(lt_mutex_t *m)
{
    /* A free lock is taken by CAS, as trylock does, so that a waiter passes the gate before it
     * takes a ticket. */
    if (__builtin_expect(twa_take_free(LT_STATE(m, struct twa_lock)), 1))
        return lt_acquired(m);
    return twa_lock_slow(m);
}

static int twa_trylock(lt_mutex_t *m)
{
    return twa_take_free(LT_STATE(m, struct twa_lock)) ? lt_acquired(m) : EBUSY;
}

static int twa_timedlock(lt_mutex_t *m, const struct timespec *abstime)
{
    return lt_timedlock_handoff(m, twa_trylock, abstime);
}

static int twa_unlock(lt_mutex_t *m)
{
    struct twa_lock *l = LT_STATE(m, struct twa_lock);
    uint32_t k = __atomic_load_n(&l->grant, __ATOMIC_RELAXED) + 1; /* only the holder writes */
    if (__builtin_expect(lt_stats_on, 0) && __atomic_load_n(&l->ticket, __ATOMIC_RELAXED) != k)
        lt_stat(lt_site(m), LT_STAT_HANDOVERS);
    /* release: the hand-over, done first.  Under LT_WAIT_PARK seq_cst, then a look at k's slot:
     * the granter's half of wait.h's Dekker pair (its waiter may sleep there). */
    if (lt_wait_of(m) == LT_WAIT_PARK) {
        __atomic_store_n(&l->grant, k, __ATOMIC_SEQ_CST);
        lt_slot_kick_if_parked(lt_slot(l, k)); /* k's waiter, should it sleep */
        /* seq_cst: the unlocker's half of the Dekker pair (top).  Ticket k + LTT not taken:
         * whoever takes it will see grant k, and nobody waits on the slot for it. */
        uint32_t t = __atomic_load_n(&l->ticket, __ATOMIC_SEQ_CST);
        /* The gate (gate.h): passive waiters and nobody holds ticket k - the lock is idle. */
        if (lt_gate_passive(&l->gate) && t == k)
            lt_gate_wake(&l->gate, m, twa_free);
        if (t - k <= TWA_LTT)
            return 0;
    } else {
        __atomic_store_n(&l->grant, k, __ATOMIC_RELEASE);
    }
    /* release (the kick's RMW): a waiter that sees the new slot value sees the new grant.  Off
     * the critical path (the successor already owns the lock).  Under the spin policies never
     * skipped, even when nobody seemed to wait: a waiter that took ticket k + LTT just now may
     * already wait on this slot. */
    lt_slot_kick(lt_slot(l, k + TWA_LTT));
    return 0;
}

/* fork (mutex.c): the tickets between grant and ticket were taken by threads the child lost;
 * the holder, if any, holds ticket `grant`.  The waiting array needs nothing: a slot's value
 * means nothing, and nobody waits on it in the child. */
static void twa_fork_child(lt_mutex_t *m, int held)
{
    struct twa_lock *l = LT_STATE(m, struct twa_lock);
    uint32_t g = __atomic_load_n(&l->grant, __ATOMIC_RELAXED);
    __atomic_store_n(&l->ticket, held ? g + 1 : g, __ATOMIC_RELAXED);
    lt_gate_fork_child(&l->gate);
}

const struct lt_algo lt_algo_twa = {
    .name = "twa",
    .caps = LT_CAP_SUPPORTS_COND | LT_CAP_FIFO | LT_CAP_BLOCKING,
    .counts = LT_STAT_BIT(LT_STAT_PARKED) | LT_STAT_BIT(LT_STAT_HANDOVERS) |
              LT_STAT_BIT(LT_STAT_GATED) | LT_STAT_BIT(LT_STAT_GATE_TURNS),
    .size = sizeof(struct twa_lock),
    .wait = "near waiter on the lock, far waiters on a shared array, by the lock's policy "
            "(default spin-then-park)",
    .waits = LT_WAIT_BIT(LT_WAIT_SPIN) | LT_WAIT_BIT(LT_WAIT_PARK) | LT_WAIT_BIT(LT_WAIT_YIELD),
    .wait_default = LT_WAIT_PARK,
    .init = twa_init,
    .destroy = twa_destroy,
    .lock = twa_lock,
    .trylock = twa_trylock,
    .timedlock = twa_timedlock,
    .unlock = twa_unlock,
    .fork_child = twa_fork_child,
};
