/*
 * algo.h - the operations table every lock algorithm fills, and the registry that maps an
 * algorithm's name to its table.  One algorithm per file under runtime/src/algo/.
 *
 * What the runtime (mutex.c) does around every algorithm, so that no algorithm repeats it:
 * binding a lock to its site's algorithm, mutex types (recursive, error-checking), the owner
 * field, misuse reports, statistics of acquisitions/trylock failures/timeouts, process-shared
 * and robust attributes (plain glibc mutexes), and the "lock, call, unlock" form of lt_execute.
 * An algorithm sees only lock/trylock/timedlock/unlock on its own state in m->_u.
 */
#ifndef LT_ALGO_H
#define LT_ALGO_H

#include <errno.h>
#include <stdio.h>

#include "locktune.h"
#include "stats.h"
#include "thread.h"
#include "wait.h"

/* m->_flags: the type bits of locktune.h, and NATIVE: a process-shared, robust or priority-
 * protocol lock kept as a plain glibc mutex in m->_u._posix (its _ops is not used: the lock may
 * live in memory shared with a process where the runtime is mapped elsewhere). */
#define LT_MUTEX_F_TYPE_MASK_    3u
#define LT_MUTEX_F_NATIVE_       4u
/* Set while timed waiters are announced (TIMED), and after a release handed the lock to one
 * (HANDED): both send every operation on the lock to mutex.c's slow path (timedlock). */
#define LT_MUTEX_F_TIMED_        8u
#define LT_MUTEX_F_HANDED_       16u
/* The lock's waiting policy (wait.h), two bits: written when the lock is bound, before the
 * release store of _ops that publishes the binding, and never changed while it is bound. */
#define LT_MUTEX_F_WAIT_SHIFT_   5
#define LT_MUTEX_F_WAIT_MASK_    (3u << LT_MUTEX_F_WAIT_SHIFT_)
/* The inline fast path mutex.c takes for the lock (enum lt_inline, the algorithm's
 * .inline_path; none while statistics are on), two bits, written and never changed as the wait
 * bits are. */
#define LT_MUTEX_F_INLINE_SHIFT_ 7
#define LT_MUTEX_F_INLINE_MASK_  (3u << LT_MUTEX_F_INLINE_SHIFT_)

/* The uncontended lock and unlock that mutex.c inlines for an algorithm ("Inline fast paths"
 * there; the cases are in algo/inline.h), so that they cost no call through its table. */
enum lt_inline {
    LT_INLINE_NONE = 0,
    LT_INLINE_POSIX, /* glibc's pthread_mutex_lock / unlock on m->_u._posix (algo/posix.c) */
    LT_INLINE_SHFL,  /* the ShflLock word's fast paths (algo/shfl_word.h) */
};

enum lt_caps {
    LT_CAP_DELEGATES = 1u << 0,     /* lt_execute may run the section on another thread */
    LT_CAP_SUPPORTS_COND = 1u << 1, /* lt_cond_wait may be called inside its sections */
    LT_CAP_BLOCKING = 1u << 2,      /* waiters eventually sleep in the kernel */
    LT_CAP_FIFO = 1u << 3,          /* strict FIFO hand-off (bounded bypass) */
    LT_CAP_OVERSUB_SAFE = 1u << 4,  /* holds up with more runnable threads than CPUs */
    /* execute and execute_trylock take recursive-type locks too (they keep the recursion
     * themselves, e.g. rcl's holder == real_me test); otherwise mutex.c runs a typed lock's
     * sections by lock, call, unlock */
    LT_CAP_RECURSIVE_EXEC = 1u << 5,
    LT_CAP_SERVER = 1u << 6, /* sections run on server threads placed per site (.server) */
};

