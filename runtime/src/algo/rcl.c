/*
 * rcl - Remote Core Locking (Lozi, David, Thomas, Lawall & Muller, TOCS 2016): every critical
 * section of a lock runs on the lock's server, a CPU that runs nothing else; the data stays in
 * its caches and the lock never changes hands between CPUs.  The runtime - servers,
 * mailboxes, servicing threads - is in rcl/; this file is the lock on top of it.
 *
 * State: the holder (client id + 1 of whoever holds the lock, 0 when free; written only by the
 * server's threads), a futex word among lock() callers, and the server.  A client never
 * writes the holder: everything that changes it is a request to the server, so the server's
 * CAS on it can be core-local.
 *
 *   lt_execute (Algorithm 2): post (lock, context, function) in our mailbox on the lock's
 *            server and wait until the function word clears; return the section's result.
 *   lock:    take `callers` (lll.h: barging, spin then sleep), then post GRANT: the server
 *            takes the holder for us (when it is free) and completes; we then run our code on
 *            our own CPU.   unlock: post RELEASE, then release `callers`.
 *   trylock: holder set, or `callers` taken? EBUSY.  Else post TRYGRANT: taken, or EBUSY if a
 *            section took it meanwhile.
 *
 * Why `callers`: the server serves requests in mailbox order, so GRANT requests from several
 * lock() callers would hand the lock to each in turn whether it runs or not - with more
 * threads than CPUs every hand-over would wait for the scheduler (measured: 4 threads on one
 * CPU, 27 us per lock/unlock instead of 0.7).  With one GRANT at a time, the lock() callers
 * compete like glibc's mutex and the server only ever grants to a thread that is waiting for
 * it.  The word shares the lock's line with the holder, which is no correctness matter (the
 * core-local CAS writes only the holder's bytes).
 *   execute_trylock (Algorithm 3): holder set? EBUSY (a recursive lock we hold: run it here).
 *            Else lt_execute - which, as the paper says, may still wait behind other sections.
 *
 *   holder:  0 --server: CAS 0 -> id+1 (a section, or GRANT)--> id+1
 *            id+1 --server: after the section, or RELEASE--> 0
 *
 * On a servicing thread (a section that takes another lock):
 *   - a lock of the same server: Algorithm 2's local path - CAS the holder ourselves (we run on
 *     the server's CPU), yielding while it is held, and run the section inline;
 *   - a lock of another server: an ordinary request, from the servicing thread's own mailbox,
 *     carrying real_me - the client whose section we run - so that a recursive lock held by
 *     that client is recognised.
 *
 * Recursive locks (LT_CAP_RECURSIVE_EXEC): holder == real_me + 1 means "ours": lt_execute runs
 * the section in place; a servicing thread running a recursive lock's section records itself
 * as the owner so that lt_mutex_lock inside the section counts the depth.
 *
 * LT_EXEC_ON_CALLER: GRANT, the section on the caller, RELEASE.  LT_EXEC_MAY_WAIT changes
 * nothing: a section that waits on a condition variable blocks only its servicing thread, and
 * the pool keeps the server going (rcl/pool.c).  LT_EXEC_CTX_SIZE(n <= 32): the context rides
 * in the mailbox line (the paper's optimisation) and is copied back.
 *
 * Condition waits inside a section (cond_wait): the generic wait of cond.c, which releases the
 * lock through unlock (the local path: holder = 0) and takes it back through lock (the local
 * path: CAS, yield) - the request stays claimed by its servicing thread meanwhile (rcl/server.c)
 * so no other servicing thread runs it again.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../algo.h"
#include "../lll.h"
#include "../mutex.h"
#include "../rcl/rcl.h"

static int rcl_init(lt_mutex_t *m)
{
    struct rcl_lock *l = rcl_state(m);
    l->holder = 0;
    l->srv = rcl_server_for_site(m->_site);
    if (!l->srv)
        return EAGAIN;
    l->slot = rcl_slot_take(l->srv);
    __atomic_fetch_add(&l->srv->nlocks, 1, __ATOMIC_RELAXED);
    if (!l->slot)
        __atomic_fetch_add(&l->srv->ninline, 1, __ATOMIC_RELAXED);
    return 0;
}

static int rcl_destroy(lt_mutex_t *m)
{
    struct rcl_lock *l = rcl_state(m);
    if (__atomic_load_n(rcl_holder(l), __ATOMIC_ACQUIRE) ||
        __atomic_load_n(&l->callers, __ATOMIC_ACQUIRE))
        return EBUSY;
    unsigned n = __atomic_load_n(&rcl_nids, __ATOMIC_RELAXED);
    for (unsigned i = 0; i < n; i++) {
        struct rcl_mailbox *r = &l->srv->mb[i];
        if (__atomic_load_n(&r->function, __ATOMIC_ACQUIRE) &&
            __atomic_load_n(&r->lock, __ATOMIC_RELAXED) == m)
            return EBUSY; /* a request for it is pending */
    }
    __atomic_fetch_sub(&l->srv->nlocks, 1, __ATOMIC_RELAXED);
    if (!l->slot)
        __atomic_fetch_sub(&l->srv->ninline, 1, __ATOMIC_RELAXED);
    rcl_slot_give(l->srv, l->slot);
    l->slot = 0;
    return 0;
}

