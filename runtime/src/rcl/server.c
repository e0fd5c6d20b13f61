/*
 * server.c - RCL servers: where they run, the servicing loop, idle sleep, fork, statistics.
 *
 * Placement.  A lock runs on the server of its site: locktune_config.h's `server` (-1: 0).
 * Server k runs on LOCKTUNE_SERVERS' k-th CPU, or by default on the k-th CPU from the top of
 * the CPUs the process may use, leaving the first one to the application: on 2 CPUs, every
 * server is on the last CPU.  Server numbers that land on one CPU share one server (its
 * threads would otherwise fight for the CPU, and under SCHED_FIFO one would starve the other).
 * A server starts - mailboxes, threads - when the first lock is bound to it.
 *
 * The servicing loop (Algorithm 4), one pass:
 *
 *   alive = 1; my timestamp = the server's; nfree -= 1            (core-local)
 *   for i in 0 .. rcl_nids-1:  r = mailbox i;  skip it unless r.function is set
 *       claim i (core-local CAS 0 -> 1 on claims[i]) or skip; re-read r.function: NULL? unclaim,
 *                        skip
 *       RELEASE:         holder = 0, complete
 *       CAS(holder: 0 -> r.real_me + 1) fails: TRYGRANT completes with EBUSY; else unclaim and
 *                        skip (the lock is held: by a client's lock(), or by a blocked section)
 *       GRANT/TRYGRANT:  complete (the client holds the lock now)
 *       a section:       claims[i] = 2; run it; holder = 0; claims[i] = 1; complete (result,
 *                        then function = NULL)
 *       unclaim i
 *   nfree += 1; wake the clients parked on what this pass completed (clients.c)
 *
 * The claims - one word per mailbox in the server's own memory, written only on its CPU - do
 * what Algorithm 4's re-check of the function word after taking the lock does (no two
 * servicing threads run one request: they preempt each other in the degraded mode, and a
 * section that waits on a condition variable releases its lock but keeps its claim), and
 * more: a servicing thread reads a request's lock only once it owns the request, so it never
 * touches a lock whose request another servicing thread has completed - that client may have
 * freed it.  For the same reason the holder is released before the request completes, and
 * nothing touches the lock after the completion.  The scan is in index order, not FIFO: a
 * request waits at most one pass, i.e. at most one section of each other client (the paper
 * §3.3: no starvation, unfairness = clients - 1).
 *
 * Idle sleep (not in the paper, whose server spins for ever): a free servicing thread that has
 * found nothing it can serve for RCL_IDLE_NS sets the server's state to SLEEPING (seq_cst),
 * scans once more, and sleeps on the state word.  A client that posts a request and then reads
 * SLEEPING (its publication is seq_cst) wakes it; so does a servicing thread that releases a
 * lock (requests for it may be waiting).  The manager and backup threads sleep with it.
 * RCL_IDLE_NS is ~100 wake-up costs: a request that finds the server asleep pays at most ~1%
 * of the idle gap before it.  A bounded server (pool.c) shares its CPU: it spins only as long as
 * a sleep and a wake-up would cost (the runtime's spin budget, wait.h: spinning longer than that
 * costs more than it can save, Karlin et al.), and sleeps at once when a client waits on its CPU
 * (that client runs only once the server stops: rcl_call counts it in local_clients).  A
 * SCHED_FIFO spin keeps the requests of other processes' servers on the CPU waiting (peers of
 * equal priority do not preempt each other): memcached's suite under rcl, 6 servers on CPU 1,
 * made 224 million passes for 19 million requests spinning 50 us, 185 million with the budget.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include "../config.h"
#include "../futex.h"
#include "../wait.h"
#include "rcl.h"

#define RCL_IDLE_NS 2000000u

static struct rcl_server *servers[CPU_SETSIZE]; /* by CPU; atomic pointers */
static pthread_mutex_t start_lock = PTHREAD_MUTEX_INITIALIZER;

/* ---- configuration ---- */

int rcl_cfg_mode = RCL_MODE_AUTO;
int rcl_cfg_wait = -1;

