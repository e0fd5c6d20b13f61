/*
 * mutex.c - the public lt_mutex_* and lt_execute entry points.
 *
 * Every call loads the lock's algorithm.  The fast path - a bound lock of the default type -
 * calls the algorithm and keeps the owner field (the holder's tid, which also detects misuse
 * cheaply).  Everything else takes a slow path: binding a lock on first use (statically
 * initialised locks never pass through lt_mutex_init), recursive and error-checking types,
 * process-shared/robust locks (plain glibc mutexes), misuse, statistics.
 *
 * Binding, drawn as the values of m->_ops:
 *
 *   NULL --(first user: CAS)--> BINDING --(algorithm init done: release store)--> algorithm
 *     ^                                                                              |
 *     +--------------------- lt_mutex_init (memset) <-- DESTROYED <--lt_mutex_destroy--+
 *
 * Threads that find BINDING wait for the publication; a lock is initialised exactly once.
 *
 * fork.  In a forked child only the forking thread exists, but every lock keeps the state the
 * parent's threads left in it: queue nodes of threads that are gone, requests they published
 * for a combiner, a combiner that is gone.  A queue lock would hand the lock to a waiter that
 * does not exist (the child hangs); a combining lock would run a section of a thread that does
 * not exist.  The protocol:
 *
 *   - Every lock operation that can wait or combine - the algorithm's lock, timedlock and
 *     execute, and a condition wait's re-acquisition - runs with lt_thread_self.waiting = m
 *     (the previous value restored after: a combiner's sections nest).  The store precedes the
 *     call, which the compiler cannot move it past (the callee may read it), and the fork
 *     copies each thread's memory as of one point of its program order; so a thread the child
 *     lost is in a lock's queue, or holds a request in it, or combines on it, only if its
 *     `waiting` names that lock.  The fast path pays a TLS load and two TLS stores; a thread
 *     goes through the slow path once to learn its tid, which puts it on the thread list.
 *   - The runtime's child fork handler (thread.c; installed by a constructor, so it runs
 *     before the program's child handlers, which may release locks) walks the thread list and
 *     calls lt_mutex_fork_repair for each lock a lost thread was waiting on: the algorithm's
 *     fork_child makes the lock's queue empty and leaves it held when its holder had finished
 *     acquiring it (the owner field is set: the forking thread, say by a pthread_atfork
 *     prepare handler, which can then release it in the child), free otherwise.  A lock held
 *     at the fork by a thread the child lost stays held, as a glibc mutex does: the data it
 *     protects may be half-updated.  So does one a lost thread was releasing with nobody
 *     waiting (unlock is not recorded: it keeps the unlock fast path free of stores).  A
 *     combining session of a lost thread is not a hold: its lock is freed, and no section a
 *     lost thread published ever runs.
 *   - The forking thread's own locks need nothing but their owner field, which names the
 *     thread's tid in the parent: the child's thread recognises it (owned_by_me).  It cannot
 *     be waiting for a lock: it was forking.  (A fork called from inside a section that a
 *     combining lock runs for lt_execute - the forking thread is a combiner - is not
 *     supported: the child would go on combining the parent's queue.  rcl supports it: its
 *     servers have their own fork handlers, rcl/server.c.)
 *   - Algorithms whose state cannot name a lost thread need no fork_child: posix (glibc's),
 *     rcl (rcl/server.c restarts the servers and forgets the clients).  spin and fc name lost
 *     threads only in their impatient tickets (impatient.h), which their fork_child forgets
 *     (fc's publications carry a fork generation: fc.c).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "algo.h"
#include "algo/inline.h"
#include "config.h"
#include "diag.h"
#include "futex.h"
#include "lll.h"
#include "mutex.h"
#include "thread.h"

_Static_assert(sizeof(lt_mutex_t) == 24 + sizeof(pthread_mutex_t) || sizeof(lt_mutex_t) == 24 + 40,
               "lt_mutex_t is 24 bytes of bookkeeping plus the algorithm state");
#if defined(__x86_64__)
_Static_assert(sizeof(lt_mutex_t) == 64, "lt_mutex_t is 64 bytes on x86-64 (ABI)");
_Static_assert(sizeof(lt_cond_t) == 56, "lt_cond_t is 56 bytes on x86-64 (ABI)");
#endif

#define OPS_BINDING   ((const struct lt_algo *)1)
#define OPS_DESTROYED ((const struct lt_algo *)2)

enum mode { MODE_LOCK, MODE_TRY, MODE_TIMED };

static inline const struct lt_algo *ops_load(const lt_mutex_t *m)
{
    /* acquire: pairs with the release store that published the binding, so the algorithm's
     * initialisation of m->_u happens before its first operation. */
    return __atomic_load_n((const struct lt_algo *const *)&m->_ops, __ATOMIC_ACQUIRE);
}