/* The caller's identity in holder terms: the client whose section it runs, or itself. */
static inline uint32_t me_holder(void)
{
    struct rcl_client *me = &rcl_self;
    return (uint32_t)(me->srv ? me->real_me : rcl_client_id()) + 1;
}

/* On a servicing thread of m's server. */
static inline bool on_server(const struct rcl_lock *l)
{
    return rcl_self.srv == l->srv;
}

/* The local path: take m's holder on its server's CPU, yielding while someone has it (a
 * servicing thread inside a section, or a client that holds it by lock()). */
static void local_take(lt_mutex_t *m, struct rcl_lock *l)
{
    uint32_t who = me_holder(), *h = rcl_holder(l);
    if (lt_local_cas32(h, 0, who, l->srv->pinned))
        return;
    if (__atomic_load_n(h, __ATOMIC_RELAXED) == who)
        lt_misuse_relock(m); /* the section takes its own lock again: it waits for ever */
    lt_contended(m);
    rcl_pool_before_block(l->srv); /* a client's RELEASE may be what we wait for */
    while (!lt_local_cas32(h, 0, who, l->srv->pinned))
        sched_yield();
}

static void *rcl_execute(lt_mutex_t *m, lt_cs_fn fn, void *ctx, unsigned flags)
{
    struct rcl_lock *l = rcl_state(m);
    if (__builtin_expect(__atomic_load_n(&m->_flags, __ATOMIC_RELAXED) != 0, 0) &&
        __atomic_load_n(rcl_holder(l), __ATOMIC_RELAXED) == me_holder())
        return fn(ctx); /* a recursive lock we hold already (a relock of a default-type lock
                         * is reported by rcl_call's wait, once it lasts) */
    if (__builtin_expect(flags & LT_EXEC_ON_CALLER, 0))
        return lt_execute_on_caller(m, fn, ctx);
    if (__builtin_expect(on_server(l), 0)) { /* a nested section, same server: inline */
        local_take(m, l);
        lt_acquired(m);
        void *r = fn(ctx);
        m->_count = 0;
        __atomic_store_n(&m->_owner, 0, __ATOMIC_RELAXED);
        rcl_holder_release(l->srv, l);
        if (lt_thread_self.deferred_mutex == m)
            lt_cond_flush_deferred();
        return r;
    }
    return rcl_call(l->srv, m, fn, ctx, LT_EXEC_CTX_SIZE_OF_(flags));
}

static int rcl_execute_trylock(lt_mutex_t *m, lt_cs_fn fn, void *ctx, void **result)
{
    struct rcl_lock *l = rcl_state(m);
    uint32_t h = __atomic_load_n(rcl_holder(l), __ATOMIC_RELAXED);
    if (h != 0) {
        if (h != me_holder() ||
            !(__atomic_load_n(&m->_flags, __ATOMIC_RELAXED) & LT_MUTEX_F_RECURSIVE_)) {
            lt_stat(m->_site, LT_STAT_TRY_FAILED);
            return EBUSY;
        }
        void *r = fn(ctx); /* a recursive lock we hold */
        if (result)
            *result = r;
        return 0;
    }
    if (on_server(l)) {
        if (!lt_local_cas32(rcl_holder(l), 0, me_holder(), l->srv->pinned)) {
            lt_stat(m->_site, LT_STAT_TRY_FAILED);
            return EBUSY;
        }
        lt_acquired(m);
        void *r = fn(ctx);
        m->_count = 0;
        __atomic_store_n(&m->_owner, 0, __ATOMIC_RELAXED);
        rcl_holder_release(l->srv, l);
        if (lt_thread_self.deferred_mutex == m)
            lt_cond_flush_deferred();
        if (result)
            *result = r;
        return 0;
    }
    void *r = rcl_call(l->srv, m, fn, ctx, 0); /* free a moment ago: may still wait */
    if (result)
        *result = r;
    return 0;
}

static int rcl_lock(lt_mutex_t *m)
{
    struct rcl_lock *l = rcl_state(m);
    if (on_server(l)) {
        local_take(m, l);
        return lt_acquired(m);
    }
    if (__atomic_load_n(&l->callers, __ATOMIC_RELAXED) ||
        __atomic_load_n(rcl_holder(l), __ATOMIC_RELAXED))
        lt_contended(m); /* counts it, and reports a relock */
    lt_lll_lock(&l->callers);
    rcl_call(l->srv, m, RCL_OP_GRANT, NULL, 0);
    return lt_acquired(m);
}

