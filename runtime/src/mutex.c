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
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "algo.h"
#include "config.h"
#include "diag.h"
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

static void prepare(const struct lt_algo *a)
{
    if (a != &lt_algo_posix)
        lt_wait_calibrate(); /* the spin budget of every runtime-side wait */
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
        prepare(a);
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
    prepare(a);
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
    uint32_t f = m->_flags;
    if (f & LT_MUTEX_F_NATIVE_)
        return native_acquire(m, mode, abstime);
    const struct lt_algo *a = ops_load(m);
    if (!bound(a) && !(a = bind_slow(m))) {
        lt_misuse(m, LT_MISUSE_DESTROYED);
        return EINVAL;
    }
    int32_t me = lt_self();
    uint32_t type = f & LT_MUTEX_F_TYPE_MASK_;
    if (owner_load(m) == me) {
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
    int r = mode == MODE_LOCK  ? a->lock(m)
            : mode == MODE_TRY ? a->trylock(m)
                               : a->timedlock(m, abstime);
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

LT_API int lt_mutex_lock(lt_mutex_t *m)
{
    const struct lt_algo *a = ops_load(m);
    if (__builtin_expect(bound(a) && m->_flags == 0, 1))
        return a->lock(m); /* records the owner (lt_acquired); a relock waits: lt_contended */
    return acquire_slow(m, MODE_LOCK, NULL);
}

LT_API int lt_mutex_trylock(lt_mutex_t *m)
{
    const struct lt_algo *a = ops_load(m);
    if (__builtin_expect(bound(a) && m->_flags == 0 && !lt_stats_on, 1))
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
    uint32_t f = m->_flags;
    if (f & LT_MUTEX_F_NATIVE_)
        return pthread_mutex_unlock(&m->_u._posix);
    const struct lt_algo *a = ops_load(m);
    if (!bound(a) && !(a = bind_slow(m))) {
        lt_misuse(m, LT_MISUSE_DESTROYED);
        return EINVAL;
    }
    int32_t me = lt_self(), owner = owner_load(m);
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
    m->_count = 0;
    owner_store(m, 0);
    return a->unlock(m);
}

LT_API int lt_mutex_unlock(lt_mutex_t *m)
{
    const struct lt_algo *a = ops_load(m);
    /* A holder knows its tid already (lt_acquired): no call on this path, hence no frame.
     * Deferred condition wake-ups (cond.c) are done on the slow path, after the release. */
    int32_t me = lt_thread_self.tid;
    if (__builtin_expect(bound(a) && m->_flags == 0 && me != 0 && owner_load(m) == me &&
                             !lt_thread_self.deferred,
                         1)) {
        owner_store(m, 0);
        return a->unlock(m);
    }
    return release_slow_and_flush(m);
}

LT_API int lt_mutex_destroy(lt_mutex_t *m)
{
    if (m->_flags & LT_MUTEX_F_NATIVE_) {
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
    uint32_t f = m->_flags;
    return f == 0 || (f == LT_MUTEX_F_RECURSIVE_ && (a->caps & LT_CAP_RECURSIVE_EXEC));
}

LT_API void *lt_execute_ex(lt_mutex_t *m, lt_cs_fn fn, void *ctx, unsigned flags)
{
    const struct lt_algo *a = ops_load(m);
    if (__builtin_expect(!bound(a), 0) && !(m->_flags & LT_MUTEX_F_NATIVE_))
        a = bind_slow(m);
    if (a && bound(a) && a->execute && own_execute(a, m))
        return a->execute(m, fn, ctx, flags);
    int r = lt_mutex_lock(m);
    if (r != 0) {
        /* No error channel: running fn unprotected or not at all would both be silent. */
        fprintf(stderr, "locktune: error: lt_execute cannot take its lock (%s)\n", strerror(r));
        abort();
    }
    void *v = fn(ctx);
    lt_mutex_unlock(m);
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
    if (__builtin_expect(!bound(a), 0) && !(m->_flags & LT_MUTEX_F_NATIVE_))
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
    if (m->_flags & LT_MUTEX_F_NATIVE_)
        return lt_algo_posix.name;
    const struct lt_algo *a = ops_load(m);
    if (!bound(a) && !(a = bind_slow(m)))
        return lt_site_algo(m->_site)->name;
    return a->name;
}

/* ---- for condition variables (mutex.h) ---- */

int lt_mutex_held(const lt_mutex_t *m)
{
    if (m->_flags & LT_MUTEX_F_NATIVE_)
        return m->_u._posix.__data.__owner == lt_self();
    return bound(ops_load(m)) && owner_load(m) == lt_self();
}

int lt_mutex_cond_check(lt_mutex_t *m)
{
    if (m->_flags & LT_MUTEX_F_NATIVE_) /* glibc records the holder's tid for every type */
        return m->_u._posix.__data.__owner == lt_self() ? 0 : EPERM;
    const struct lt_algo *a = ops_load(m);
    if (a == OPS_DESTROYED) {
        lt_misuse(m, LT_MISUSE_DESTROYED);
        return EINVAL;
    }
    if (!bound(a) || owner_load(m) != lt_self()) {
        if (!(m->_flags & LT_MUTEX_F_TYPE_MASK_))
            lt_misuse(m, LT_MISUSE_COND_NOT_HELD);
        return EPERM;
    }
    return 0;
}

void lt_mutex_cond_release(lt_mutex_t *m, uint32_t *depth)
{
    if (m->_flags & LT_MUTEX_F_NATIVE_) {
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
    if (m->_flags & LT_MUTEX_F_NATIVE_) {
        pthread_mutex_lock(&m->_u._posix);
        return;
    }
    ops_load(m)->lock(m); /* records the owner */
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

int lt_abstime_check(const struct timespec *abstime)
{
    return abstime && abstime->tv_nsec >= 0 && abstime->tv_nsec < 1000000000L ? 0 : EINVAL;
}

static int64_t ns_until(const struct timespec *abstime)
{
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    return (int64_t)(abstime->tv_sec - now.tv_sec) * 1000000000 + (abstime->tv_nsec - now.tv_nsec);
}

int lt_timedlock_poll(lt_mutex_t *m, int (*trylock)(lt_mutex_t *), const struct timespec *abstime)
{
    if (trylock(m) == 0)
        return 0;
    if (lt_abstime_check(abstime))
        return EINVAL;
    lt_contended(m);
    struct lt_spin s = LT_SPIN_INIT;
    int64_t delay = 1000;
    for (;;) {
        if (trylock(m) == 0)
            return 0;
        int64_t left = ns_until(abstime);
        if (left <= 0)
            return ETIMEDOUT;
        if (!lt_spin_poll(&s, LT_WAIT_PARK))
            continue; /* within the spin budget: poll again */
        int64_t d = delay < left ? delay : left;
        struct timespec ts = {(time_t)(d / 1000000000), (long)(d % 1000000000)};
        nanosleep(&ts, NULL);
        delay = delay * 2 > 1000000 ? 1000000 : delay * 2;
    }
}

__attribute__((constructor)) static void runtime_start(void)
{
    lt_runtime_init(); /* a bad LOCKTUNE_* value stops the program here, at start-up */
}