static inline int bound(const struct lt_algo *a)
{
    return (uintptr_t)a > (uintptr_t)OPS_DESTROYED;
}

/* The owner field is read by other threads only to detect misuse: relaxed is enough.  The
 * holder's own store and load are ordered with its acquire and release by the lock itself. */
static inline int32_t owner_load(const lt_mutex_t *m)
{
    return __atomic_load_n(&m->_owner, __ATOMIC_RELAXED);
}

static inline void owner_store(lt_mutex_t *m, int32_t tid)
{
    __atomic_store_n(&m->_owner, tid, __ATOMIC_RELAXED);
}

/* Whether the owner field names the calling thread (tid me).  In a forked child, a lock the
 * forking thread held still names its tid in the parent (forked_tid): that is us too; the
 * field is brought up to date here, on the slow path the stale tid sends us to.  (Across a
 * second fork, locks held since before the first one are no longer recognised.) */
static inline int owned_by_me(lt_mutex_t *m, int32_t me)
{
    int32_t owner = owner_load(m);
    if (owner == me)
        return 1;
    if (__builtin_expect(owner == 0 || owner != lt_thread_self.forked_tid, 1))
        return 0;
    owner_store(m, me);
    return 1;
}

/* m->_flags: written by lt_mutex_init before the lock is shared, then only the TIMED and
 * HANDED bits change (under the timed-waiter list's lock, by atomic OR/AND: see timed.c).
 * relaxed: the bits are hints that send the lock's operations to the slow path; see there. */
static inline uint32_t flags_load(const lt_mutex_t *m)
{
    return __atomic_load_n(&m->_flags, __ATOMIC_RELAXED);
}

/* The flags that send an operation off the fast path: all but the waiting policy (algo.h),
 * which only the algorithm reads, and the inline fast path, which only the fast path reads. */
#define FAST_FLAGS_IGNORED (LT_MUTEX_F_WAIT_MASK_ | LT_MUTEX_F_INLINE_MASK_)

static inline uint32_t fast_flags(const lt_mutex_t *m)
{
    return flags_load(m) & ~FAST_FLAGS_IGNORED;
}

/* Before a lock's binding is published: the spin budget, and the lock's waiting policy and
 * inline fast path in its flags (lt_wait_of, "Inline fast paths" below; none with statistics,
 * which lt_stats_on turns on once at start-up).  An atomic AND then OR: the other bits stay as
 * they are. */
static void prepare(lt_mutex_t *m, const struct lt_algo *a)
{
    if (a != &lt_algo_posix)
        lt_wait_calibrate(); /* the spin budget of every runtime-side wait */
    uint32_t w = (uint32_t)lt_site_wait(m->_site) << LT_MUTEX_F_WAIT_SHIFT_;
    uint32_t i = lt_stats_on ? 0 : (uint32_t)a->inline_path << LT_MUTEX_F_INLINE_SHIFT_;
    __atomic_fetch_and(&m->_flags, ~FAST_FLAGS_IGNORED, __ATOMIC_RELAXED);
    __atomic_fetch_or(&m->_flags, (w & LT_MUTEX_F_WAIT_MASK_) | (i & LT_MUTEX_F_INLINE_MASK_),
                      __ATOMIC_RELAXED);
}

/* Locks being bound right now.  A thread that forks while another one binds a lock leaves
 * that lock BINDING for ever in the child, where the binder does not exist (binding an `rcl`
 * lock starts a server: the window is wide); the child's fork handler resets such locks to
 * unbound, and the child binds them again.  Best effort: when all slots are taken, a binding
 * is not recorded. */
#define BINDING_SLOTS 64
static lt_mutex_t *binding[BINDING_SLOTS]; /* atomic */