void rcl_configure(void)
{
    static const char *const modes[] = {[RCL_MODE_AUTO] = "auto",
                                        [RCL_MODE_FIFO] = "fifo",
                                        [RCL_MODE_BOUNDED] = "bounded",
                                        [RCL_MODE_DEGRADED] = "degraded"};
    const char *v = getenv("LOCKTUNE_RCL_MODE");
    if (v && *v) {
        int i = 0;
        while (i < 4 && strcmp(v, modes[i]) != 0)
            i++;
        if (i == 4)
            lt_config_fatal("LOCKTUNE_RCL_MODE='%s': expected auto, fifo, bounded or degraded", v);
        rcl_cfg_mode = i;
    }
    v = getenv("LOCKTUNE_RCL_WAIT");
    if (v && *v) {
        int i = RCL_WAIT_SPIN;
        while (i <= RCL_WAIT_YIELD_PARK && strcmp(v, rcl_wait_name((enum rcl_wait_policy)i)) != 0)
            i++;
        if (i > RCL_WAIT_YIELD_PARK)
            lt_config_fatal("LOCKTUNE_RCL_WAIT='%s': expected spin, yield, park or yield-park", v);
        rcl_cfg_wait = i;
    }
}

/* ---- placement ---- */

int rcl_site_server(int site, int *cpu)
{
    const struct lt_site_config *sc = lt_config_site(site);
    int k = sc && sc->server > 0 ? sc->server : 0;
    unsigned n, u;
    const int *list = lt_config_servers(&n);
    if (n) {
        *cpu = list[(unsigned)k < n ? (unsigned)k : 0]; /* beyond: refused at start-up */
        return k;
    }
    const int *usable = lt_config_usable_cpus(&u);
    if (u == 0) {
        *cpu = 0;
        return k;
    }
    unsigned spare = u > 1 ? u - 1 : 1;
    *cpu = usable[u - 1 - (unsigned)k % spare];
    return k;
}

/* A SCHED_FIFO server (fifo or bounded) owns its CPU while it runs: an application thread left
 * there runs only while the server sleeps (its own requests wake the server, which preempts it).
 * So a thread's first request moves it off the SCHED_FIFO servers' CPUs - if its affinity leaves
 * it another CPU - as the paper pins application threads elsewhere.  Threads it creates, and
 * processes it forks, inherit that.  A degraded server's threads are ordinary ones, and its
 * clients stay where the scheduler puts them.
 *
 * Bounded servers, too: a client left on its server's CPU hands that CPU to a servicing thread
 * and back at every request, a wake-up and a sleep each way a few microseconds apart, and on
 * Linux 6.18.44 that starves every other process there.  Each wake-up and sleep reweights the
 * process's scheduling group (its session's autogroup) while the group runs, and that kernel
 * re-places a running group at each reweight, ahead of every other (fixed upstream by
 * 101f3498b4bd, in 6.18.45).  In memcached's suite under rcl, with its clients left there, a
 * thread of another session pinned to CPU 1 waited up to 1.5 s while memcached's slab mover and
 * its server ping-ponged on it (docs/delegation.md, "The kernel's group-scheduling bug").  The
 * price: on 2 CPUs every client thread of every process using RCL shares the one CPU left. */
void rcl_move_off_servers(void)
{
    cpu_set_t mine, off;
    if (sched_getaffinity(0, sizeof mine, &mine) != 0)
        return;
    CPU_ZERO(&off);
    bool any = false;
    for (int c = 0; c < CPU_SETSIZE; c++) {
        struct rcl_server *srv = __atomic_load_n(&servers[c], __ATOMIC_ACQUIRE);
        if (srv && srv->fifo && CPU_ISSET(c, &mine)) {
            CPU_SET(c, &off);
            any = true;
        }
    }
    if (!any)
        return;
    cpu_set_t rest;
    CPU_XOR(&rest, &mine, &off); /* off is a subset of mine */
    if (CPU_COUNT(&rest) > 0)
        sched_setaffinity(0, sizeof rest, &rest);
}

/* ---- fork ---- */

static void prepare_fork(void)
{
    pthread_mutex_lock(&start_lock);
    rcl_clients_prepare_fork();
}

static void parent_after_fork(void)
{
    rcl_clients_after_fork(false);
    pthread_mutex_unlock(&start_lock);
}

/* The child has no server threads: every server is STOPPED (restarted by the first request)
 * with empty mailboxes - the parent's other threads, whose requests they held, are gone. */