static int rcl_trylock(lt_mutex_t *m)
{
    struct rcl_lock *l = rcl_state(m);
    if (__atomic_load_n(rcl_holder(l), __ATOMIC_RELAXED))
        return EBUSY;
    if (on_server(l))
        return lt_local_cas32(rcl_holder(l), 0, me_holder(), l->srv->pinned) ? lt_acquired(m)
                                                                             : EBUSY;
    uint32_t z = 0;
    /* acquire: as lt_lll_lock's. */
    if (!__atomic_compare_exchange_n(&l->callers, &z, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
        return EBUSY;
    if (rcl_call(l->srv, m, RCL_OP_TRYGRANT, NULL, 0) != NULL) {
        lt_lll_unlock(&l->callers);
        return EBUSY;
    }
    return lt_acquired(m);
}

static int64_t ns_until(const struct timespec *abstime)
{
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    return (int64_t)(abstime->tv_sec - now.tv_sec) * 1000000000 + (abstime->tv_nsec - now.tv_nsec);
}

/* A client waits its turn among the clients (the `callers` futex lock, whose sleepers the
 * kernel wakes in order) until the deadline.  With `callers`, no lock() caller holds the lock,
 * but a section the server runs for lt_execute may (execute takes no `callers`): the client
 * then asks for the lock by TRYGRANT until the deadline, backing off as lt_timedlock_poll
 * does - a GRANT would wait for the section whatever the deadline (a corpus program's 5 ms
 * timedlock returned 0 after 50 ms, and never unlocked the lock it did not expect to hold).
 * A servicing thread of the lock's server polls trylock (it must not sleep on `callers`,
 * which it never takes). */
static int rcl_timedlock(lt_mutex_t *m, const struct timespec *abstime)
{
    struct rcl_lock *l = rcl_state(m);
    if (on_server(l))
        return lt_timedlock_poll(m, rcl_trylock, abstime);
    if (rcl_trylock(m) == 0)
        return 0;
    if (lt_abstime_check(abstime))
        return EINVAL;
    lt_contended(m);
    int r = lt_lll_timedlock(&l->callers, abstime);
    if (r != 0)
        return r;
    struct lt_spin s = LT_SPIN_INIT;
    int64_t delay = 1000;
    while (rcl_call(l->srv, m, RCL_OP_TRYGRANT, NULL, 0) != NULL) {
        int64_t left = ns_until(abstime);
        if (left <= 0) {
            lt_lll_unlock(&l->callers);
            return ETIMEDOUT;
        }
        if (!lt_spin_poll(&s, LT_WAIT_PARK))
            continue; /* within the spin budget: ask again */
        int64_t d = delay < left ? delay : left;
        struct timespec ts = {(time_t)(d / 1000000000), (long)(d % 1000000000)};
        nanosleep(&ts, NULL);
        delay = delay * 2 > 1000000 ? 1000000 : delay * 2;
    }
    return lt_acquired(m);
}

static int rcl_unlock(lt_mutex_t *m)
{
    struct rcl_lock *l = rcl_state(m);
    if (on_server(l)) {
        rcl_holder_release(l->srv, l);
        return 0;
    }
    rcl_call(l->srv, m, RCL_OP_RELEASE, NULL, 0);
    lt_lll_unlock(&l->callers);
    return 0;
}

static int rcl_cond_wait(lt_cond_t *c, lt_mutex_t *m, const struct timespec *abstime)
{
    struct rcl_client *me = &rcl_self;
    if (me->srv && me->cur_lock == m && !__atomic_load_n(&m->_owner, __ATOMIC_RELAXED)) {
        /* The section of the request we serve waits on its own lock: we hold it (holder =
         * real_me + 1) without the owner field a lock() would have set, which the generic
         * wait checks. */
        if (abstime && lt_abstime_check(abstime))
            return EINVAL;
        __atomic_store_n(&m->_owner, lt_self(), __ATOMIC_RELAXED);
        m->_count = 1;
    }
    if (me->srv)
        rcl_pool_before_block(me->srv); /* this servicing thread stops serving */
    return lt_cond_wait_generic(c, m, abstime);
}

const struct lt_algo lt_algo_rcl = {
    .name = "rcl",
    .caps = LT_CAP_DELEGATES | LT_CAP_SUPPORTS_COND | LT_CAP_OVERSUB_SAFE | LT_CAP_RECURSIVE_EXEC |
            LT_CAP_SERVER,
    .counts = LT_STAT_BIT(LT_STAT_PARKED) | LT_STAT_BIT(LT_STAT_DELEGATED) |
              LT_STAT_BIT(LT_STAT_ON_CALLER),
    .size = sizeof(struct rcl_lock),
    .wait = "spin for the spin budget, then park (LOCKTUNE_RCL_WAIT)",
    .init = rcl_init,
    .destroy = rcl_destroy,
    .lock = rcl_lock,
    .trylock = rcl_trylock,
    .timedlock = rcl_timedlock,
    .unlock = rcl_unlock,
    .execute = rcl_execute,
    .execute_trylock = rcl_execute_trylock,
    .cond_wait = rcl_cond_wait,
    .configure = rcl_configure,
    .thread_exit = rcl_thread_exit,
    .stats_site = rcl_stats_site,
    .stats_json = rcl_stats_json,
};
