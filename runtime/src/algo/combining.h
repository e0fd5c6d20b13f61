/*
 * combining.h - what the four combining locks (fc, ccsynch, dsmsynch, oyama) share: how a
 * combiner runs a section, how it steps aside when a section waits on a condition variable,
 * and how their waiters wait.
 *
 * A combiner is an application thread that runs other threads' sections while it holds the
 * lock.  A section that waits on a condition variable would put the combiner to sleep on
 * another thread's behalf, with the queued sections behind it stranded - and the thread that
 * would signal the condition may be one of them: a deadlock.  Two defences:
 *
 *   1. A section flagged LT_EXEC_MAY_WAIT (or LT_EXEC_ON_CALLER) is never combined: it runs on
 *      its own thread, under the lock taken by lock() (a HOLD request in the algorithm's
 *      queue), and its waits are the generic condition waits of cond.c.
 *   2. A section that waits without the flag (the rewriter could not see the wait, e.g. in a
 *      function of another file): the combiner *steps aside*.  Its condition wait releases the
 *      lock by handing the combiner role on - to the next queued request, or by freeing the
 *      lock - without running anything, and leaves the waiting section's own request marked as
 *      in progress; the combiner then sleeps on the condition like any waiter, takes the lock
 *      back by lock() when woken, finishes the section, completes its request, and unlocks
 *      (which combines whatever queued meanwhile).  The lock keeps moving while the section
 *      waits; only the combiner's own caller waits for it.
 *
 * Likewise the release that any condition wait makes (a lock holder's) never runs queued
 * sections: it hands the lock on.  A thread that ran, and slept in, another thread's section
 * while releasing for its own wait would sleep on the wrong condition - its own wake-up could be
 * spent while it sleeps elsewhere.
 *
 * The serving frames: a combiner pushes a frame on its stack for the lock whose sections it
 * runs (a section may combine another lock: frames nest).  The algorithm's unlock asks
 * lt_stepping(m) whether this release is a step aside; the frame's `pos` holds where the
 * algorithm hands the role on from.
 *
 *   frame:  serving --cond wait: stepping=1, release = step aside--> (asleep)
 *           --woken: lock() again--> stepped (a lock holder: the combiner finishes the section,
 *                                    completes its request, and unlocks)
 */
#ifndef LT_COMBINING_H
#define LT_COMBINING_H

#include "../algo.h"
#include "../mutex.h"
#include "../thread.h"

/* MAX_COMBINER_OPERATIONS of CC-Synch/DSM-Synch: a bound on the sections one combiner runs in
 * a session, so that it returns to its own caller.  The paper's rule (§5.2, Fig. 4) is n x h
 * with a small n, h the hardware threads; the authors' code uses n = 3 (144 on 48 threads).
 * lt_combine_max is that rule on this machine: 3 x the CPUs online.  It is soft (ccsynch,
 * dsmsynch): at it, the role goes on only to a waiter that is awake (lt_combining_awake); a
 * parked one is served and woken with its result, and the combiner goes on to the next, up to
 * lt_combine_hard = max(4 x lt_combine_max, 144) - the paper's figure - where it hands on whatever
 * the waiter's state.  Handing the role to a parked waiter stops the lock for a wake-up; a bound of
 * 3 x CPUs alone (6 on 2 CPUs) did that every 6 sections once the queue was asleep (issue 12).  Not
 * raised for every session: on 2 CPUs a soft bound of 144 ran at 0.4x glibc (median) at 64 threads
 * where 6 ran at 0.9x (waiters behind a long session park, and each then costs a wake-up).  Both
 * set by lt_combining_setup() when the first combining lock is initialised. */
extern unsigned lt_combine_max, lt_combine_hard;
void lt_combining_setup(void);

struct lt_serving {
    lt_mutex_t *m;
    struct lt_serving *up; /* the frame of an enclosing combining session */
    void *pos;             /* the algorithm's hand-on position for a step aside */
    uint8_t stepping;      /* a condition wait is releasing m: step aside */
    uint8_t stepped;       /* stepped aside: this thread now holds m as a lock holder */
};

extern __thread struct lt_serving *lt_serving_top __attribute__((tls_model("initial-exec")));

static inline void lt_serving_push(struct lt_serving *s, lt_mutex_t *m)
{
    s->m = m;
    s->up = lt_serving_top;
    s->pos = NULL;
    s->stepping = 0;
    s->stepped = 0;
    lt_serving_top = s;
}

static inline void lt_serving_pop(struct lt_serving *s)
{
    lt_serving_top = s->up;
}

static inline struct lt_serving *lt_serving_find(const lt_mutex_t *m)
{
    for (struct lt_serving *s = lt_serving_top; s; s = s->up)
        if (s->m == m)
            return s;
    return NULL;
}

/* Whether the calling thread's unlock is the release of a condition wait (a lock holder's, or
 * a step aside): it must hand the lock on without running queued sections. */
static inline bool lt_quiet_release(void)
{
    return lt_thread_self.cond_release;
}

/* In an algorithm's unlock: the frame whose condition wait is releasing m (step aside), or
 * NULL for an ordinary unlock. */
static inline struct lt_serving *lt_stepping(const lt_mutex_t *m)
{
    struct lt_serving *s = lt_serving_top;
    if (__builtin_expect(s == NULL, 1))
        return NULL;
    s = lt_serving_find(m);
    return s && s->stepping ? s : NULL;
}

/* The cond_wait hook of the combining locks (combining.c). */
int lt_combining_cond_wait(lt_cond_t *c, lt_mutex_t *m, const struct timespec *abstime);

/* A section is about to be combined on m by this thread while it already serves m: the
 * section calls lt_execute on its own lock (a relock).  Reported; it then deadlocks as
 * POSIX says a relock does. */
void lt_combining_relock(lt_mutex_t *m);

/* After a section that stepped aside: release m, held by this thread as a lock holder, with
 * the algorithm's unlock, and wake the condition waiters deferred until then. */
void lt_combining_unlock_held(lt_mutex_t *m, int (*unlock)(lt_mutex_t *));

/* A combiner's grant to the waiter on word w (CC-Synch, DSM-Synch: its request is run, or the
 * combiner role is its): release, so the waiter sees every section run so far and its result.
 * Under LT_WAIT_PARK the waiter may sleep: the exchange tells and wakes it (the wake may reach
 * a node the waiter has already taken back: a spurious wake-up, futex.h); under the other
 * policies a store suffices. */
static inline void lt_combining_grant(lt_mutex_t *m, uint32_t *w, uint32_t v)
{
    if (lt_wait_of(m) == LT_WAIT_PARK)
        lt_wake_word(w, v);
    else
        __atomic_store_n(w, v, __ATOMIC_RELEASE);
}

/* Whether the waiter on word w (not yet granted) is awake: spinning (LT_WAITING) or promoted
 * (LT_NEAR), not asleep in the kernel (LT_PARKED).  relaxed: a hint that chooses where the
 * combiner role goes; a waiter that parks just after costs one wake-up, as before (the grant's
 * exchange sees LT_PARKED and wakes it). */
static inline bool lt_combining_awake(const uint32_t *w)
{
    return __atomic_load_n(w, __ATOMIC_RELAXED) != LT_PARKED;
}

/* One poll of a combining waiter: spin for the spin budget, then yield between polls (the
 * paper's Fig. 18 variant: clients yield in their busy-wait loops). */
static inline void lt_combining_poll(struct lt_spin *s)
{
    lt_spin_poll(s, LT_WAIT_SPIN);
}

#endif
