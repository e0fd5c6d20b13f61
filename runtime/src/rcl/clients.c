/*
 * clients.c - RCL clients: their ids, and how a client posts a request and waits for it.
 *
 * Client ids index the mailbox arrays.  They are dense and reused (the paper's adaptive
 * long-lived renaming, §3.1): a thread takes the smallest free id at its first request and
 * gives it back when it exits, and rcl_nids - one more than the highest id in use - is how far
 * a server scans.  So 10,000 short-lived threads, a few at a time, keep the scan short.  Every
 * thread that posts requests has an id: application threads, and servicing threads that call
 * into another server.  Beyond RCL_OVERFLOW live ids, threads share the last mailbox, one at a
 * time (a futex lock serialises them).
 *
 * Posting (rcl_call):  lock, context (or the context itself, copied into the mailbox line when
 * the caller gave its size and it fits), real_me, then the function word with seq_cst order:
 * release for the request, and the store-load order the server's idle sleep needs - after it,
 * a client that reads the server's state as RUNNING knows the server will see the request (the
 * server sets SLEEPING (seq_cst) and scans once more before it sleeps).
 *
 * A thread's first request also moves it off the servers' CPUs (server.c).  A client that
 * still finds itself on its server's CPU (its affinity allows nothing else) does not spin: its
 * spinning would only delay the server.
 *
 * Waiting: the function word turns NULL when the request is done.  A client spins (PAUSE) for
 * the runtime's spin budget (the measured cost of a futex hand-over, wait.h), then follows
 * the wait policy (LOCKTUNE_RCL_WAIT, docs/delegation.md has the measurements behind the
 * default):
 *   spin        keep spinning (the paper's clients)
 *   yield       sched_yield() between polls
 *   park        sleep on the mailbox's parked word until the server wakes it
 *   yield-park  yield for RCL_YIELD_NS, then park
 * Parking, and who wakes whom:
 *   client: parked = 1; parked_clients++ (seq_cst); function still set? futex_wait(parked, 1)
 *   server: function = NULL (release) ... at the end of the pass: parked_clients += 0
 *           (seq_cst); if it was != 0, for each mailbox: parked == 1 and function == NULL? XCHG
 *           parked -> 0 and FUTEX_WAKE (server.c says why every mailbox).
 * Either the server's RMW comes first and the client's check sees NULL, or the client's
 * increment comes first and the server sees it: no lost wake-up, and no fence per request on
 * the server (one per pass, only when it completed something or a client is parked).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "../config.h"
#include "../futex.h"
#include "../lll.h"
#include "../wait.h"
#include "rcl.h"

#define RCL_YIELD_NS 200000u /* yield-park: how long to yield before parking */

__thread struct rcl_client rcl_self
    __attribute__((tls_model("initial-exec"))) = {.id = -1,
                                                  .real_me = -1,
                                                  .srv = NULL,
                                                  .st = NULL,
                                                  .cur = NULL,
                                                  .cur_lock = NULL,
                                                  .spawning = false};

uint32_t rcl_nids;

static pthread_mutex_t ids_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t ids[RCL_MAILBOXES / 64]; /* under ids_lock: bit i set = id i in use */
static uint64_t ids_allocated, ids_peak; /* under ids_lock */
static uint32_t overflow_lock;           /* lll: the threads sharing RCL_OVERFLOW */
static uint64_t overflow_calls;          /* atomic */

/* ---- ids ---- */

static void set_nids(void)
{
    unsigned top = 0;
    for (unsigned w = RCL_MAILBOXES / 64; w-- > 0;)
        if (ids[w]) {
            top = w * 64 + 64 - (unsigned)__builtin_clzll(ids[w]);
            break;
        }
    if (__atomic_load_n(&rcl_nids, __ATOMIC_RELAXED) > RCL_OVERFLOW)
        top = RCL_MAILBOXES; /* the overflow mailbox, once used, stays scanned */
    /* relaxed: a server picks the new bound up at its next pass; a new client's request is
     * published (seq_cst) after this store, so the server sees the bound before the request. */
    __atomic_store_n(&rcl_nids, top, __ATOMIC_RELAXED);
}

