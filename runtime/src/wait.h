/*
 * wait.h - how a thread waits: the waiting policies every algorithm uses.
 *
 *   LT_WAIT_SPIN   "spin": PAUSE in a loop.  Once a wait has lasted the spin budget, the waiter
 *                  also yields the CPU between polls: with more threads than CPUs the thread it
 *                  waits for may be waiting for this very CPU.  It never sleeps in the kernel,
 *                  so a FIFO lock on this policy still collapses when threads outnumber CPUs
 *                  (the successor it hands to may be descheduled); the yield only keeps the
 *                  machine usable meanwhile.
 *   LT_WAIT_PARK   "park": spin-then-park: PAUSE for the spin budget (shortened when the machine
 *                  is crowded, below), then sleep on a futex until a waker changes the wait word.
 *   LT_WAIT_YIELD  "yield": sched_yield() between polls from the first poll.
 *
 * Per lock: the queue and combining algorithms (mcs, clh, ticket, twa, ccsynch, dsmsynch) wait
 * under the policy their site names - `mcs:spin`, `ccsynch:park` in LOCKTUNE_ALGO or in
 * locktune_config.h's .algorithm (config.c), else the algorithm's default (struct lt_algo's
 * wait_default: LT_WAIT_PARK for all of these).  mutex.c records it in the
 * lock's flags when it binds the lock; the algorithm reads it with lt_wait_of(m) (algo.h), on
 * both sides: a waiter waits under it, and the grant side wakes a waiter that may be parked
 * (lt_wake_word, lt_slot_kick) - only under LT_WAIT_PARK, so the pure-spin form keeps its
 * plain release store.  The other algorithms keep the waiting their file describes.
 *
 * The spin budget is what a parked waiter costs on this machine: the time from FUTEX_WAKE until
 * the woken thread runs, while the waker keeps its CPU (measured once per process by
 * lt_wait_calibrate(), lower quartile of 31 hand-overs).  Spinning that long before parking
 * costs at most twice the optimum (Karlin et al.; the Malthusian paper, section 5.1).
 * LOCKTUNE_SPIN_NS overrides it.
 *
 * Oversubscription (the ShflLock rule: park early rather than spin on a CPU someone else
 * needs).  lt_wait_spinners counts the threads spinning right now in lt_wait_word and
 * lt_slot_wait - waiters of every lock of the process, in their spinning phase (not parked,
 * not granted).  A LT_WAIT_PARK waiter is *crowded* when those spinners (itself included) plus
 * one lock holder need more CPUs than the process may use (lt_wait_cpus(): the
 * sched_getaffinity count, read once):
 *
 *     crowded  <=>  spinners + 1 > cpus          (2 CPUs: any second spinner is crowded)
 *
 * A crowded waiter spends LT_CROWDED_NS (1 us: long enough for a hand-over already in flight
 * to land, far shorter than a time slice) instead of the budget, then parks.  The test is made
 * every 16 polls, so a waiter that becomes crowded mid-spin parks then.  The first waiters to
 * arrive keep spinning the whole budget, so with threads <= CPUs nothing changes.  Waiters
 * that spin through lt_spin_poll with their own loop (shfl-block, mcscr, timed waits) are
 * not counted but obey the same rule.
 *
 * A wait word for LT_WAIT_PARK holds LT_WAITING while its owner waits, LT_PARKED while it
 * sleeps, and any other value (chosen by the algorithm) once granted:
 *
 *   WAITING --(waiter: budget spent, CAS)--> PARKED --futex_wait--.
 *      |                                        |                 |
 *      +--(waker: XCHG to v)--> v <--(waker: XCHG to v, then futex_wake)
 *
 * The waker's exchange reads the old value, so it knows whether to wake (no lost wake-up: the
 * kernel re-checks the word before sleeping).
 *
 * Waking ahead (lt_wait_promote).  A strict FIFO hand-over to a parked waiter waits for the
 * wake-up (microseconds on a virtual machine, where the other CPU has halted), again at every
 * hand-over.  A lock holder that knows the waiter after its successor promotes it before it
 * grants the successor: WAITING or PARKED --(holder: CAS; FUTEX_WAKE if it was PARKED)-->
 * NEAR.  A NEAR waiter waits as under LT_WAIT_SPIN (spin, then yield; never crowded, never
 * parked) until its grant, so by the time its predecessor hands over, it is running: the
 * wake-up overlaps one whole hand-over instead of adding to it.  Only the holder writes a
 * waiter's word (promotion, then the grant), and the waiter's node cannot go away before its
 * grant, so a holder may promote any node it can reach ahead of its own grant.
 *
 * Waiters that share a word (ticket, twa: everyone reads the lock's grant counter) park on a
 * slot of one process-wide array of futex words instead, chosen by hashing (lock, ticket):
 *
 *   slot value:  sequence << 1 | SLEEPERS      (bit 0: someone sleeps, or is about to)
 *
 *   waiter:  u = sample(slot); check the grant (done: stop; next in line: spin); budget
 *            spent: CAS(slot, u -> u | 1) (seq_cst; fails: sample again); re-check the grant
 *            (seq_cst); futex_wait(slot, u | 1); sample again
 *   granter: store the grant g (seq_cst); kick-if-parked the slots of g and g + 1: load slot
 *            (seq_cst), bit 0 set: CAS(slot, v -> (v + 2) & ~1); FUTEX_WAKE all  (twa kicks
 *            g + 1 unconditionally: its waiting array's "move up")
 *
 * The granter's store then load and the waiter's CAS then load are a Dekker pair under seq_cst:
 * either the waiter sees the grant, or the granter sees the bit and wakes it; a kick between
 * the waiter's CAS and its futex_wait changes the slot, so the kernel does not sleep.  Two
 * keys on one slot only cost a spurious wake-up (everyone on the slot re-checks).
 */