struct lt_algo {
    const char *name;
    unsigned caps;
    unsigned counts;  /* LT_STAT_BIT()s of the algorithm-maintained counters it keeps */
    unsigned size;    /* bytes of m->_u it uses (docs/runtime.md) */
    const char *wait; /* its waiting policy, for people */
    /* The waiting policies a site may choose for it by name (`mcs:spin`; LT_WAIT_BIT()s; 0:
     * none - the algorithm waits its own way, described by .wait), and the one its locks take
     * when the site names none.  lt_wait_of(m) is the lock's. */
    unsigned waits;
    enum lt_wait_policy wait_default;
    /* Optional: the fast paths mutex.c inlines for its locks (LT_INLINE_NONE: none).  They must
     * do exactly what lock and unlock do when the lock is free and nobody waits. */
    enum lt_inline inline_path;
    /* m->_u is all zero before init (a statically initialised lock is never passed to init
     * before its first use; the all-zero state must therefore be a valid unlocked lock).
     * init may allocate; it runs exactly once per lock life, before any other operation. */
    int (*init)(lt_mutex_t *m);
    /* 0, or EBUSY when the algorithm can tell that threads still wait for the lock. */
    int (*destroy)(lt_mutex_t *m);
    int (*lock)(lt_mutex_t *m);                                      /* 0 */
    int (*trylock)(lt_mutex_t *m);                                   /* 0 or EBUSY */
    int (*timedlock)(lt_mutex_t *m, const struct timespec *abstime); /* 0, ETIMEDOUT, EINVAL */
    int (*unlock)(lt_mutex_t *m);                                    /* 0 */
    /* Optional: run fn(ctx) under m by the algorithm's own means (delegation, combining).  NULL
     * means "lock, call, unlock" on the calling thread.  flags are lt_execute_ex's hints: an
     * implementation must run fn on the calling thread under LT_EXEC_ON_CALLER, and must not
     * block a combiner or server in a section that may wait (LT_EXEC_MAY_WAIT). */
    void *(*execute)(lt_mutex_t *m, lt_cs_fn fn, void *ctx, unsigned flags);
    /* Optional: lt_execute_trylock by the algorithm's own means.  NULL means "trylock, call,
     * unlock" on the calling thread. */
    int (*execute_trylock)(lt_mutex_t *m, lt_cs_fn fn, void *ctx, void **result);
    /* Optional: lt_cond_timedwait for sections this algorithm runs (e.g. on a server).  NULL
     * means the generic condition variable (cond.c): release m, sleep, re-acquire m. */
    int (*cond_wait)(lt_cond_t *c, lt_mutex_t *m, const struct timespec *abstime);
    /* Optional: in a forked child, where the forking thread is the only thread, on a lock that
     * a thread lost in the fork was acquiring or executing on (mutex.c: fork).  Make the
     * queue empty - no node, request or combiner of a lost thread stays - and leave the lock
     * held by its holder when `held` (the holder's own bookkeeping, e.g. its queue node, is
     * intact: it completed its acquisition), free otherwise.  Runs single-threaded, inside
     * fork: relaxed stores suffice, and it must not allocate or take locks.  NULL: the
     * algorithm's state never names a waiter (spin), or it has its own fork handler. */
    void (*fork_child)(lt_mutex_t *m, int held);

    /* Optional hooks for an algorithm with state beyond its locks (RCL's servers, flat
     * combining's publication records).  The generic runtime calls them for every algorithm
     * that sets them and names none: */
    /* at start-up, once, before any lock is used: read the algorithm's own environment
     * variables; a bad value is reported with lt_config_fatal() */
    void (*configure)(void);
    /* when a thread that used the runtime exits (its thread-local state is still there) */
    void (*thread_exit)(void);
    /* LOCKTUNE_STATS: extra members of site `site`'s object (", \"key\": value" each)... */
    void (*stats_site)(FILE *f, int site);
    /* ...and the algorithm's own top-level object, written as "NAME": {...} */
    void (*stats_json)(FILE *f);
};

/* Registry (registry.c). */
const struct lt_algo *lt_algo_find(const char *name);
const char *lt_algo_names(void); /* "posix, spin, ..." for error messages */
extern const struct lt_algo *const lt_algos[];
extern const unsigned lt_nalgos;