int32_t rcl_client_id(void)
{
    struct rcl_client *me = &rcl_self;
    if (__builtin_expect(me->id >= 0, 1))
        return me->id;
    pthread_mutex_lock(&ids_lock);
    int32_t id = RCL_OVERFLOW;
    for (unsigned w = 0; w < RCL_MAILBOXES / 64; w++)
        if (~ids[w]) {
            unsigned b = (unsigned)__builtin_ctzll(~ids[w]);
            if (w * 64 + b < RCL_OVERFLOW) {
                id = (int32_t)(w * 64 + b);
                ids[w] |= 1ull << b;
            }
            break;
        }
    if (id != RCL_OVERFLOW) {
        ids_allocated++;
        set_nids();
        unsigned live = 0;
        for (unsigned w = 0; w < RCL_MAILBOXES / 64; w++)
            live += (unsigned)__builtin_popcountll(ids[w]);
        if (live > ids_peak)
            ids_peak = live;
    } else {
        __atomic_store_n(&rcl_nids, RCL_MAILBOXES, __ATOMIC_RELAXED);
    }
    if (!me->srv) { /* under ids_lock: a fork (prepare_fork takes it) finds it recorded */
        rcl_move_off_servers();
        rcl_inherit_record(id); /* after the move: what its own threads would inherit */
    }
    pthread_mutex_unlock(&ids_lock);
    me->id = id;
    lt_thread_register(); /* rcl_thread_exit gives the id back */
    return id;
}

void rcl_thread_exit(void)
{
    struct rcl_client *me = &rcl_self;
    if (me->id < 0)
        return;
    rcl_inherit_forget(me->id);
    if (me->id != RCL_OVERFLOW) {
        pthread_mutex_lock(&ids_lock);
        ids[me->id / 64] &= ~(1ull << (me->id % 64));
        set_nids();
        pthread_mutex_unlock(&ids_lock);
    }
    me->id = -1;
}

/* ---- waiting ---- */

static enum rcl_wait_policy policy(void)
{
    int p = rcl_cfg_wait;
    return p < 0 ? RCL_WAIT_PARK : (enum rcl_wait_policy)p;
}

const char *rcl_wait_name(enum rcl_wait_policy p)
{
    static const char *const names[] = {"spin", "yield", "park", "yield-park"};
    return names[p];
}

static inline bool done(struct rcl_mailbox *mb)
{
    /* acquire: pairs with the server's release of NULL: the section's writes and result. */
    return __atomic_load_n(&mb->function, __ATOMIC_ACQUIRE) == NULL;
}

static void park(struct rcl_server *srv, struct rcl_mailbox *mb, int site)
{
    lt_stat(site, LT_STAT_PARKED);
    for (;;) {
        __atomic_store_n(&mb->parked, 1, __ATOMIC_RELAXED);
        /* seq_cst: orders parked = 1 before our check of the function word, against the
         * server's RMW of this count after its clearing of that word. */
        __atomic_fetch_add(&srv->parked_clients, 1, __ATOMIC_SEQ_CST);
        if (!done(mb))
            lt_futex_wait(&mb->parked, 1, NULL, CLOCK_MONOTONIC);
        __atomic_fetch_sub(&srv->parked_clients, 1, __ATOMIC_RELAXED);
        __atomic_store_n(&mb->parked, 0, __ATOMIC_RELAXED);
        if (done(mb))
            return;
    }
}

static __attribute__((noinline)) void wait_slow(struct rcl_server *srv, struct rcl_mailbox *mb,
                                                lt_mutex_t *m)
{
    int site = m->_site;
    /* A lock we hold ourselves (by lock(), or the lock of the section we run as a servicing
     * thread): the request waits for ever, as a relock does - say so, once it lasts. */
    if (__atomic_load_n(&m->_owner, __ATOMIC_RELAXED) == lt_self() || rcl_self.cur_lock == m)
        lt_misuse_relock(m);
    enum rcl_wait_policy p = policy();
    if (sched_getcpu() == srv->cpu) {
        if (p == RCL_WAIT_SPIN)
            p = RCL_WAIT_YIELD;
    } else {
        struct lt_spin s = LT_SPIN_INIT;
        while (!done(mb))
            if (lt_spin_poll(&s, LT_WAIT_PARK))
                break; /* the spin budget is spent */
    }
    if (p == RCL_WAIT_PARK) {
        if (!done(mb))
            park(srv, mb, site);
        return;
    }
    uint64_t until = p == RCL_WAIT_YIELD_PARK ? lt_now_ns() + RCL_YIELD_NS : UINT64_MAX;
    while (!done(mb)) {
        if (p == RCL_WAIT_SPIN) {
            lt_cpu_relax();
            continue;
        }
        sched_yield();
        if (lt_now_ns() > until) {
            park(srv, mb, site);
            return;
        }
    }
}