#ifndef LT_WAIT_H
#define LT_WAIT_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

enum lt_wait_policy { LT_WAIT_SPIN, LT_WAIT_PARK, LT_WAIT_YIELD, LT_WAIT_NPOLICIES };
#define LT_WAIT_BIT(p) (1u << (p))

/* "spin", "park", "yield"; and back (-1: not a policy name). */
const char *lt_wait_policy_name(enum lt_wait_policy p);
int lt_wait_policy_parse(const char *name);

/* Oversubscription (see above). */
#define LT_CROWDED_NS 1000u
extern uint32_t lt_wait_spinners; /* atomic, relaxed: a hint */
unsigned lt_wait_cpus(void);      /* CPUs the process may use (sched_getaffinity, cached) */
/* In a forked child (thread.c): the spinners were the parent's other threads; none is left. */
void lt_wait_fork_child(void);

enum {
    LT_WAITING = 0,
    LT_PARKED = 1,
    LT_GRANTED = 2, /* first value an algorithm may use for "granted" */
    /* lt_wait_promote: still waiting, next but one in line - awake, and not to park.  No
     * algorithm grants with this value. */
    LT_NEAR = 0x7fffffff,
};

/* The polite-spin instruction. */
static inline void lt_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield" ::: "memory");
#else
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
#endif
}

/* Monotonic nanoseconds (vDSO clock_gettime: ~20 ns). */
static inline uint64_t lt_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The state of one busy-wait. */
struct lt_spin {
    uint32_t polls;
    uint8_t over;    /* the spin budget is spent */
    uint8_t counted; /* this waiter is one of lt_wait_spinners */
    uint64_t start_ns;
};
#define LT_SPIN_INIT                                                                               \
    {                                                                                              \
        0, 0, 0, 0                                                                                 \
    }

bool lt_spin_check(struct lt_spin *s, enum lt_wait_policy p);

/* One poll of a busy-wait under policy p.  Returns true once the spin budget is spent (an
 * LT_WAIT_PARK caller then parks; the others have already yielded as their policy says). */