static int binding_enter(lt_mutex_t *m)
{
    for (int i = 0; i < BINDING_SLOTS; i++) {
        lt_mutex_t *none = NULL;
        if (!__atomic_load_n(&binding[i], __ATOMIC_RELAXED) &&
            __atomic_compare_exchange_n(&binding[i], &none, m, 0, __ATOMIC_RELAXED,
                                        __ATOMIC_RELAXED))
            return i;
    }
    return -1;
}

void lt_mutex_after_fork_child(void)
{
    for (int i = 0; i < BINDING_SLOTS; i++) {
        lt_mutex_t *m = binding[i];
        binding[i] = NULL;
        if (m && m->_ops == OPS_BINDING)
            m->_ops = NULL;
    }
}

void lt_mutex_fork_repair(lt_mutex_t *m)
{
    if (flags_load(m) & LT_MUTEX_F_NATIVE_)
        return;
    const struct lt_algo *a = ops_load(m);
    if (!bound(a) || !a->fork_child)
        return;
    /* Held: its holder completed the acquisition (lt_acquired is an acquisition's last step,
     * and mutex.c clears the field before the algorithm's unlock). */
    a->fork_child(m, owner_load(m) != 0);
}

/* The lock operations that may wait or combine run with lt_thread_self.waiting = m (see the
 * header); `prev` is restored after. */
static inline struct lt_thread *waiting_enter(lt_mutex_t *m, lt_mutex_t **prev)
{
    struct lt_thread *t = &lt_thread_self;
    *prev = t->waiting;
    t->waiting = m;
    return t;
}

static __attribute__((noinline)) const struct lt_algo *bind_slow(lt_mutex_t *m)
{
    lt_runtime_init();
    lt_runtime_check_sites();
    for (;;) {
        const struct lt_algo *a = ops_load(m);
        if (bound(a))
            return a;
        if (a == OPS_DESTROYED)
            return NULL;
        if (a == OPS_BINDING) {
            sched_yield(); /* binding takes microseconds, once per lock */
            continue;
        }
        const void *expected = NULL;
        /* relaxed: BINDING publishes nothing; the release store below does. */
        if (!__atomic_compare_exchange_n(&m->_ops, &expected, (const void *)OPS_BINDING, 0,
                                         __ATOMIC_RELAXED, __ATOMIC_RELAXED))
            continue;
        int slot = binding_enter(m);
        a = lt_site_algo(m->_site);
        prepare(m, a);
        if (a->init(m) != 0) {
            fprintf(stderr, "locktune: error: cannot initialise a %s lock\n", a->name);
            abort();
        }
        lt_stat(m->_site, LT_STAT_INSTANCES);
        __atomic_store_n(&m->_ops, (const void *)a, __ATOMIC_RELEASE);
        if (slot >= 0)
            __atomic_store_n(&binding[slot], NULL, __ATOMIC_RELAXED);
        return a;
    }
}

LT_API int lt_mutex_init(lt_mutex_t *m, const pthread_mutexattr_t *attr, int site)
{
    lt_runtime_init();
    lt_runtime_check_sites();
    uint32_t flags = 0;
    enum lt_stat fallback = LT_STAT_N;
    if (attr) {
        int type = PTHREAD_MUTEX_DEFAULT, pshared = PTHREAD_PROCESS_PRIVATE;
        int robust = PTHREAD_MUTEX_STALLED, protocol = PTHREAD_PRIO_NONE;
        if (pthread_mutexattr_gettype(attr, &type) != 0)
            return EINVAL;
        pthread_mutexattr_getpshared(attr, &pshared);
        pthread_mutexattr_getrobust(attr, &robust);
        pthread_mutexattr_getprotocol(attr, &protocol);
        if (type == PTHREAD_MUTEX_RECURSIVE)
            flags = LT_MUTEX_F_RECURSIVE_;
        else if (type == PTHREAD_MUTEX_ERRORCHECK)
            flags = LT_MUTEX_F_ERRORCHECK_;
        if (pshared == PTHREAD_PROCESS_SHARED)
            fallback = LT_STAT_FALLBACK_PSHARED;
        else if (robust == PTHREAD_MUTEX_ROBUST)
            fallback = LT_STAT_FALLBACK_ROBUST;
        else if (protocol != PTHREAD_PRIO_NONE)
            fallback = LT_STAT_FALLBACK_PRIO;
    }
    memset(m, 0, sizeof *m);
    m->_site = site;
    if (fallback != LT_STAT_N) {
        /* glibc keeps the type, the sharing and the robustness itself. */
        int r = pthread_mutex_init(&m->_u._posix, attr);
        if (r != 0)
            return r;
        m->_flags = LT_MUTEX_F_NATIVE_ | flags;
        lt_stat(site, LT_STAT_INSTANCES);
        lt_stat(site, fallback);
        return 0;
    }
    m->_flags = flags;
    const struct lt_algo *a = lt_site_algo(site);
    prepare(m, a);
    int r = a->init(m);
    if (r != 0)
        return r;
    lt_stat(site, LT_STAT_INSTANCES);
    __atomic_store_n(&m->_ops, (const void *)a, __ATOMIC_RELEASE);
    return 0;
}