static void child_after_fork(void)
{
    pthread_mutex_unlock(&start_lock); /* taken by this thread in prepare_fork */
    if (rcl_self.srv) /* forked inside a section: the client's CPUs, mask, policy (inherit.c) */
        rcl_inherit_after_fork();
    rcl_clients_after_fork(true);
    for (int c = 0; c < CPU_SETSIZE; c++) {
        struct rcl_server *srv = servers[c];
        if (!srv)
            continue;
        memset(srv->mb, 0, RCL_MAILBOXES * sizeof *srv->mb);
        memset(srv->claims, 0, RCL_MAILBOXES * sizeof *srv->claims);
        pthread_mutex_init(&srv->slots_lock, NULL);
        srv->state = RCL_STOPPED;
        srv->parked_clients = 0;
        srv->local_clients = 0;
        srv->demoted = 0;
        srv->budget_at = srv->budget_cpu = srv->hold_until = srv->canary_seen = 0;
        srv->alive = 0;
        srv->nservicing = 0;
        srv->nfree = 0;
        srv->all = NULL;
        srv->prepared = NULL;
        pthread_mutex_init(&srv->pool_lock, NULL);
        srv->manager_word = srv->backup_word = 0;
    }
    if (rcl_self.srv) { /* forked inside a section: the child's thread is a client now */
        rcl_self.srv = NULL;
        rcl_self.st = NULL;
        rcl_self.cur = NULL;
        rcl_self.cur_lock = NULL;
    }
}

/* Installed when the library loads, before the program can register its own: handlers run
 * in reverse order of registration before a fork and in order after it, so ours prepare last -
 * after a program's prepare handler has taken its locks through the server - and reset the
 * child first - before a program's child handler releases those locks through a server that
 * must then restart (a server registered later, at its first lock, left the child's releases
 * waiting for a server that was not there: the child hung). */
__attribute__((constructor)) static void install_fork_handlers(void)
{
    pthread_atfork(prepare_fork, parent_after_fork, child_after_fork);
}

/* ---- servers ---- */

/* One region: the mailboxes, the claims, the holder table, the slot bitmap. */
static size_t region_bytes(void)
{
    return RCL_MAILBOXES * (sizeof(struct rcl_mailbox) + sizeof(uint32_t)) +
           RCL_HOLDERS * sizeof(uint32_t) + RCL_HOLDERS / 8;
}

uint32_t rcl_slot_take(struct rcl_server *srv)
{
    uint32_t slot = 0;
    const unsigned words = RCL_HOLDERS / 64;
    pthread_mutex_lock(&srv->slots_lock);
    for (unsigned n = 0, w = srv->slots_hint; n < words; n++, w = (w + 1) % words)
        if (~srv->slots_used[w]) {
            unsigned b = (unsigned)__builtin_ctzll(~srv->slots_used[w]);
            srv->slots_used[w] |= 1ull << b;
            srv->slots_hint = w;
            slot = w * 64 + b;
            break;
        }
    pthread_mutex_unlock(&srv->slots_lock);
    if (slot) /* relaxed: published with the lock (the binding's release store) */
        __atomic_store_n(&srv->holders[slot], 0, __ATOMIC_RELAXED);
    return slot;
}

void rcl_slot_give(struct rcl_server *srv, uint32_t slot)
{
    if (!slot)
        return;
    pthread_mutex_lock(&srv->slots_lock);
    srv->slots_used[slot / 64] &= ~(1ull << (slot % 64));
    pthread_mutex_unlock(&srv->slots_lock);
}

static struct rcl_server *create(int cpu, int number)
{
    struct rcl_server *srv = aligned_alloc(RCL_LINE, sizeof *srv);
    if (!srv)
        return NULL;
    memset(srv, 0, sizeof *srv);
    void *mb =
        mmap(NULL, region_bytes(), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mb == MAP_FAILED) {
        free(srv);
        return NULL;
    }
    srv->mb = mb; /* page-aligned, zero: every function word NULL */
    srv->claims = (uint32_t *)(srv->mb + RCL_MAILBOXES);
    srv->holders = srv->claims + RCL_MAILBOXES;
    srv->slots_used = (uint64_t *)(srv->holders + RCL_HOLDERS);
    srv->slots_used[0] = 1; /* slot 0 means "inline" */
    pthread_mutex_init(&srv->slots_lock, NULL);
    srv->cpu = cpu;
    srv->number = number;
    srv->state = RCL_STOPPED;
    return srv;
}

struct rcl_server *rcl_server_for_site(int site)
{
    int cpu, k = rcl_site_server(site, &cpu);
    /* acquire: pairs with the release store below (the server's fields). */
    struct rcl_server *srv = __atomic_load_n(&servers[cpu], __ATOMIC_ACQUIRE);
    if (srv)
        return srv;
    pthread_mutex_lock(&start_lock);
    srv = servers[cpu];
    if (!srv) {
        srv = create(cpu, k);
        int r = srv ? rcl_pool_start(srv) : ENOMEM;
        if (r != 0) {
            fprintf(stderr, "locktune: error: cannot start the RCL server on CPU %d: %s\n", cpu,
                    strerror(r));
            srv = NULL; /* (its memory is kept: a half-started server may have a thread) */
        } else {
            __atomic_store_n(&servers[cpu], srv, __ATOMIC_RELEASE);
        }
    }
    pthread_mutex_unlock(&start_lock);
    return srv;
}

