/*
 * spin - test-and-test-and-set with randomised exponential back-off (Anderson).
 *
 *   word: 0 free --CAS 0->1 (acquire)--> 1 held --store 0 (release)--> 0 free
 *
 * A waiter reads the word until it sees 0 (test), then tries the CAS (test-and-set); after a
 * failed CAS it waits a random number of PAUSEs below a window that doubles each time
 * (4 .. 1024), so that the waiters do not all retry together.
 *
 * Competitive succession: unlock frees the word and whoever gets there first takes it.  A
 * descheduled waiter therefore never stalls the lock - under oversubscription it degrades
 * (the holder may be preempted) but does not collapse.  Every waiter spins on the one word:
 * the cache line bounces between them under contention.
 *
 * Bounded bypass (impatient.h): a waiter that has waited LT_IMPATIENT_NS (10 ms) draws a
 * ticket; while any waiter is impatient nobody else takes the word (lock's fast path, trylock
 * and the other waiters test `imp.waiting` first), and the impatient ones take it in ticket
 * order.  Without it a waiter on a loaded CPU got the lock only when a thread that re-takes it
 * at once was preempted between its release and its take (test_bypass: 3 acquisitions in
 * 2.5 s, a 1.8 s wait).
 *
 * Waiting: LT_WAIT_SPIN (PAUSE, yielding once the spin budget is spent).  There is no waiter
 * list, so nobody could wake a parked waiter.  State: 16 bytes.
 */
#include "../algo.h"
#include "../impatient.h"
#include "../thread.h"

struct spin_lock {
    uint32_t word;
    struct lt_impatient imp;
};
LT_STATE_FITS(struct spin_lock);

#define BACKOFF_MIN 4u
#define BACKOFF_MAX 1024u

static int spin_init(lt_mutex_t *m)
{
    (void)m;
    return 0;
}

static int spin_destroy(lt_mutex_t *m)
{
    (void)m;
    return 0; /* waiters are invisible to this lock */
}

static inline int spin_try(struct spin_lock *l)
{
    uint32_t z = 0;
    /* acquire: the critical section starts after the CAS that took the word. */
    return lt_impatient_quiet(&l->imp) && __atomic_load_n(&l->word, __ATOMIC_RELAXED) == 0 &&
           __atomic_compare_exchange_n(&l->word, &z, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
}

static __attribute__((noinline)) int spin_wait(lt_mutex_t *m)
{
    struct spin_lock *l = LT_STATE(m, struct spin_lock);
    lt_contended(m);
    struct lt_spin s = LT_SPIN_INIT;
    uint64_t since = lt_now_ns();
    unsigned window = BACKOFF_MIN;
    while (!lt_impatient_due(since)) {
        for (unsigned k = 1; __atomic_load_n(&l->word, __ATOMIC_RELAXED) != 0; k++) {
            lt_spin_poll(&s, LT_WAIT_SPIN);
            if (k % 64 == 0 && lt_impatient_due(since))
                goto impatient;
        }
        if (spin_try(l))
            return lt_acquired(m);
        for (unsigned d = lt_rand() % window + 1; d > 0; d--)
            lt_spin_poll(&s, LT_WAIT_SPIN);
        window = window < BACKOFF_MAX ? window * 2 : BACKOFF_MAX;
    }
impatient:
    lt_impatient_take(&l->imp, &l->word, &s);
    return lt_acquired(m);
}

static int spin_lock(lt_mutex_t *m)
{
    if (__builtin_expect(spin_try(LT_STATE(m, struct spin_lock)), 1))
        return lt_acquired(m);
    return spin_wait(m);
}

static int spin_trylock(lt_mutex_t *m)
{
    return spin_try(LT_STATE(m, struct spin_lock)) ? lt_acquired(m) : EBUSY;
}

static int spin_timedlock(lt_mutex_t *m, const struct timespec *abstime)
{
    return lt_timedlock_handoff(m, spin_trylock, abstime);
}

static int spin_unlock(lt_mutex_t *m)
{
    /* release: the critical section's writes are visible to the next taker. */
    __atomic_store_n(&LT_STATE(m, struct spin_lock)->word, 0, __ATOMIC_RELEASE);
    return 0;
}

/* fork (mutex.c): the impatient tickets of threads the child lost; a word a lost thread took
 * without finishing its acquisition is freed. */
static void spin_fork_child(lt_mutex_t *m, int held)
{
    struct spin_lock *l = LT_STATE(m, struct spin_lock);
    lt_impatient_fork_child(&l->imp);
    if (!held)
        __atomic_store_n(&l->word, 0, __ATOMIC_RELAXED);
}

const struct lt_algo lt_algo_spin = {
    .name = "spin",
    .caps = LT_CAP_SUPPORTS_COND | LT_CAP_OVERSUB_SAFE,
    .counts = LT_STAT_BIT(LT_STAT_PARKED),
    .size = sizeof(struct spin_lock),
    .wait = "spin (TTAS, exponential back-off), then yield; in ticket order after 10 ms",
    .init = spin_init,
    .destroy = spin_destroy,
    .lock = spin_lock,
    .trylock = spin_trylock,
    .timedlock = spin_timedlock,
    .unlock = spin_unlock,
    .fork_child = spin_fork_child,
};