static int native_acquire(lt_mutex_t *m, enum mode mode, const struct timespec *abstime)
{
    int r = mode == MODE_LOCK  ? pthread_mutex_lock(&m->_u._posix)
            : mode == MODE_TRY ? pthread_mutex_trylock(&m->_u._posix)
                               : pthread_mutex_timedlock(&m->_u._posix, abstime);
    if (r == 0 || r == EOWNERDEAD)
        lt_stat(m->_site, LT_STAT_ACQUIRED);
    else if (r == EBUSY)
        lt_stat(m->_site, LT_STAT_TRY_FAILED);
    else if (r == ETIMEDOUT)
        lt_stat(m->_site, LT_STAT_TIMEDOUT);
    return r;
}

static __attribute__((noinline)) int acquire_slow(lt_mutex_t *m, enum mode mode,
                                                  const struct timespec *abstime)
{
    uint32_t f = flags_load(m);
    if (f & LT_MUTEX_F_NATIVE_)
        return native_acquire(m, mode, abstime);
    const struct lt_algo *a = ops_load(m);
    if (!bound(a) && !(a = bind_slow(m))) {
        lt_misuse(m, LT_MISUSE_DESTROYED);
        return EINVAL;
    }
    int32_t me = lt_self(); /* puts this thread on the thread list (fork) */
    uint32_t type = f & LT_MUTEX_F_TYPE_MASK_;
    if (owned_by_me(m, me)) {
        if (type == LT_MUTEX_F_RECURSIVE_) {
            if (m->_count == UINT32_MAX)
                return EAGAIN;
            m->_count++;
            lt_stat(m->_site, LT_STAT_ACQUIRED);
            return 0;
        }
        if (mode == MODE_TRY) {
            lt_stat(m->_site, LT_STAT_TRY_FAILED);
            return EBUSY;
        }
        if (type == LT_MUTEX_F_ERRORCHECK_)
            return EDEADLK;
        /* default type: the algorithm reports it when it waits (lt_contended), then deadlocks
         * as POSIX says (or times out) */
    }
    lt_mutex_t *prev;
    struct lt_thread *t = waiting_enter(m, &prev);
    int r = mode == MODE_LOCK  ? a->lock(m)
            : mode == MODE_TRY ? a->trylock(m)
                               : a->timedlock(m, abstime);
    t->waiting = prev;
    if (r != 0) {
        if (r == EBUSY)
            lt_stat(m->_site, LT_STAT_TRY_FAILED);
        else if (r == ETIMEDOUT)
            lt_stat(m->_site, LT_STAT_TIMEDOUT);
        return r;
    }
    m->_count = 1; /* the algorithm recorded the owner (lt_acquired) */
    return 0;
}

/* Inline fast paths.  The algorithms sites most often run - posix, that of every site nobody
 * configured, and the ShflLocks (shfl-block is what the report recommends when threads
 * outnumber CPUs) - name an inline path in their table (.inline_path, algo.h), which binding
 * copies into the lock's flags.  With it, a free lock is taken and released through
 * algo/inline.h, and posix's lock is called directly: no indirect call through the table, and
 * lt_mutex_lock needs no stack frame (the table's lock is a tail call to lock_by_table).  On
 * the development VM that is 1-2 ns a pair less, where glibc's own pair costs 6-8 ns.  The
 * bits are never set while statistics are on (lt_acquired_slow counts).  Nothing here waits for
 * a thread the fork protocol would have to know about, so `waiting` is not set; a lock found
 * taken goes on through the table, which sets it.  The other algorithms pay a test of flags
 * already loaded, and lt_mutex_lock's tail call to lock_by_table.
 *
 * table_lock: the table's lock, with `waiting` set around it (the fork protocol); inline into
 * lt_execute, and a function of its own (lock_by_table) for lt_mutex_lock's tail call. */