void rcl_server_kick(struct rcl_server *srv)
{
    uint32_t s = __atomic_load_n(&srv->state, __ATOMIC_ACQUIRE);
    if (s == RCL_SLEEPING) {
        if (__atomic_compare_exchange_n(&srv->state, &s, RCL_RUNNING, 0, __ATOMIC_ACQ_REL,
                                        __ATOMIC_RELAXED))
            lt_futex_wake(&srv->state, INT_MAX); /* the sleeper, the manager, the backup */
    } else if (s == RCL_STOPPED) {               /* a forked child's first request */
        pthread_mutex_lock(&start_lock);
        int r =
            __atomic_load_n(&srv->state, __ATOMIC_ACQUIRE) == RCL_STOPPED ? rcl_pool_start(srv) : 0;
        pthread_mutex_unlock(&start_lock);
        if (r != 0) {
            fprintf(stderr, "locktune: error: cannot restart the RCL server on CPU %d: %s\n",
                    srv->cpu, strerror(r));
            abort();
        }
    }
}

void rcl_holder_release(struct rcl_server *srv, struct rcl_lock *l)
{
    /* The holder is free before we look at the state, against idle_sleep's SLEEPING before its
     * look at the holders.  On one CPU program order gives that (release: the next holder
     * sees the section's writes); across CPUs it takes seq_cst on both sides. */
    uint32_t *h = rcl_holder(l);
    if (srv->pinned)
        __atomic_store_n(h, 0, __ATOMIC_RELEASE);
    else
        __atomic_exchange_n(h, 0, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&srv->state, __ATOMIC_SEQ_CST) == RCL_SLEEPING)
        rcl_server_kick(srv); /* requests for this lock may be waiting */
}

/* ---- the servicing loop ---- */

static void complete(struct rcl_sthread *self, struct rcl_mailbox *r, void *result)
{
    __atomic_store_n(&r->context, result, __ATOMIC_RELAXED);
    /* release: the client sees the section's writes and its result. */
    __atomic_store_n(&r->function, NULL, __ATOMIC_RELEASE);
    self->ncompleted++;
}

/*
 * Wake the clients parked on completed requests (the protocol: clients.c).  After a pass that
 * completed something: an RMW of the parked count, then - only if some client is parked - a look at
 * every mailbox.  A servicing thread that completes a request and then blocks in a later section
 * of the same pass never reaches the end of its pass: it wakes them before it blocks
 * (rcl_pool_before_block), for the blocked section may well be waiting for that client - a client
 * granted the lock the section wants next.  (The free thread that would otherwise find them may
 * have gone to its idle sleep before the completion: it saw the request claimed, so not
 * servable.  Seen as a deadlock in test_rcl's nested case, bounded, about once in 10 runs.)  Every
 * mailbox, not only this pass's, and also when this pass completed nothing but clients are
 * parked: the thread that replaces a blocked one wakes that one's clients too.
 */
void rcl_wake_parked(struct rcl_server *srv, struct rcl_sthread *self)
{
    if (!self->ncompleted && !__atomic_load_n(&srv->parked_clients, __ATOMIC_RELAXED))
        return;
    self->ncompleted = 0;
    /* seq_cst read-modify-write of the count the parking client increments (seq_cst): one of
     * the two comes first in its modification order and synchronises with the other - either
     * the client then sees our NULL, or we see its parked = 1.  (An RMW rather than a fence:
     * ThreadSanitizer has no fences.  The count has a line of its own.) */
    if (!__atomic_fetch_add(&srv->parked_clients, 0, __ATOMIC_SEQ_CST))
        return;
    unsigned n = __atomic_load_n(&rcl_nids, __ATOMIC_RELAXED);
    for (unsigned i = 0; i < n; i++) {
        struct rcl_mailbox *r = &srv->mb[i];
        if (__atomic_load_n(&r->parked, __ATOMIC_ACQUIRE) &&
            !__atomic_load_n(&r->function, __ATOMIC_ACQUIRE) &&
            __atomic_exchange_n(&r->parked, 0, __ATOMIC_RELAXED) == 1)
            lt_futex_wake(&r->parked, 1);
    }
}

