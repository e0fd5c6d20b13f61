/*
 * spin.h - the profiler's own tiny lock, for its rare slow paths (a new site, a new
 * thread record, a new slot chunk).  Never on a lock operation's fast path, and never a
 * pthread lock: the profiler must not call what it interposes.
 *
 *   0 (free) --exchange(1), acquire--> 1 (held) --store(0), release--> 0
 *
 * Waiters spin on a plain load (test-and-test-and-set), then yield: on an oversubscribed
 * machine the holder may be preempted, and spinning would only delay it.
 */
#ifndef LTP_SPIN_H
#define LTP_SPIN_H

#include <sched.h>

static inline void ltp_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

static inline void ltp_spin_lock(int *l)
{
    for (;;) {
        /* acquire: the holder's writes to what the lock protects are visible to us */
        if (!__atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE))
            return;
        for (int i = 0; __atomic_load_n(l, __ATOMIC_RELAXED); i++) {
            if (i < 100)
                ltp_cpu_relax();
            else
                sched_yield();
        }
    }
}

/* Try for a while (about `rounds` yields); 1 when acquired.  For paths that may run in a
 * thread that already holds the lock (exit() called from a signal handler). */
static inline int ltp_spin_trylock(int *l, int rounds)
{
    for (int i = 0; i < rounds; i++) {
        if (!__atomic_load_n(l, __ATOMIC_RELAXED) && !__atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE))
            return 1;
        sched_yield();
    }
    return 0;
}

static inline void ltp_spin_unlock(int *l)
{
    __atomic_store_n(l, 0, __ATOMIC_RELEASE); /* release: publish the protected writes */
}

#endif