static inline __attribute__((always_inline)) int table_lock(lt_mutex_t *m, const struct lt_algo *a)
{
    lt_mutex_t *prev;
    struct lt_thread *t = waiting_enter(m, &prev);
    int r = a->lock(m); /* records the owner (lt_acquired); a relock waits: lt_contended */
    t->waiting = prev;
    return r;
}

static __attribute__((noinline)) int lock_by_table(lt_mutex_t *m, const struct lt_algo *a)
{
    return table_lock(m, a);
}

static inline unsigned inline_path(uint32_t f)
{
    return (f & LT_MUTEX_F_INLINE_MASK_) >> LT_MUTEX_F_INLINE_SHIFT_;
}

/* fast_unlock: the release, inline for the locks that have an inline path, else by the table. */
static inline __attribute__((always_inline)) int fast_unlock(uint32_t f, const struct lt_algo *a,
                                                             lt_mutex_t *m)
{
    unsigned path = inline_path(f);
    return path == LT_INLINE_NONE ? a->unlock(m) : lt_inline_release(path, m);
}

/* The fast paths of lock and unlock, inlined into lt_mutex_lock/unlock and into lt_execute's
 * path for algorithms that have no execute of their own (a section then costs what a
 * lock/unlock pair costs, without two more calls).  `frameless` (lt_mutex_lock): the table's
 * lock by a tail call to lock_by_table, so that the inline paths run without a stack frame;
 * lt_execute, which has one anyway, inlines it. */
static inline __attribute__((always_inline)) int mutex_lock(lt_mutex_t *m, bool frameless)
{
    const struct lt_algo *a = ops_load(m);
    uint32_t f = flags_load(m);
    int32_t me = lt_thread_self.tid;
    if (__builtin_expect(bound(a) && (f & ~FAST_FLAGS_IGNORED) == 0 && me != 0, 1)) {
        unsigned path = inline_path(f);
        if (path == LT_INLINE_POSIX)
            return lt_posix_lock_inline(m); /* a direct call; it records the owner */
        if (lt_inline_take(path, m)) {
            owner_store(m, me); /* as lt_acquired */
            return 0;
        }
        return frameless ? lock_by_table(m, a) : table_lock(m, a);
    }
    return acquire_slow(m, MODE_LOCK, NULL);
}

LT_API int lt_mutex_lock(lt_mutex_t *m)
{
    return mutex_lock(m, true);
}

LT_API int lt_mutex_trylock(lt_mutex_t *m)
{
    const struct lt_algo *a = ops_load(m);
    if (__builtin_expect(bound(a) && fast_flags(m) == 0 && !lt_stats_on, 1))
        return a->trylock(m); /* EBUSY on a lock the caller holds, too */
    return acquire_slow(m, MODE_TRY, NULL);
}

LT_API int lt_mutex_timedlock(lt_mutex_t *m, const struct timespec *abstime)
{
    return acquire_slow(m, MODE_TIMED, abstime);
}

static int release_slow(lt_mutex_t *m);

/* Release, then wake the condition waiters this thread signalled while holding m. */
static __attribute__((noinline)) int release_slow_and_flush(lt_mutex_t *m)
{
    int r = release_slow(m);
    if (r == 0 && lt_thread_self.deferred_mutex == m && !lt_mutex_held(m))
        lt_cond_flush_deferred();
    return r;
}

static int release_slow(lt_mutex_t *m)
{
    uint32_t f = flags_load(m);
    if (f & LT_MUTEX_F_NATIVE_)
        return pthread_mutex_unlock(&m->_u._posix);
    const struct lt_algo *a = ops_load(m);
    if (!bound(a) && !(a = bind_slow(m))) {
        lt_misuse(m, LT_MISUSE_DESTROYED);
        return EINVAL;
    }
    int32_t me = lt_self(), owner = owned_by_me(m, me) ? me : owner_load(m);
    uint32_t type = f & LT_MUTEX_F_TYPE_MASK_;
    if (owner != me) {
        if (type != 0)
            return EPERM; /* what POSIX specifies for recursive and error-checking locks */
        if (owner == 0) {
            lt_misuse(m, LT_MISUSE_UNLOCK_FREE);
            return EPERM; /* unlocking would corrupt the algorithm's state: refuse */
        }
        lt_misuse(m, LT_MISUSE_UNLOCK_FOREIGN); /* reported, then done: glibc allows it */
    } else if (type == LT_MUTEX_F_RECURSIVE_ && --m->_count > 0) {
        return 0;
    }
    if ((flags_load(m) & (LT_MUTEX_F_TIMED_ | LT_MUTEX_F_HANDED_)) && lt_timed_handoff(m))
        return 0; /* a timed waiter holds it now */
    m->_count = 0;
    owner_store(m, 0);
    return a->unlock(m);
}