/* Run a section for the client of mailbox r; m is held (holder = r.real_me + 1) and released
 * on return, the request not yet completed.  Returns the section's result. */
static void *run(struct rcl_server *srv, struct rcl_mailbox *r, lt_mutex_t *m, lt_cs_fn fn,
                 int32_t real_me)
{
    struct rcl_client *me = &rcl_self;
    me->real_me = real_me;
    me->cur = r;
    me->cur_lock = m;
    int site = m->_site;
    if (__atomic_load_n(&m->_flags, __ATOMIC_RELAXED) &
        LT_MUTEX_F_RECURSIVE_) { /* a nested lt_mutex_lock counts the depth */
        __atomic_store_n(&m->_owner, lt_self(), __ATOMIC_RELAXED);
        m->_count = 1;
    }
    void *res = fn(__atomic_load_n(&r->context, __ATOMIC_RELAXED));
    if (__atomic_load_n(&m->_owner, __ATOMIC_RELAXED)) { /* set by recursion or a cond wait */
        m->_count = 0;
        __atomic_store_n(&m->_owner, 0, __ATOMIC_RELAXED);
    }
    me->cur = NULL;
    me->cur_lock = NULL;
    rcl_holder_release(srv, rcl_state(m));
    if (lt_thread_self.deferred_mutex == m)
        lt_cond_flush_deferred(); /* signals the section sent after a condition wait */
    lt_stat(site, LT_STAT_ACQUIRED);
    lt_stat(site, LT_STAT_DELEGATED);
    return res;
}

static inline void unclaim(uint32_t *claim)
{
    /* release: the next claimer on this CPU sees what we did (program order there anyway). */
    __atomic_store_n(claim, 0, __ATOMIC_RELEASE);
}

/* Serve mailbox i if it holds a request we can serve now: 1 if served (*lock: its lock). */
static int serve(struct rcl_server *srv, struct rcl_sthread *self, unsigned i, lt_mutex_t **lock)
{
    bool local = srv->pinned;
    uint32_t *claim = &srv->claims[i];
    if (!lt_local_cas32(claim, 0, 1, local))
        return 0; /* another servicing thread runs it (or waits in it) */
    struct rcl_mailbox *r = &srv->mb[i];
    /* acquire: the request's fields, written before the client published it. */
    lt_cs_fn f = __atomic_load_n(&r->function, __ATOMIC_ACQUIRE);
    if (!f) { /* completed since we looked */
        unclaim(claim);
        return 0;
    }
    lt_mutex_t *m = __atomic_load_n(&r->lock, __ATOMIC_RELAXED);
    int32_t real_me = __atomic_load_n(&r->real_me, __ATOMIC_RELAXED);
    struct rcl_lock *l = rcl_state(m);
    *lock = m;
    if (f == RCL_OP_RELEASE) {
        rcl_holder_release(srv, l);
        complete(self, r, NULL);
    } else if (!lt_local_cas32(rcl_holder(l), 0, (uint32_t)real_me + 1, local)) {
        if (f != RCL_OP_TRYGRANT) {
            unclaim(claim);
            return 0;
        }
        complete(self, r, (void *)(intptr_t)EBUSY);
    } else if (f == RCL_OP_GRANT || f == RCL_OP_TRYGRANT) {
        complete(self, r, NULL); /* the client holds the lock now */
    } else {
        __atomic_store_n(claim, 2, __ATOMIC_RELAXED); /* running it (see servable) */
        void *res = run(srv, r, m, f, real_me);
        /* Back to 1 before the completion: from then on the client's next request may sit in
         * the mailbox while we still hold the claim (servable). */
        __atomic_store_n(claim, 1, __ATOMIC_RELAXED);
        complete(self, r, res); /* m may be freed from here on */
    }
    unclaim(claim);
    return 1;
}

/* Whether a request that could be served now is waiting (the idle sleep's last look).  A
 * mailbox another servicing thread has claimed (claim 1) counts, for two reasons:
 *   - that thread may have found the request's lock still held, let it go unserved a moment
 *     later (serve), and then retire, after the holder's release found us not yet asleep and
 *     kicked nobody;
 *   - that thread may have completed the request and not yet let the claim go: the client's
 *     next request may already be there, posted while the server was RUNNING (no kick), and
 *     the thread that holds the claim goes on with its pass and may retire.
 * Skipping either put the last free thread to sleep with a grantable request waiting: the pool
 * and its clients all asleep (test_fork under rcl, bounded and demoted, so that the servicing
 * threads time-slice on their CPU: with two runs side by side, a hang in about 1 pair of 4-8;
 * with the first reason fixed, 1 in 5-50; with both, none in 350).  A mailbox whose
 * section runs (claim 2) does not count: the thread running it completes it, however long it
 * waits, and sets the claim back to 1 before the completion (serve). */
