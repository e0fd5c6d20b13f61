/*
 * lll.h - the runtime's own low-level lock: a three-state futex mutex (Drepper, "Futexes Are
 * Tricky", mutex 2).  Guards short internal critical sections (condition-variable waiter
 * lists); it never runs user code.
 *
 *   0 free --lock: CAS 0->1--> 1 held, nobody asleep --contended: XCHG ->2--> 2 held, maybe
 *   sleepers; unlock: XCHG ->0, and FUTEX_WAKE one sleeper when the old value was 2.
 *
 * A thread that finds the lock held spins briefly (the sections are a few dozen instructions)
 * and then sleeps, so a holder preempted on an oversubscribed machine costs sleepers no CPU.
 */
#ifndef LT_LLL_H
#define LT_LLL_H

#include <stdint.h>

#include "futex.h"
#include "wait.h"

static inline void lt_lll_lock(uint32_t *w)
{
    uint32_t c = 0;
    /* acquire: the section's reads must not move above the lock. */
    if (__atomic_compare_exchange_n(w, &c, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
        return;
    for (int i = 0; i < 100 && c != 0; i++) {
        lt_cpu_relax();
        c = __atomic_load_n(w, __ATOMIC_RELAXED);
        if (c == 0 && __atomic_compare_exchange_n(w, &c, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
            return;
    }
    /* Mark "maybe sleepers" before sleeping, so the unlocker knows to wake us. */
    while (__atomic_exchange_n(w, 2, __ATOMIC_ACQUIRE) != 0)
        lt_futex_wait(w, 2, NULL, CLOCK_MONOTONIC);
}

/* lt_lll_lock with a deadline (absolute, CLOCK_REALTIME): 0, or ETIMEDOUT.  A sleeper is
 * woken in its turn among the sleepers (the kernel wakes a futex's sleepers in order). */
static inline int lt_lll_timedlock(uint32_t *w, const struct timespec *abstime)
{
    uint32_t c = 0;
    /* acquire: as lt_lll_lock's. */
    if (__atomic_compare_exchange_n(w, &c, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
        return 0;
    while (__atomic_exchange_n(w, 2, __ATOMIC_ACQUIRE) != 0)
        if (lt_futex_wait(w, 2, abstime, CLOCK_REALTIME) == ETIMEDOUT)
            return __atomic_exchange_n(w, 2, __ATOMIC_ACQUIRE) == 0 ? 0 : ETIMEDOUT;
    return 0;
}

static inline void lt_lll_unlock(uint32_t *w)
{
    /* release: publishes the section's writes to the next holder. */
    if (__atomic_exchange_n(w, 0, __ATOMIC_RELEASE) == 2)
        lt_futex_wake(w, 1);
}

#endif