static inline __attribute__((always_inline)) int mutex_unlock(lt_mutex_t *m)
{
    const struct lt_algo *a = ops_load(m);
    /* A holder knows its tid already (lt_acquired): no call on this path, hence no frame.
     * Deferred condition wake-ups (cond.c) are done on the slow path, after the release. */
    int32_t me = lt_thread_self.tid;
    uint32_t f = flags_load(m);
    if (__builtin_expect(bound(a) && (f & ~FAST_FLAGS_IGNORED) == 0 && me != 0 &&
                             owner_load(m) == me && !lt_thread_self.deferred,
                         1)) {
        owner_store(m, 0);
        return fast_unlock(f, a, m);
    }
    return release_slow_and_flush(m);
}

LT_API int lt_mutex_unlock(lt_mutex_t *m)
{
    return mutex_unlock(m);
}

LT_API int lt_mutex_destroy(lt_mutex_t *m)
{
    if (flags_load(m) & LT_MUTEX_F_NATIVE_) {
        int r = pthread_mutex_destroy(&m->_u._posix);
        if (r == 0)
            lt_stat(m->_site, LT_STAT_DESTROYED);
        return r;
    }
    const struct lt_algo *a = ops_load(m);
    if (a == OPS_DESTROYED) {
        lt_misuse(m, LT_MISUSE_DESTROYED);
        return EINVAL;
    }
    if (bound(a)) {
        if (owner_load(m) != 0) {
            lt_misuse(m, LT_MISUSE_DESTROY_HELD);
            return EBUSY;
        }
        if (flags_load(m) & LT_MUTEX_F_TIMED_) { /* a timed waiter waits for it */
            lt_misuse(m, LT_MISUSE_DESTROY_BUSY);
            return EBUSY;
        }
        int r = a->destroy(m);
        if (r == EBUSY)
            lt_misuse(m, LT_MISUSE_DESTROY_BUSY);
        if (r != 0)
            return r;
        lt_stat(m->_site, LT_STAT_DESTROYED);
    }
    /* A lock never used (still unbound) needs no work.  relaxed is enough: using a lock
     * concurrently with its destruction is the program's error, reported when seen. */
    __atomic_store_n(&m->_ops, (const void *)OPS_DESTROYED, __ATOMIC_RELAXED);
    return 0;
}

/* Whether a's own execute (or execute_trylock) takes m: a default-type lock, or a recursive one
 * when the algorithm keeps the recursion itself. */
static inline int own_execute(const struct lt_algo *a, const lt_mutex_t *m)
{
    uint32_t f = fast_flags(m);
    return f == 0 || (f == LT_MUTEX_F_RECURSIVE_ && (a->caps & LT_CAP_RECURSIVE_EXEC));
}

LT_API void *lt_execute_ex(lt_mutex_t *m, lt_cs_fn fn, void *ctx, unsigned flags)
{
    const struct lt_algo *a = ops_load(m);
    if (__builtin_expect(!bound(a), 0) && !(flags_load(m) & LT_MUTEX_F_NATIVE_))
        a = bind_slow(m);
    if (a && bound(a) && a->execute && own_execute(a, m)) {
        lt_self(); /* on the thread list (fork) */
        lt_mutex_t *prev;
        struct lt_thread *t = waiting_enter(m, &prev);
        void *v = a->execute(m, fn, ctx, flags);
        t->waiting = prev;
        return v;
    }
    int r = mutex_lock(m, false);
    if (r != 0) {
        /* No error channel: running fn unprotected or not at all would both be silent. */
        fprintf(stderr, "locktune: error: lt_execute cannot take its lock (%s)\n", strerror(r));
        abort();
    }
    void *v = fn(ctx);
    mutex_unlock(m);
    return v;
}