static bool servable(struct rcl_server *srv)
{
    bool local = srv->pinned, found = false;
    unsigned n = __atomic_load_n(&rcl_nids, __ATOMIC_RELAXED);
    for (unsigned i = 0; i < n && !found; i++) {
        struct rcl_mailbox *r = &srv->mb[i];
        if (!__atomic_load_n(&r->function, __ATOMIC_SEQ_CST))
            continue;
        if (!lt_local_cas32(&srv->claims[i], 0, 1, local)) {
            /* relaxed: a word of this CPU's threads (the header). */
            found = __atomic_load_n(&srv->claims[i], __ATOMIC_RELAXED) == 1;
            continue;
        }
        lt_cs_fn f = __atomic_load_n(&r->function, __ATOMIC_SEQ_CST);
        if (f) {
            lt_mutex_t *m = __atomic_load_n(&r->lock, __ATOMIC_RELAXED);
            found = f == RCL_OP_RELEASE || f == RCL_OP_TRYGRANT ||
                    __atomic_load_n(rcl_holder(rcl_state(m)), __ATOMIC_SEQ_CST) == 0;
        }
        unclaim(&srv->claims[i]);
    }
    return found;
}

/* One pass over the mailboxes; returns the requests served. */
static unsigned pass(struct rcl_server *srv, struct rcl_sthread *self)
{
    bool local = srv->pinned;
    __atomic_store_n(&srv->alive, 1, __ATOMIC_RELAXED);
    __atomic_store_n(&self->timestamp, __atomic_load_n(&srv->timestamp, __ATOMIC_RELAXED),
                     __ATOMIC_RELAXED);
    lt_local_add32(&srv->nfree, -1, local);
    unsigned n = __atomic_load_n(&rcl_nids, __ATOMIC_RELAXED);
    unsigned served = 0, sections = 0, distinct = 0;
    lt_mutex_t *seen[8];
    struct rcl_mailbox *mb = srv->mb;
    for (unsigned i = 0; i < n; i++) {
        struct rcl_mailbox *r = &mb[i];
        __builtin_prefetch(r + 1, 0, 3);
        if (!__atomic_load_n(&r->function, __ATOMIC_RELAXED))
            continue;
        lt_mutex_t *m;
        if (!serve(srv, self, i, &m))
            continue;
        served++;
        if (distinct < 8) { /* the false-serialisation statistic */
            unsigned k = 0;
            while (k < distinct && seen[k] != m)
                k++;
            if (k == distinct)
                seen[distinct++] = m;
        }
        sections++;
    }
    lt_local_add32(&srv->nfree, 1, local);
    struct rcl_counters *ct = &srv->ct;
    lt_local_add64(&ct->passes, 1, local);
    if (served) {
        lt_local_add64(&ct->active_passes, 1, local);
        lt_local_add64(&ct->requests, served, local);
        lt_local_add64(&ct->scanned, n, local);
        lt_local_add64(&ct->distinct, distinct, local);
        if (distinct > 1)
            lt_local_add64(&ct->multi_lock, 1, local);
    }
    (void)sections;
    rcl_wake_parked(srv, self);
    return served;
}

static void idle_sleep(struct rcl_server *srv)
{
    uint32_t s = RCL_RUNNING;
    /* seq_cst, as servable()'s loads: SLEEPING comes before our last look at the mailboxes,
     * against a client's request (seq_cst) before its look at the state (clients.c), and a
     * holder's release before its look (rcl_holder_release). */
    if (!__atomic_compare_exchange_n(&srv->state, &s, RCL_SLEEPING, 0, __ATOMIC_SEQ_CST,
                                     __ATOMIC_RELAXED) &&
        s != RCL_SLEEPING)
        return;
    if (servable(srv)) {
        s = RCL_SLEEPING;
        __atomic_compare_exchange_n(&srv->state, &s, RCL_RUNNING, 0, __ATOMIC_RELAXED,
                                    __ATOMIC_RELAXED);
        return;
    }
    lt_local_add64(&srv->ct.idle_sleeps, 1, srv->pinned);
    while (__atomic_load_n(&srv->state, __ATOMIC_ACQUIRE) == RCL_SLEEPING)
        lt_futex_wait(&srv->state, RCL_SLEEPING, NULL, CLOCK_MONOTONIC);
}

