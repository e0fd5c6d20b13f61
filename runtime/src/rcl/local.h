/*
 * local.h - core-local atomics (the RCL paper §3.1, Algorithm 4's local_CAS and local_FAA).
 *
 * Every servicing, manager and backup thread of an RCL server is pinned to the server's CPU,
 * so the words only they write - a lock's holder field, the pool counters, the server's
 * statistics - are shared by threads that never run at the same time: an update need only be
 * atomic with respect to preemption, and a single instruction is.  On x86-64 these are the
 * LOCK-prefixed instructions without the prefix (a few cycles instead of ~20, and no fence).
 *
 * They are wrong for a word that a thread on another CPU also writes.  So:
 *   - a caller passes `local`: whether every writer of the word is pinned to one CPU (a server
 *     whose threads could not be pinned passes false and gets the ordinary atomics);
 *   - ThreadSanitizer cannot see inside an asm statement, so its builds use the C11 builtins.
 * Memory order: none is implied beyond the compiler barrier ("memory" clobber); readers on
 * other CPUs (a client reading the holder field, the statistics writer) use relaxed loads and
 * rely on nothing but the value eventually arriving.
 */
#ifndef LT_RCL_LOCAL_H
#define LT_RCL_LOCAL_H

#include <stdbool.h>
#include <stdint.h>

#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define LT_LOCAL_TSAN_ 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define LT_LOCAL_TSAN_ 1
#endif

#if defined(__x86_64__) && !defined(LT_LOCAL_TSAN_)
#define LT_LOCAL_ASM_ 1
#endif

/* CAS *p from old to new; true when it was old. */
static inline bool lt_local_cas32(uint32_t *p, uint32_t old, uint32_t new_, bool local)
{
#ifdef LT_LOCAL_ASM_
    if (local) {
        uint32_t prev;
        __asm__ __volatile__("cmpxchgl %2, %1"
                             : "=a"(prev), "+m"(*p)
                             : "r"(new_), "0"(old)
                             : "memory", "cc");
        return prev == old;
    }
#endif
    (void)local;
    /* acq_rel: the same order the unprefixed instruction has on x86 (TSO). */
    return __atomic_compare_exchange_n(p, &old, new_, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
}

static inline void lt_local_add32(int32_t *p, int32_t v, bool local)
{
#ifdef LT_LOCAL_ASM_
    if (local) {
        __asm__ __volatile__("addl %1, %0" : "+m"(*p) : "er"(v) : "memory", "cc");
        return;
    }
#endif
    (void)local;
    __atomic_fetch_add(p, v, __ATOMIC_RELAXED);
}

static inline void lt_local_add64(uint64_t *p, uint64_t v, bool local)
{
#ifdef LT_LOCAL_ASM_
    if (local) {
        __asm__ __volatile__("addq %1, %0" : "+m"(*p) : "er"(v) : "memory", "cc");
        return;
    }
#endif
    (void)local;
    __atomic_fetch_add(p, v, __ATOMIC_RELAXED);
}

#endif