#define LT_ALGORITHM(id) extern const struct lt_algo lt_algo_##id;
#include "algorithms.def"
#undef LT_ALGORITHM

/* Helpers for algorithms: timedlock (timed.c), the rest (mutex.c). */

/* timedlock by polling trylock: spin for the spin budget, then sleep between attempts with
 * exponential back-off (1 us .. 1 ms).  Loses to a queue that never empties: only for rcl's
 * servicing threads (lt_timedlock_handoff is the others'). */
int lt_timedlock_poll(lt_mutex_t *m, int (*trylock)(lt_mutex_t *), const struct timespec *abstime);
/* timedlock that waits its turn under contention: the waiter announces itself and the next
 * release through mutex.c hands it the lock (at most every other release; timed.c).
 * For the algorithms whose unlock releases the lock whoever calls it (the holder's node, if
 * any, is kept in the lock), which is every one but rcl (and posix, which has glibc's). */
int lt_timedlock_handoff(lt_mutex_t *m, int (*trylock)(lt_mutex_t *),
                         const struct timespec *abstime);
/* EINVAL unless 0 <= tv_nsec < 1e9. */
int lt_abstime_check(const struct timespec *abstime);

void lt_misuse_relock(lt_mutex_t *m);

/* lt_execute on the caller's own thread - lock, fn, unlock - for a delegating algorithm's
 * LT_EXEC_ON_CALLER (and, for combining, LT_EXEC_MAY_WAIT) sections; counted as on_caller.
 * Aborts with a message if the lock cannot be taken (lt_execute has no error channel). */
void *lt_execute_on_caller(lt_mutex_t *m, lt_cs_fn fn, void *ctx);

/* Every algorithm calls this once when an acquisition has to wait: the statistics, and the
 * one misuse that always waits - a thread locking a default-type lock it already holds, which
 * is reported here (it then deadlocks, as POSIX says), at no cost to the uncontended path. */
static inline void lt_contended(lt_mutex_t *m)
{
    lt_stat(m->_site, LT_STAT_CONTENDED);
    /* relaxed: our own tid can only be there if we stored it. */
    if (__builtin_expect(__atomic_load_n(&m->_owner, __ATOMIC_RELAXED) == lt_self(), 0))
        lt_misuse_relock(m);
}

/* Every algorithm ends each successful acquisition (lock, trylock, timedlock) with this:
 * the holder's tid in the owner field (misuse detection, mutex types) and the statistics.
 * relaxed: other threads read the owner field only to detect misuse. */
int lt_acquired_slow(lt_mutex_t *m);
static inline int lt_acquired(lt_mutex_t *m)
{
    int32_t tid = lt_thread_self.tid;
    if (__builtin_expect(tid == 0 || lt_stats_on, 0))
        return lt_acquired_slow(m); /* a tail call: the fast path needs no stack frame */
    __atomic_store_n(&m->_owner, tid, __ATOMIC_RELAXED);
    return 0;
}

/* The lock's waiting policy (wait.h): its site's choice, or its algorithm's default.
 * relaxed: written before the binding was published, which the caller has acquired. */
static inline enum lt_wait_policy lt_wait_of(const lt_mutex_t *m)
{
    return (enum lt_wait_policy)(
        (__atomic_load_n(&m->_flags, __ATOMIC_RELAXED) & LT_MUTEX_F_WAIT_MASK_) >>
        LT_MUTEX_F_WAIT_SHIFT_);
}

/* The statistics site of a lock. */
static inline int lt_site(const lt_mutex_t *m)
{
    return m->_site;
}

/* The algorithm's state: m->_u viewed as type T. */
#define LT_STATE(m, T) ((T *)(void *)&(m)->_u)
#define LT_STATE_FITS(T)                                                                           \
    _Static_assert(sizeof(T) <= sizeof(((lt_mutex_t *)0)->_u), #T " must fit in lt_mutex_t")

#endif