/* Idle, not SCHED_FIFO: give this CPU to whoever else wants it, and say whether anyone took it
 * since the last call - our context switches went up (a yield that found another runnable
 * thread; a wake-up that preempted us).  Alone on the CPU, the yield returns at once and the
 * count stays. */
static bool cpu_wanted(uint64_t *switches)
{
    sched_yield();
    struct rusage ru;
    if (getrusage(RUSAGE_THREAD, &ru) != 0)
        return true;
    uint64_t n = (uint64_t)ru.ru_nvcsw + (uint64_t)ru.ru_nivcsw;
    bool wanted = n != *switches;
    *switches = n;
    return wanted;
}

void *rcl_servicing_main(void *arg)
{
    struct rcl_sthread *self = arg;
    struct rcl_server *srv = self->srv;
    struct rcl_client *me = &rcl_self;
    me->srv = srv;
    me->st = self;
    __atomic_store_n(&self->tid, lt_self(), __ATOMIC_RELAXED); /* the manager reads it */
    rcl_pool_settle(srv, 0);
    if (__atomic_load_n(&srv->state, __ATOMIC_ACQUIRE) == RCL_STOPPED) {
        /* The first thread of a new server touches the mailboxes first: their pages come from
         * the server CPU's NUMA node (first-touch placement).  Then the server is open.  Only
         * a new one: a server restarted in a forked child has its parent's pages already, and
         * there the child's first request is posted before it starts (the request starts it) -
         * writing a zero byte at each page's start clobbered the lock pointer of mailbox 0,
         * 64, ...: the child crashed or hung (libuv's fork tests under rcl). */
        if (!srv->placed) {
            /* A write of what is there: a zero written at the slot bitmap's page cleared the
             * bit create() reserves for "inline", and the first lock bound to the server was
             * given slot 0 - its holder kept in the lock's own line, next to the clients'
             * `callers` word (seen as "inline_holders": 1 in the statistics). */
            long page = sysconf(_SC_PAGESIZE);
            size_t bytes = region_bytes();
            volatile unsigned char *p = (volatile unsigned char *)srv->mb;
            for (size_t off = 0; off < bytes; off += (size_t)(page > 0 ? page : 4096))
                p[off] = p[off];
            srv->placed = true;
        }
        /* release: a client that sees RUNNING sees the server set up. */
        __atomic_store_n(&srv->state, RCL_RUNNING, __ATOMIC_RELEASE);
        lt_futex_wake(&srv->state, INT_MAX); /* the starter, the manager, the backup */
    }
    uint64_t idle_since = 0;
    unsigned idle_passes = 0;
    uint64_t switches = 0;       /* cpu_wanted's last reading ... */
    bool switches_known = false; /* ... taken during this idle spell */
    for (;;) {
        unsigned served = pass(srv, self);
        if (__atomic_load_n(&srv->nservicing, __ATOMIC_RELAXED) > 1) {
            lt_local_add64(&srv->ct.slow_passes, 1, srv->pinned);
            rcl_pool_slow_path(srv, self);
        }
        if (served) {
            idle_since = 0;
            idle_passes = 0;
            switches_known = false;
            continue;
        }
        if (!__atomic_load_n(&self->fifo_now, __ATOMIC_RELAXED)) {
            /* SCHED_OTHER (degraded, or bounded and demoted): idle, we spin only while nobody
             * else wants this CPU - a spin there takes another thread's turn, and answers
             * nothing sooner than the wake-up it saves.  Alone on the CPU, we spin as before. */
            bool known = switches_known;
            switches_known = true;
            if (cpu_wanted(&switches) && known) {
                lt_local_add64(&srv->ct.shared_sleeps, 1, srv->pinned);
                idle_sleep(srv);
                if (srv->bounded)
                    rcl_pool_restore(srv, self);
                idle_since = 0;
                switches_known = false;
                continue;
            }
        }
        if (srv->bounded && __atomic_load_n(&srv->local_clients, __ATOMIC_RELAXED)) {
            /* A client on this CPU waits for its answer, and runs only once we stop. */
            lt_local_add64(&srv->ct.local_sleeps, 1, srv->pinned);
            idle_sleep(srv);
            rcl_pool_restore(srv, self);
            idle_since = 0;
            continue;
        }
        if (++idle_passes & 63)
            continue; /* the clock every 64 empty passes: ~20 ns a read, on the server's path */
        uint64_t now = lt_now_ns();
        if (!idle_since) {
            idle_since = now;
        } else if (now - idle_since > (srv->bounded ? lt_spin_budget_ns() : RCL_IDLE_NS)) {
            idle_sleep(srv);
            if (srv->bounded)
                rcl_pool_restore(srv, self);
            idle_since = 0;
        }
    }
    return NULL;
}