static inline void wait_for(struct rcl_server *srv, struct rcl_mailbox *mb, lt_mutex_t *m)
{
    for (int i = 0; i < 64; i++) { /* a round trip takes ~100-1000 ns: poll a little first */
        if (done(mb))
            return;
        lt_cpu_relax();
    }
    wait_slow(srv, mb, m);
}

/* ---- posting ---- */

void *rcl_call(struct rcl_server *srv, lt_mutex_t *m, lt_cs_fn fn, void *ctx, unsigned size)
{
    struct rcl_client *me = &rcl_self;
    int32_t id = me->id >= 0 ? me->id : rcl_client_id();
    int32_t real_me = me->srv ? me->real_me : id;
    if (__builtin_expect(id == RCL_OVERFLOW, 0)) {
        lt_lll_lock(&overflow_lock);
        __atomic_fetch_add(&overflow_calls, 1, __ATOMIC_RELAXED);
        if (!me->srv)
            rcl_inherit_overflow(); /* the overflow mailbox's origin is its current user's */
    }
    struct rcl_mailbox *mb = &srv->mb[id];
    __atomic_store_n(&mb->lock, m, __ATOMIC_RELAXED);
    bool carried = size != 0 && size <= RCL_INLINE_CTX;
    if (carried) {
        memcpy(mb->inline_ctx, ctx, size);
        __atomic_store_n(&mb->context, (void *)mb->inline_ctx, __ATOMIC_RELAXED);
    } else {
        __atomic_store_n(&mb->context, ctx, __ATOMIC_RELAXED);
    }
    __atomic_store_n(&mb->real_me, real_me, __ATOMIC_RELAXED);
    /* Bounded (pool.c): a client on the server's own CPU runs only once the server stops, so
     * it says so before it posts - the server preempts it as soon as it is woken. */
    bool local = srv->bounded && !me->srv && sched_getcpu() == srv->cpu;
    if (local)
        __atomic_fetch_add(&srv->local_clients, 1, __ATOMIC_RELAXED);
    /* seq_cst: publishes the request (release) and orders it before our read of the state
     * (the server's idle sleep: see the header). */
    __atomic_store_n(&mb->function, fn, __ATOMIC_SEQ_CST);
    if (__builtin_expect(__atomic_load_n(&srv->state, __ATOMIC_SEQ_CST) != RCL_RUNNING, 0))
        rcl_server_kick(srv);
    wait_for(srv, mb, m);
    if (local)
        __atomic_fetch_sub(&srv->local_clients, 1, __ATOMIC_RELAXED);
    void *r = __atomic_load_n(&mb->context, __ATOMIC_RELAXED);
    if (carried)
        memcpy(ctx, mb->inline_ctx, size);
    if (__builtin_expect(id == RCL_OVERFLOW, 0))
        lt_lll_unlock(&overflow_lock);
    return r;
}

/* ---- statistics and fork ---- */

void rcl_clients_stats_json(FILE *f)
{
    pthread_mutex_lock(&ids_lock);
    unsigned live = 0;
    for (unsigned w = 0; w < RCL_MAILBOXES / 64; w++)
        live += (unsigned)__builtin_popcountll(ids[w]);
    fprintf(f,
            "\"client_ids\": {\"live\": %u, \"peak\": %llu, \"allocated\": %llu, \"scan_bound\": "
            "%u, \"overflow_requests\": %llu}",
            live, (unsigned long long)ids_peak, (unsigned long long)ids_allocated,
            __atomic_load_n(&rcl_nids, __ATOMIC_RELAXED),
            (unsigned long long)__atomic_load_n(&overflow_calls, __ATOMIC_RELAXED));
    pthread_mutex_unlock(&ids_lock);
}

void rcl_clients_prepare_fork(void)
{
    pthread_mutex_lock(&ids_lock);
}

void rcl_clients_after_fork(bool child)
{
    if (!child) {
        pthread_mutex_unlock(&ids_lock);
        return;
    }
    /* The child's one thread keeps its id; the parent's other threads are not here. */
    pthread_mutex_unlock(&ids_lock); /* taken by this thread in prepare */
    memset(ids, 0, sizeof ids);
    overflow_lock = 0;
    rcl_inherit_after_fork_child(); /* the other threads' origins: gone with them */
    int32_t id = rcl_self.id;
    if (id >= 0 && id != RCL_OVERFLOW)
        ids[id / 64] |= 1ull << (id % 64);
    else
        rcl_self.id = -1;
    __atomic_store_n(&rcl_nids, 0, __ATOMIC_RELAXED);
    set_nids();
}
