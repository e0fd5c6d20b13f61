/*
 * thread.h - what the runtime keeps per thread: the kernel tid (lock owners), a PRNG
 * (Malthusian fairness trials, backoff jitter), and a pool of queue nodes for the queue locks
 * whose node must outlive lt_mutex_lock (mcs, clh, mcstp, mcscr: POSIX unlock passes no node).
 *
 * Nodes are never arrays per lock: a thread uses one node per lock it holds or waits for,
 * taken from its own free list and given back at unlock (to the unlocking thread's list, which
 * is the same thread unless a lock is released by another thread).  A thread's free nodes are
 * released when it exits.
 *
 * Every thread that has used a lock is on one list (thread.c), so that a forked child can see
 * what the threads it lost were doing: `waiting` names the lock a thread is inside the
 * acquisition or lt_execute of (mutex.c: the fork protocol).
 */
#ifndef LT_THREAD_H
#define LT_THREAD_H

#include <stdint.h>

#include "locktune.h"

struct lt_qnode;
struct lt_stats_thread;

struct lt_thread {
    int32_t tid;  /* kernel thread id, 0 until first asked */
    uint32_t rng; /* xorshift32 state, seeded from the tid */
    /* Condition waiters this thread signalled while holding their mutex: woken when it
     * releases that mutex (cond.c, "wait morphing").  NULL when none. */
    void *deferred;
    const void *deferred_mutex;
    uint8_t registered, exiting;
    /* Set by a condition wait while it releases its mutex (mutex.c): a combining lock's unlock
     * then hands the lock on without running queued sections (the waiter must not run, and
     * perhaps sleep in, others' sections before it sleeps itself). */
    uint8_t cond_release;
    uint32_t nfree;
    struct lt_qnode *free; /* node free list */
    struct lt_stats_thread *stats;
    /* The lock this thread is acquiring, or executing a section on (mutex.c sets it around
     * the algorithm's lock, timedlock and execute; the innermost one when they nest).  Read
     * only by a forked child's fork handler, which finds the locks a lost thread waited for. */
    lt_mutex_t *waiting;
    struct lt_thread *list_next, *list_prev; /* the list of threads (thread.c's list lock) */
    int32_t forked_tid; /* in a forked child: this thread's tid in the parent (mutex.c) */
    uint8_t listed;
};

extern __thread struct lt_thread lt_thread_self __attribute__((tls_model("initial-exec")));

int32_t lt_thread_init_tid(void);
/* Wake the condition waiters deferred by this thread (cond.c). */
void lt_cond_flush_deferred(void);
/* Called when a thread first keeps state that must be released at its exit: every
 * algorithm's thread_exit hook (algo.h) then runs when it exits. */
void lt_thread_register(void);

/* The calling thread's kernel tid (never 0). */
static inline int32_t lt_self(void)
{
    int32_t t = lt_thread_self.tid;
    return __builtin_expect(t != 0, 1) ? t : lt_thread_init_tid();
}

/* Marsaglia xorshift32: a thread-local, lock-free PRNG (never returns 0). */
static inline uint32_t lt_rand(void)
{
    uint32_t x = lt_thread_self.rng;
    if (__builtin_expect(x == 0, 0))
        x = (uint32_t)lt_self() * 2654435761u | 1u;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    lt_thread_self.rng = x;
    return x;
}

#endif