/* ---- statistics ---- */

static double ratio(uint64_t a, uint64_t b)
{
    return b ? (double)a / (double)b : 0.0;
}

void rcl_stats_site(FILE *f, int site)
{
    int cpu, server = rcl_site_server(site, &cpu);
    fprintf(f, ", \"server\": %d, \"server_cpu\": %d", server, cpu);
}

void rcl_stats_json(FILE *f)
{
    const char *mode = rcl_mode_name(), *why = rcl_mode_reason();
    int w = rcl_cfg_wait;
    fprintf(f, "{\"mode\": ");
    if (mode)
        fprintf(f, "\"%s\"", mode);
    else
        fputs("null", f);
    fputs(", \"degraded_reason\": ", f);
    if (why) {
        fputc('"', f);
        for (const char *p = why; *p; p++)
            if (*p != '"' && *p != '\\')
                fputc(*p, f);
        fputc('"', f);
    } else {
        fputs("null", f);
    }
    bool bounded = mode && strcmp(mode, "bounded") == 0;
    fprintf(f, ", \"client_wait\": \"%s\", \"manager_period_ms\": %u, \"idle_sleep_us\": %u, ",
            rcl_wait_name(w < 0 ? RCL_WAIT_PARK : (enum rcl_wait_policy)w), rcl_manager_period_ms,
            (unsigned)((bounded ? lt_spin_budget_ns() : RCL_IDLE_NS) / 1000));
    rcl_clients_stats_json(f);
    fputs(", \"servers\": [", f);
    int first = 1;
    for (int c = 0; c < CPU_SETSIZE; c++) {
        struct rcl_server *srv = __atomic_load_n(&servers[c], __ATOMIC_ACQUIRE);
        if (!srv)
            continue;
        struct rcl_counters k;
        uint64_t *dst = (uint64_t *)&k, *src = (uint64_t *)&srv->ct;
        for (size_t i = 0; i < sizeof k / sizeof(uint64_t); i++)
            dst[i] = __atomic_load_n(&src[i], __ATOMIC_RELAXED);
        fprintf(f,
                "%s\n      {\"server\": %d, \"cpu\": %d, \"scheduling\": \"%s\", \"pinned\": %s, "
                "\"locks\": %u, \"requests\": %llu, \"passes\": %llu, \"active_passes\": %llu, "
                "\"use_rate\": %.6f, \"false_serialisation_rate\": %.6f, "
                "\"multi_lock_pass_rate\": %.6f, \"slow_path_passes\": %llu, \"idle_sleeps\": "
                "%llu, \"servicing_threads_created\": %llu, \"pool_max\": %llu, "
                "\"prepared_woken\": %llu, \"retirements\": %llu, \"manager\": "
                "{\"activations\": %llu, \"alive_misses\": %llu, \"interventions\": %llu, "
                "\"elections\": %llu}, \"backup_runs\": %llu, \"demotions\": %llu, "
                "\"local_sleeps\": %llu, \"shared_sleeps\": %llu, \"starvations\": %llu, "
                "\"inline_holders\": %u}",
                first ? "" : ",", srv->number, srv->cpu, srv->fifo ? "SCHED_FIFO" : "SCHED_OTHER",
                srv->pinned ? "true" : "false", __atomic_load_n(&srv->nlocks, __ATOMIC_RELAXED),
                (unsigned long long)k.requests, (unsigned long long)k.passes,
                (unsigned long long)k.active_passes, ratio(k.requests, k.scanned),
                ratio(k.distinct, k.scanned), ratio(k.multi_lock, k.active_passes),
                (unsigned long long)k.slow_passes, (unsigned long long)k.idle_sleeps,
                (unsigned long long)k.threads, (unsigned long long)k.max_pool,
                (unsigned long long)k.wakeups, (unsigned long long)k.retirements,
                (unsigned long long)k.manager_checks, (unsigned long long)k.alive_misses,
                (unsigned long long)k.interventions, (unsigned long long)k.elections,
                (unsigned long long)k.backup_runs, (unsigned long long)k.demotions,
                (unsigned long long)k.local_sleeps, (unsigned long long)k.shared_sleeps,
                (unsigned long long)k.starvations,
                __atomic_load_n(&srv->ninline, __ATOMIC_RELAXED));
        first = 0;
    }
    fputs(first ? "]}" : "\n    ]}", f);
}