static inline bool lt_spin_poll(struct lt_spin *s, enum lt_wait_policy p)
{
    lt_cpu_relax();
    if (p == LT_WAIT_YIELD || (++s->polls & 15) == 0)
        return lt_spin_check(s, p); /* the clock is read once every 16 polls */
    return s->over;
}

/* Wait until *w is neither LT_WAITING, LT_PARKED nor LT_NEAR, under policy p; returns that
 * value with acquire order.  `site` is for the statistics (parked waits). */
uint32_t lt_wait_word(uint32_t *w, enum lt_wait_policy p, int site);

/* Sleep while *w == parked (the caller has just moved *w there by CAS).  Counts a park. */
void lt_park(uint32_t *w, uint32_t parked, int site);

/* Promote the waiter on w (see the header): the caller holds the lock, and grants w only
 * later (or lets its successor do it). */
void lt_wait_promote(uint32_t *w);

/* FUTEX_WAKE the waiter sleeping on w (out of line: the system call is the slow path). */
void lt_wake_parked(uint32_t *w);

/* Grant a waiter that waits in lt_wait_word: store v with release order, and wake the waiter
 * if it sleeps.  Returns true when a wake-up system call was needed. */
static inline bool lt_wake_word(uint32_t *w, uint32_t v)
{
    /* release: the new owner sees everything the granter wrote in its critical section. */
    if (__atomic_exchange_n(w, v, __ATOMIC_RELEASE) != LT_PARKED)
        return false;
    lt_wake_parked(w);
    return true;
}

/* Waiting on a shared word (ticket, twa): the slot of (lock, key) in the process's array, and
 * its protocol (see the header).  lt_slot_wait waits, under policy p, until *word == want
 * (acquire; *word counts up to want), parking on the slot of (lock, want) under LT_WAIT_PARK
 * while more than one step away - the next in line (want - *word == 1) waits awake, as
 * under LT_WAIT_SPIN, so the granter kicks the slots of the grant it makes and of the one
 * after (waking ahead, as lt_wait_promote); lt_slot_kick wakes the
 * sleepers of a slot unconditionally (an RMW on it every time); lt_slot_kick_if_parked first
 * looks (seq_cst load: the granter's half of the Dekker pair - its grant store must be seq_cst
 * too). */
uint32_t *lt_slot(const void *lock, uint32_t key);
void lt_slot_wait(const uint32_t *word, uint32_t want, const void *lock, enum lt_wait_policy p,
                  int site);
void lt_slot_kick(uint32_t *slot);
static inline void lt_slot_kick_if_parked(uint32_t *slot)
{
    if (__builtin_expect(__atomic_load_n(slot, __ATOMIC_SEQ_CST) & 1u, 0))
        lt_slot_kick(slot);
}
/* Wait, under policy p, until *slot differs from `seen` (a value sampled with acquire before
 * checking what the caller waits for), parking under LT_WAIT_PARK once s's budget is spent.
 * The caller then samples and checks again.  For waiters whose granter kicks the slot
 * unconditionally (twa's far waiters), so no Dekker pair is needed. */
void lt_slot_wait_change(uint32_t *slot, uint32_t seen, enum lt_wait_policy p, struct lt_spin *s,
                         int site);

/* The spin budget in ns, and where it came from ("calibrated", "LOCKTUNE_SPIN_NS", "default"). */
uint64_t lt_spin_budget_ns(void);
const char *lt_spin_budget_source(void);
/* Measure the park/unpark cost once (later calls return at once).  Called when the first lock
 * is bound to an algorithm that waits in the runtime (not `posix`). */
void lt_wait_calibrate(void);
/* LOCKTUNE_SPIN_NS (config.c): fixes the budget and disables calibration. */
void lt_wait_set_budget(uint64_t ns, const char *source);
/* The calibration's measure: median FUTEX_WAKE-to-running latency, ns (0: not measured). */
uint64_t lt_wait_unpark_ns(void);

#endif