void *lt_execute_on_caller(lt_mutex_t *m, lt_cs_fn fn, void *ctx)
{
    int r = lt_mutex_lock(m);
    if (r != 0) {
        fprintf(stderr, "locktune: error: lt_execute cannot take its lock (%s)\n", strerror(r));
        abort();
    }
    lt_stat(m->_site, LT_STAT_ON_CALLER);
    void *v = fn(ctx);
    lt_mutex_unlock(m);
    return v;
}

LT_API void *lt_execute(lt_mutex_t *m, lt_cs_fn fn, void *ctx)
{
    return lt_execute_ex(m, fn, ctx, 0);
}

LT_API int lt_execute_trylock(lt_mutex_t *m, lt_cs_fn fn, void *ctx, void **result)
{
    const struct lt_algo *a = ops_load(m);
    if (__builtin_expect(!bound(a), 0) && !(flags_load(m) & LT_MUTEX_F_NATIVE_))
        a = bind_slow(m);
    if (a && bound(a) && a->execute_trylock && own_execute(a, m))
        return a->execute_trylock(m, fn, ctx, result);
    int r = lt_mutex_trylock(m);
    if (r != 0)
        return r;
    void *v = fn(ctx);
    lt_mutex_unlock(m);
    if (result)
        *result = v;
    return 0;
}

LT_API const char *lt_mutex_algorithm(lt_mutex_t *m)
{
    if (flags_load(m) & LT_MUTEX_F_NATIVE_)
        return lt_algo_posix.name;
    const struct lt_algo *a = ops_load(m);
    if (!bound(a) && !(a = bind_slow(m)))
        return lt_site_algo(m->_site)->name;
    return a->name;
}

/* ---- for condition variables (mutex.h) ---- */

int lt_mutex_held(const lt_mutex_t *m)
{
    if (flags_load(m) & LT_MUTEX_F_NATIVE_)
        return m->_u._posix.__data.__owner == lt_self();
    return bound(ops_load(m)) && owned_by_me((lt_mutex_t *)m, lt_self());
}

int lt_mutex_cond_check(lt_mutex_t *m)
{
    if (flags_load(m) & LT_MUTEX_F_NATIVE_) /* glibc records the holder's tid for every type */
        return m->_u._posix.__data.__owner == lt_self() ? 0 : EPERM;
    const struct lt_algo *a = ops_load(m);
    if (a == OPS_DESTROYED) {
        lt_misuse(m, LT_MISUSE_DESTROYED);
        return EINVAL;
    }
    if (!bound(a) || !owned_by_me(m, lt_self())) {
        if (!(flags_load(m) & LT_MUTEX_F_TYPE_MASK_))
            lt_misuse(m, LT_MISUSE_COND_NOT_HELD);
        return EPERM;
    }
    return 0;
}

void lt_mutex_cond_release(lt_mutex_t *m, uint32_t *depth)
{
    if (flags_load(m) & LT_MUTEX_F_NATIVE_) {
        *depth = 1;
        pthread_mutex_unlock(&m->_u._posix);
    } else {
        const struct lt_algo *a = ops_load(m);
        *depth = m->_count ? m->_count : 1;
        m->_count = 0;
        owner_store(m, 0);
        lt_thread_self.cond_release = 1;
        a->unlock(m);
        lt_thread_self.cond_release = 0;
    }
    if (lt_thread_self.deferred_mutex == m)
        lt_cond_flush_deferred();
}

void lt_mutex_cond_reacquire(lt_mutex_t *m, uint32_t depth)
{
    if (flags_load(m) & LT_MUTEX_F_NATIVE_) {
        pthread_mutex_lock(&m->_u._posix);
        return;
    }
    lt_mutex_t *prev;
    struct lt_thread *t = waiting_enter(m, &prev);
    ops_load(m)->lock(m); /* records the owner */
    t->waiting = prev;
    m->_count = depth;
}

/* ---- for algorithms (algo.h) ---- */

int lt_acquired_slow(lt_mutex_t *m)
{
    owner_store(m, lt_self());
    lt_stat(m->_site, LT_STAT_ACQUIRED);
    return 0;
}

void lt_misuse_relock(lt_mutex_t *m)
{
    lt_misuse(m, LT_MISUSE_RELOCK);
}

__attribute__((constructor)) static void runtime_start(void)
{
    lt_runtime_init(); /* a bad LOCKTUNE_* value stops the program here, at start-up */
}
