/*
 * pool.c - an RCL server's threads (the paper §3.2.1, Algorithms 4 and 5): the servicing
 * threads, the manager, the backup; all pinned to the server's CPU.
 *
 * Why a pool: a section may block in the kernel (a condition wait, I/O, a contended POSIX
 * lock), busy-wait for something another section of the same server will do (the paper's
 * Fig. 2), or be preempted.  One servicing thread would then stall every lock of the server.
 * Invariant: when a servicing thread blocks or spins, another one, free, exists and eventually
 * runs.  The pool is kept minimal - at most one free thread: a thread that ends a pass with
 * another free thread in the pool retires (Algorithm 4's slow path) and sleeps on its own
 * `servicing` word until the manager needs it again.
 *
 *   servicing thread:  in the pool (servicing = 1) --pass ends, nfree > 1: retire--> prepared
 *                      prepared --manager: servicing = 1, FUTEX_WAKE--> in the pool
 *
 * Two modes, chosen when the first server starts and reported (the statistics; stderr when
 * SCHED_FIFO was wanted but is not permitted):
 *
 * SCHED_FIFO (the paper's; needs CAP_SYS_NICE or RLIMIT_RTPRIO): priorities manager (4) >
 * servicing (3) > backup (2).  A servicing thread is never preempted by the application (nor
 * time-sliced), so a lock holder is never preempted.
 *   - backup: runs only when every servicing thread is blocked in the kernel; clears is_alive
 *     and wakes the manager at once (then naps 1 ms, so that a pool that stays blocked costs no
 *     CPU).
 *   - manager: wakes every rcl_manager_period_ms (a time slice), or when the backup calls.  If
 *     no pass began since its last visit (is_alive clear) and no servicing thread is free, it
 *     wakes a prepared thread or creates one.  Then it elects, round-robin by timestamp, a
 *     servicing thread that has not run lately, and moves every other one to the back of the
 *     SCHED_FIFO run queue (lower, then raise, its priority): a busy-waiting section (Fig. 2)
 *     gives the CPU up only this way.
 *
 * SCHED_FIFO as the paper has it is for a CPU reserved for the server: the default (auto)
 * chooses it only on an isolated CPU, or LOCKTUNE_RCL_MODE=fifo asks for it (docs/delegation.md,
 * "Neighbours").
 *
 * Bounded (the default on a CPU that is not reserved, when SCHED_FIFO is permitted;
 * LOCKTUNE_RCL_MODE=bounded): SCHED_FIFO with a budget.  A server woken for a request preempts
 * whatever runs on its CPU at once (degraded, its requests waited for the running thread's turn:
 * 2-5 ms per request beside two busy processes, where glibc's lock costs nothing), but no busy
 * period keeps the CPU from others for longer than the budget:
 *
 *   SCHED_FIFO --a manager check finds the servicing threads took more than RCL_BUDGET_PCT of
 *          the CPU since the last one (their CPU clocks; a period, 4 ms), or the canary (below)
 *          kept off the CPU for RCL_STARVED_PERIODS while they took RCL_CROWD_PCT of it: each to
 *          SCHED_OTHER, demoted = 1--> demoted
 *   demoted (a fair share, EEVDF's least slice) --a check finds them below RCL_RESTORE_PCT and
 *          the canary on time for RCL_HOLD_NS: demoted = 0--> each takes SCHED_FIFO back at its
 *          next idle sleep or reactivation (rcl_pool_restore)
 *
 * So a busy server - its own load, or a section busy-waiting for a thread it would starve - runs
 * as a degraded one until its load falls; the others on its CPU are kept off it at most about
 * two manager periods at a time by each bounded server there, and get at least 60% of it beside
 * one.  The budget is the process's own; the canary, an ordinary thread of the server's on its
 * CPU, sees the CPU's: the servers of several processes there, each within its budget, demote
 * themselves when together they keep it off.  It spins the runtime's spin budget before its idle
 * sleep, not RCL_IDLE_NS (server.c), and moves its clients off its CPU as the SCHED_FIFO mode does
 * (server.c, rcl_move_off_servers, says what a client left there did); a client that cannot
 * leave is counted while it waits, and the server sleeps at once when it has nothing else to do.
 * The backup, which would take a demoted pool for a blocked one, naps while the server is demoted;
 * the manager's period check still grows the pool (a blocked section). Under ThreadSanitizer (its
 * spin locks hang between SCHED_FIFO threads of one CPU, test_rcl.c) auto chooses the degraded
 * mode.
 *
 * Degraded (no SCHED_FIFO permission, one CPU, ThreadSanitizer, or LOCKTUNE_RCL_MODE=degraded): the
 * paper only says the manager and backup are gone (§3.2.2) and leaves the pool's growth open. Here:
 *   - servicing threads and the manager are ordinary SCHED_OTHER threads, still pinned: CFS
 *     time-slices them, so a busy-waiting section no longer needs an election - once a second
 *     servicing thread exists, it gets its share of the CPU within a time slice;
 *   - there is no backup thread: the manager's period check (below) sees a pool whose every
 *     thread blocked within a period.  (A SCHED_IDLE backup - the earlier design - runs only
 *     when nothing else on the CPU can: on a busy CPU a killed process then waited for it for
 *     up to a second before it could exit, its sockets still open - memcached's
 *     t/daemonize.t.  Every thread of a degraded server is an ordinary SCHED_OTHER thread.)
 *   - the manager's period check is the same as under SCHED_FIFO (it covers the busy-waiting
 *     and the blocked cases).
 * Liveness is therefore the same as the paper's; the costs are that servicing threads share
 * their CPU with whatever else the scheduler puts there (application threads should be pinned
 * elsewhere), can be preempted while holding a lock, and react to blocking one manager period
 * (4 ms) later - the price of never keeping another thread off the CPU for longer than the
 * kernel's fair scheduler does.
 *
 * A section that is about to wait on a condition variable, or to yield for a lock of its own
 * server held elsewhere, knows it will stop serving: it makes sure a free servicing thread
 * exists itself (rcl_pool_before_block) instead of leaving it to the backup and the manager -
 * two context switches fewer per blocking section.
 *
 * The counters nservicing/nfree and the prepared stack are touched only by threads of this
 * CPU: core-local atomics (local.h).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "../config.h"
#include "../futex.h"
#include "../wait.h"
#include "rcl.h"

#define PRIO_BACKUP    2
#define PRIO_SERVICING 3
#define PRIO_MANAGER   4
#define BACKUP_NAP_NS  1000000u

#define SLICE_NS 100000u /* degraded servicing threads' time slice (the kernel's least) */

#define RCL_BUDGET_PCT      40 /* bounded: the most of its CPU a server takes under SCHED_FIFO ... */
#define RCL_RESTORE_PCT     20 /* ... and what it must fall below, demoted, to take SCHED_FIFO back */
#define RCL_STARVED_PERIODS 2  /* bounded: the canary kept off the CPU this long ... */
#define RCL_CROWD_PCT       10 /* ... while the server took at least this much of it: demoted ... */
#define RCL_HOLD_NS         100000000u /* ... and for at least this long after the last such check */

/* The kernel's struct sched_attr (sched_setattr(2); glibc 2.36 has no wrapper) and its flag. */
#define SCHED_FLAG_RESET_ON_FORK 0x01
struct lt_sched_attr {
    uint32_t size, policy;
    uint64_t flags;
    int32_t nice;
    uint32_t priority;
    uint64_t runtime, deadline, period;
};

unsigned rcl_manager_period_ms = 4;

static void fair_share(pid_t tid);
static int fifo(int prio);

enum { MODE_UNDECIDED, MODE_FIFO, MODE_BOUNDED, MODE_DEGRADED };
static int mode = MODE_UNDECIDED; /* under server.c's start lock */
static char reason[160];

const char *rcl_mode_name(void)
{
    int m = __atomic_load_n(&mode, __ATOMIC_ACQUIRE);
    return m == MODE_FIFO       ? "fifo"
           : m == MODE_BOUNDED  ? "bounded"
           : m == MODE_DEGRADED ? "degraded"
                                : NULL;
}

const char *rcl_mode_reason(void)
{
    return __atomic_load_n(&mode, __ATOMIC_ACQUIRE) == MODE_DEGRADED ? reason : NULL;
}

/* ---- threads ---- */

enum role { ROLE_SERVICING, ROLE_MANAGER, ROLE_BACKUP, ROLE_CANARY };

/* Create a detached thread of srv's, pinned to its CPU (unless srv->pinned is false), with
 * every signal blocked (the application's signals go to its own threads). */
static int spawn(struct rcl_server *srv, enum role role, void *(*fn)(void *), void *arg,
                 pthread_t *out)
{
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
    if (srv->pinned) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(srv->cpu, &set);
        pthread_attr_setaffinity_np(&a, sizeof set, &set);
    }
    if (srv->fifo && role != ROLE_CANARY) {
        /* Every thread starts at the manager's priority and lowers itself (settle): a thread
         * created below a busy servicing thread would not run until that one yields - and a
         * pthread_create that waits for its thread to start (ThreadSanitizer's does, so could
         * a profiler's) would wait for ever. */
        struct sched_param p = {.sched_priority = PRIO_MANAGER};
        pthread_attr_setinheritsched(&a, PTHREAD_EXPLICIT_SCHED);
        pthread_attr_setschedpolicy(&a, SCHED_FIFO);
        pthread_attr_setschedparam(&a, &p);
    } else {
        struct sched_param p = {.sched_priority = 0};
        pthread_attr_setinheritsched(&a, PTHREAD_EXPLICIT_SCHED);
        pthread_attr_setschedpolicy(&a, SCHED_OTHER);
        pthread_attr_setschedparam(&a, &p);
    }
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_t t;
    rcl_self.spawning = true; /* a server's thread, not a section's (inherit.c) */
    int r = pthread_create(&t, &a, fn, arg);
    rcl_self.spawning = false;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&a);
    /* release: the manager reads a servicing thread's handle without the pool lock (elect);
     * until this store it reads 0 and leaves that thread alone. */
    if (r == 0 && out)
        __atomic_store_n(out, t, __ATOMIC_RELEASE);
    return r;
}

/* A new thread of srv's takes its own scheduling: under SCHED_FIFO its priority (lowered from
 * the manager's, it goes to the front of its new priority's queue); degraded, nothing to do. */
void rcl_pool_settle(struct rcl_server *srv, int role)
{
    static const int prio[] = {PRIO_SERVICING, PRIO_MANAGER, PRIO_BACKUP};
    /* Named for top, ps -L and perf: they would otherwise carry the name of the application
     * thread that started the server.  prctl on ourselves: pthread_setname_np on another thread
     * opens a file under /proc, and no descriptor is opened on the program's behalf. */
    static const char *const names[] = {[ROLE_SERVICING] = "lt-rcl-serve",
                                        [ROLE_MANAGER] = "lt-rcl-manager",
                                        [ROLE_BACKUP] = "lt-rcl-backup",
                                        [ROLE_CANARY] = "lt-rcl-canary"};
    prctl(PR_SET_NAME, names[role]);
    if (role == ROLE_CANARY || (srv->bounded && role == ROLE_SERVICING &&
                                __atomic_load_n(&srv->demoted, __ATOMIC_RELAXED))) {
        fair_share(0); /* the canary; or the pool grows while the budget is spent */
        return;
    }
    if (srv->fifo && role == ROLE_SERVICING)
        __atomic_store_n(&rcl_self.st->fifo_now, 1, __ATOMIC_RELAXED);
    if (srv->fifo && role != ROLE_MANAGER) {
        fifo(prio[role]);
    } else if (!srv->fifo && role == ROLE_SERVICING) {
        /* Degraded: the least time slice the kernel allows (EEVDF's per-task slice, Linux
         * 6.12+; older kernels ignore it).  A servicing thread that wakes up for a request then
         * has the earliest deadline and preempts the thread running on its CPU at once, where
         * it waited for that thread's whole slice (and on a loaded CPU, for several); its share
         * of the CPU stays a fair one, taken in shorter turns. */
        fair_share(0);
    }
}

/* SCHED_OTHER with the least time slice, for thread tid (0: the caller).  Reset on fork, as
 * fifo() below. */
static void fair_share(pid_t tid)
{
    struct lt_sched_attr a = {.size = sizeof a,
                              .policy = SCHED_OTHER,
                              .flags = SCHED_FLAG_RESET_ON_FORK,
                              .runtime = SLICE_NS};
    syscall(SYS_sched_setattr, tid, &a, 0);
}

/* The calling thread to SCHED_FIFO at `prio`, reset on fork: a thread that a section creates
 * on a servicing thread (memcached starts its LRU threads inside sections) is not a real-time
 * thread on the server's CPU that no budget bounds, whatever creates it (inherit.c gives the
 * threads pthread_create makes there the client's affinity, signal mask and policy).  0, or -1
 * (errno). */
static int fifo(int prio)
{
    struct sched_param p = {.sched_priority = prio};
    return sched_setscheduler(0, SCHED_FIFO | SCHED_RESET_ON_FORK, &p);
}

void rcl_pool_restore(struct rcl_server *srv, struct rcl_sthread *self)
{
    if (__atomic_load_n(&self->fifo_now, __ATOMIC_RELAXED) ||
        __atomic_load_n(&srv->demoted, __ATOMIC_RELAXED))
        return;
    if (fifo(PRIO_SERVICING) == 0)
        __atomic_store_n(&self->fifo_now, 1, __ATOMIC_RELAXED);
}

/* A servicing thread's CPU time, ns (0 before it has a handle). */
static uint64_t cpu_ns(struct rcl_sthread *t)
{
    /* acquire: pairs with spawn's store; 0 while pthread_create has not returned */
    pthread_t th = __atomic_load_n(&t->thread, __ATOMIC_ACQUIRE);
    clockid_t c;
    struct timespec ts;
    if (!th || pthread_getcpuclockid(th, &c) != 0 || clock_gettime(c, &ts) != 0)
        return 0;
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Bounded, the manager's check (the state machine in the header): the CPU time the servicing
 * threads took since the last check, against the time that passed, and how long the canary has
 * been kept off the CPU.  Above RCL_BUDGET_PCT under SCHED_FIFO, or the canary late by
 * RCL_STARVED_PERIODS periods while they took RCL_CROWD_PCT, they go to SCHED_OTHER; below
 * RCL_RESTORE_PCT, demoted, with the canary on time for RCL_HOLD_NS, they may take SCHED_FIFO back
 * (each at its next idle sleep or reactivation: rcl_pool_restore). */
static void enforce_budget(struct rcl_server *srv)
{
    uint64_t now = lt_now_ns(), used = 0;
    for (struct rcl_sthread *t = __atomic_load_n(&srv->all, __ATOMIC_ACQUIRE); t; t = t->next_all)
        used += cpu_ns(t);
    uint64_t dt = now - srv->budget_at, du = used - srv->budget_cpu;
    bool first = srv->budget_at == 0;
    srv->budget_at = now;
    srv->budget_cpu = used;
    if (first || dt == 0)
        return;
    /* signed: the canary may have run since we read the clock; 0: parked (its header) */
    uint64_t seen = __atomic_load_n(&srv->canary_seen, __ATOMIC_RELAXED);
    int64_t late = seen ? (int64_t)(now - seen) : 0;
    /* Kept off by us, or by others?  A canary of a server that took little of the CPU meanwhile
     * was kept off by something else - other processes' ordinary threads (the kernel's fair
     * scheduler lets one group starve the others on Linux 6.18.44: docs/delegation.md, "The
     * kernel's group-scheduling bug"), a real-time thread not ours.  Demoted then, the server only
     * joins the starved, and its clients wait with it: a daemonized memcached beside a loaded
     * machine took seconds to start, its demoted servicing thread runnable and not running. */
    bool starved = late > (int64_t)RCL_STARVED_PERIODS * rcl_manager_period_ms * 1000000 &&
                   du * 100 >= dt * RCL_CROWD_PCT;
    if (starved) {
        srv->hold_until = now + RCL_HOLD_NS;
        lt_local_add64(&srv->ct.starvations, 1, srv->pinned);
    }
    bool demoted = __atomic_load_n(&srv->demoted, __ATOMIC_RELAXED);
    if (demoted && du * 100 < dt * RCL_RESTORE_PCT && now >= srv->hold_until) {
        __atomic_store_n(&srv->demoted, 0, __ATOMIC_RELAXED);
        return;
    }
    if (!demoted && du * 100 <= dt * RCL_BUDGET_PCT && !starved)
        return;
    if (!demoted) {
        __atomic_store_n(&srv->demoted, 1, __ATOMIC_RELAXED);
        lt_local_add64(&srv->ct.demotions, 1, srv->pinned);
    }
    /* Every check while demoted, not only the first: a thread whose rcl_pool_restore read
     * demoted = 0 just before we set it takes SCHED_FIFO after our sweep. */
    for (struct rcl_sthread *t = __atomic_load_n(&srv->all, __ATOMIC_ACQUIRE); t; t = t->next_all) {
        int32_t tid = __atomic_load_n(&t->tid, __ATOMIC_RELAXED);
        if (tid && __atomic_exchange_n(&t->fifo_now, 0, __ATOMIC_RELAXED))
            fair_share(tid);
    }
}

static void note_pool_size(struct rcl_server *srv)
{
    uint64_t n = (uint64_t)__atomic_load_n(&srv->nservicing, __ATOMIC_RELAXED);
    if (n > __atomic_load_n(&srv->ct.max_pool, __ATOMIC_RELAXED))
        __atomic_store_n(&srv->ct.max_pool, n, __ATOMIC_RELAXED);
}

/* A new servicing thread, counted in the pool (and free) before it runs.  Under pool_lock. */
static int new_servicing_thread(struct rcl_server *srv)
{
    struct rcl_sthread *t = calloc(1, sizeof *t);
    if (!t)
        return ENOMEM;
    t->srv = srv;
    t->servicing = 1;
    lt_local_add32(&srv->nservicing, 1, srv->pinned);
    lt_local_add32(&srv->nfree, 1, srv->pinned);
    /* Listed before it runs (the manager elects from this list), unlisted if it cannot. */
    t->next_all = srv->all;
    /* release: the manager, reading the list without the lock, sees t's fields. */
    __atomic_store_n(&srv->all, t, __ATOMIC_RELEASE);
    int r = spawn(srv, ROLE_SERVICING, rcl_servicing_main, t, &t->thread);
    if (r != 0) {
        __atomic_store_n(&srv->all, t->next_all, __ATOMIC_RELEASE);
        lt_local_add32(&srv->nservicing, -1, srv->pinned);
        lt_local_add32(&srv->nfree, -1, srv->pinned);
        free(t);
        return r;
    }
    lt_local_add64(&srv->ct.threads, 1, srv->pinned);
    note_pool_size(srv);
    return 0;
}

/* Make a free servicing thread exist: wake a prepared one, or create one.  Under pool_lock:
 * the prepared stack has one popper at a time (no ABA), and `all` one writer. */
static void add_free_thread(struct rcl_server *srv)
{
    bool local = srv->pinned;
    pthread_mutex_lock(&srv->pool_lock);
    struct rcl_sthread *t = __atomic_load_n(&srv->prepared, __ATOMIC_ACQUIRE);
    while (t && !__atomic_compare_exchange_n(&srv->prepared, &t, t->next_prepared, 0,
                                             __ATOMIC_ACQUIRE, __ATOMIC_ACQUIRE))
        ;
    if (!t) {
        new_servicing_thread(srv); /* on failure the manager tries again next period */
        pthread_mutex_unlock(&srv->pool_lock);
        return;
    }
    pthread_mutex_unlock(&srv->pool_lock);
    lt_local_add32(&srv->nservicing, 1, local);
    lt_local_add32(&srv->nfree, 1, local);
    lt_local_add64(&srv->ct.wakeups, 1, local);
    note_pool_size(srv);
    /* release: the woken thread sees the counts it is part of. */
    __atomic_store_n(&t->servicing, 1, __ATOMIC_RELEASE);
    lt_futex_wake(&t->servicing, 1);
}

void rcl_pool_before_block(struct rcl_server *srv)
{
    rcl_wake_parked(srv, rcl_self.st); /* this pass's clients: it will not reach its end */
    if (__atomic_load_n(&srv->nfree, __ATOMIC_RELAXED) > 0)
        return;
    add_free_thread(srv);
    lt_local_add64(&srv->ct.interventions, 1, srv->pinned);
}

void rcl_pool_slow_path(struct rcl_server *srv, struct rcl_sthread *self)
{
    bool local = srv->pinned;
    if (__atomic_load_n(&srv->nfree, __ATOMIC_RELAXED) <= 1) {
        sched_yield(); /* the others are inside sections (blocked, or busy): let them run */
        return;
    }
    /* Another thread is free: leave the pool (Algorithm 4). */
    __atomic_store_n(&self->servicing, 0, __ATOMIC_RELAXED);
    lt_local_add32(&srv->nservicing, -1, local);
    lt_local_add32(&srv->nfree, -1, local);
    lt_local_add64(&srv->ct.retirements, 1, local);
    struct rcl_sthread *top = __atomic_load_n(&srv->prepared, __ATOMIC_RELAXED);
    do
        self->next_prepared = top;
    while (!__atomic_compare_exchange_n(&srv->prepared, &top, self, 1, __ATOMIC_RELEASE,
                                        __ATOMIC_RELAXED));
    /* Sleep until activated; the futex re-checks the word, so no wake-up is lost. */
    while (!__atomic_load_n(&self->servicing, __ATOMIC_ACQUIRE))
        lt_futex_wait(&self->servicing, 0, NULL, CLOCK_MONOTONIC);
    if (srv->bounded)
        rcl_pool_restore(srv, self);
}

/* ---- the manager (Algorithm 5) ---- */

static struct timespec in_ns(uint64_t ns)
{
    uint64_t t = lt_now_ns() + ns;
    return (struct timespec){(time_t)(t / 1000000000u), (long)(t % 1000000000u)};
}

/* SCHED_FIFO: run a servicing thread that has not run lately, by moving every other one to
 * the back of the run queue. */
static void elect(struct rcl_server *srv)
{
    struct rcl_sthread *all = __atomic_load_n(&srv->all, __ATOMIC_ACQUIRE), *e = NULL;
    uint32_t ts = __atomic_load_n(&srv->timestamp, __ATOMIC_RELAXED);
    for (int round = 0; round < 2 && !e; round++) {
        for (struct rcl_sthread *t = all; t && !e; t = t->next_all)
            if (__atomic_load_n(&t->servicing, __ATOMIC_RELAXED) &&
                __atomic_load_n(&t->timestamp, __ATOMIC_RELAXED) < ts)
                e = t;
        if (!e) /* everyone ran since the last round: a new round */
            __atomic_store_n(&srv->timestamp, ++ts, __ATOMIC_RELAXED);
    }
    if (!e)
        return;
    __atomic_store_n(&e->timestamp, ts, __ATOMIC_RELAXED);
    for (struct rcl_sthread *t = all; t; t = t->next_all)
        if (t != e && __atomic_load_n(&t->servicing, __ATOMIC_RELAXED)) {
            /* acquire: pairs with spawn's store; 0 while pthread_create has not returned */
            pthread_t th = __atomic_load_n(&t->thread, __ATOMIC_ACQUIRE);
            if (!th)
                continue;
            /* lowered: front of the lower list; raised again: back of its own list */
            pthread_setschedprio(th, PRIO_BACKUP);
            pthread_setschedprio(th, PRIO_SERVICING);
        }
    lt_local_add64(&srv->ct.elections, 1, srv->pinned);
}

static void check(struct rcl_server *srv)
{
    bool local = srv->pinned;
    lt_local_add64(&srv->ct.manager_checks, 1, local);
    if (srv->bounded) /* also asleep: a server busy in short bursts sleeps between them */
        enforce_budget(srv);
    if (__atomic_load_n(&srv->state, __ATOMIC_ACQUIRE) != RCL_RUNNING)
        return;
    if (__atomic_load_n(&srv->alive, __ATOMIC_RELAXED)) {
        __atomic_store_n(&srv->alive, 0, __ATOMIC_RELAXED);
        return;
    }
    lt_local_add64(&srv->ct.alive_misses, 1, local);
    if (__atomic_load_n(&srv->nfree, __ATOMIC_RELAXED) == 0) {
        add_free_thread(srv);
        lt_local_add64(&srv->ct.interventions, 1, local);
    }
    if (srv->fifo && !__atomic_load_n(&srv->demoted, __ATOMIC_RELAXED))
        elect(srv); /* (demoted, its threads time-slice) */
}

/* Wait while the server is not started yet. */
static void wait_started(struct rcl_server *srv)
{
    while (__atomic_load_n(&srv->state, __ATOMIC_ACQUIRE) == RCL_STOPPED)
        lt_futex_wait(&srv->state, RCL_STOPPED, NULL, CLOCK_MONOTONIC);
}

static void *manager_main(void *arg)
{
    struct rcl_server *srv = arg;
    uint64_t period = (uint64_t)rcl_manager_period_ms * 1000000u;
    rcl_pool_settle(srv, ROLE_MANAGER);
    wait_started(srv);
    for (;;) {
        if (__atomic_load_n(&srv->state, __ATOMIC_ACQUIRE) == RCL_SLEEPING) {
            lt_futex_wait(&srv->state, RCL_SLEEPING, NULL, CLOCK_MONOTONIC);
            __atomic_store_n(&srv->alive, 1, __ATOMIC_RELAXED); /* a fresh period */
            /* A parked canary (0) is late from now on if it cannot run (relaxed: ours) */
            uint64_t parked = 0;
            __atomic_compare_exchange_n(&srv->canary_seen, &parked, lt_now_ns(), 0,
                                        __ATOMIC_RELAXED, __ATOMIC_RELAXED);
            /* A request: is the CPU ours to take?  At most once a period (each check reads
             * every servicing thread's CPU clock): a client on the server's CPU wakes it for
             * each of its requests. */
            if (srv->bounded && lt_now_ns() - srv->budget_at >= period)
                enforce_budget(srv);
            continue;
        }
        uint32_t w = __atomic_load_n(&srv->manager_word, __ATOMIC_ACQUIRE);
        struct timespec d = in_ns(period);
        lt_futex_wait(&srv->manager_word, w, &d, CLOCK_MONOTONIC); /* the period, or the backup */
        check(srv);
    }
    return NULL;
}

/* ---- the backup ---- */

static void *backup_main(void *arg)
{
    struct rcl_server *srv = arg;
    rcl_pool_settle(srv, ROLE_BACKUP);
    wait_started(srv);
    uint64_t nap = BACKUP_NAP_NS;
    for (;;) {
        if (__atomic_load_n(&srv->state, __ATOMIC_ACQUIRE) == RCL_SLEEPING) {
            lt_futex_wait(&srv->state, RCL_SLEEPING, NULL, CLOCK_MONOTONIC);
            continue;
        }
        /* Under SCHED_FIFO we run only when every servicing thread is blocked - or, bounded,
         * demoted to SCHED_OTHER: then they may well be running, and the manager checks.  Our
         * nap stays 1 ms: each wake-up is also a reschedule on the CPU, where a thread that is
         * no client waits (napping 4 ms, test_rcl neighbours' longest gap beyond the control
         * went from a median of 10 ms to 19 over 10 runs). */
        if (__atomic_load_n(&srv->demoted, __ATOMIC_RELAXED)) {
            struct timespec d = in_ns(nap);
            uint32_t w = __atomic_load_n(&srv->backup_word, __ATOMIC_RELAXED);
            lt_futex_wait(&srv->backup_word, w, &d, CLOCK_MONOTONIC);
            continue;
        }
        lt_local_add64(&srv->ct.backup_runs, 1, srv->pinned);
        __atomic_store_n(&srv->alive, 0, __ATOMIC_RELAXED);
        __atomic_fetch_add(&srv->manager_word, 1, __ATOMIC_RELEASE);
        lt_futex_wake(&srv->manager_word, 1);
        struct timespec d = in_ns(nap);
        uint32_t w = __atomic_load_n(&srv->backup_word, __ATOMIC_RELAXED);
        lt_futex_wait(&srv->backup_word, w, &d, CLOCK_MONOTONIC);
    }
    return NULL;
}

/* ---- the canary (bounded) ---- */

/* An ordinary SCHED_OTHER thread on the server's CPU, with the least time slice, that says it ran
 * once a period: if it cannot, no ordinary thread there can.  The budget above is this
 * process's; the canary sees the CPU's.  Several processes' servers there can each keep within
 * its own budget while together they fill the CPU with SCHED_FIFO work (test_rcl crowd: 4
 * servers, each busy 29% of the time, kept a thread pinned there off it for 0.4-0.7 s).  Their
 * canaries are all kept off: each manager demotes its server, and the CPU is shared fairly.
 *
 *   ticking --the server asleep for RCL_CANARY_IDLE periods: canary_seen = 0--> parked
 *   parked (futex on the state) --the server woken: manager: canary_seen 0 -> now (CAS);
 *          canary: canary_seen = now--> ticking
 *
 * It keeps ticking while the server sleeps between bursts of requests: the manager sleeps with
 * the server and restarts its period at each wake-up, and a server busy in short bursts, as each
 * of the crowd's is, is what the canary is for. */
#define RCL_CANARY_IDLE 250 /* periods: 1 s */

static void *canary_main(void *arg)
{
    struct rcl_server *srv = arg;
    rcl_pool_settle(srv, ROLE_CANARY);
    wait_started(srv);
    struct timespec period = {0, (long)rcl_manager_period_ms * 1000000};
    unsigned asleep = 0;
    for (;;) {
        __atomic_store_n(&srv->canary_seen, lt_now_ns(), __ATOMIC_RELAXED);
        clock_nanosleep(CLOCK_MONOTONIC, 0, &period, NULL);
        if (__atomic_load_n(&srv->state, __ATOMIC_ACQUIRE) != RCL_SLEEPING) {
            asleep = 0;
        } else if (++asleep >= RCL_CANARY_IDLE) {
            __atomic_store_n(&srv->canary_seen, 0, __ATOMIC_RELAXED);
            lt_futex_wait(&srv->state, RCL_SLEEPING, NULL, CLOCK_MONOTONIC);
            asleep = 0;
        }
    }
    return NULL;
}

/* ---- start ---- */

/* Whether ThreadSanitizer's runtime is in the process (the program's or ours). */
static bool under_tsan(void)
{
    return dlsym(RTLD_DEFAULT, "__tsan_init") != NULL;
}

static void decide_mode_degraded(const char *why)
{
    snprintf(reason, sizeof reason, "%s", why);
    __atomic_store_n(&mode, MODE_DEGRADED, __ATOMIC_RELEASE);
}

/* /sys/devices/system/cpu/isolated, read when the library loads: a descriptor opened later, on
 * one of the program's threads, would shift the numbers of those the program opens meanwhile
 * (algo/combining.c says how that broke a memcached test). */
static char isolated[512];

__attribute__((constructor)) static void read_isolated(void)
{
    FILE *f = fopen("/sys/devices/system/cpu/isolated", "r");
    if (!f)
        return;
    size_t n = fread(isolated, 1, sizeof isolated - 1, f);
    fclose(f);
    isolated[n] = '\0';
}

/* Whether the kernel keeps cpu for threads pinned there (isolcpus=, cpusets' isolated
 * partitions: /sys/devices/system/cpu/isolated, a list such as "1-3,5"). */
static bool cpu_reserved(int cpu)
{
    bool found = false;
    for (const char *p = isolated; *p && !found;) {
        char *end;
        long lo = strtol(p, &end, 10), hi = lo;
        if (end == p)
            break;
        if (*end == '-')
            hi = strtol(end + 1, &end, 10);
        found = cpu >= lo && cpu <= hi;
        p = *end == ',' ? end + 1 : end;
    }
    return found;
}

int rcl_pool_start(struct rcl_server *srv)
{
    int cfg = rcl_cfg_mode;
    if (mode == MODE_UNDECIDED && cfg == RCL_MODE_DEGRADED)
        decide_mode_degraded("LOCKTUNE_RCL_MODE=degraded");
    unsigned nusable;
    lt_config_usable_cpus(&nusable);
    if (mode == MODE_UNDECIDED && nusable < 2)
        decide_mode_degraded("one CPU: a SCHED_FIFO server would starve the application");
    /* The paper's unbounded SCHED_FIFO only on a CPU reserved for the server (docs/delegation.md,
     * "Neighbours"): a busy SCHED_FIFO server keeps every other thread off its CPU - threads of
     * other processes, other processes' servers (SCHED_FIFO peers of equal priority never share
     * the CPU), the threads of a killed process that must run to exit - until RT throttling,
     * 950 ms in the second.  Elsewhere, SCHED_FIFO with a budget (the header). */
    if (mode == MODE_UNDECIDED && cfg == RCL_MODE_AUTO && !cpu_reserved(srv->cpu)) {
        if (under_tsan())
            decide_mode_degraded("ThreadSanitizer: its spin locks hang between SCHED_FIFO "
                                 "threads of one CPU");
        else
            cfg = RCL_MODE_BOUNDED;
    }
    srv->pinned = true;
    srv->fifo = mode != MODE_DEGRADED;
    srv->bounded =
        srv->fifo && (mode == MODE_BOUNDED || (mode == MODE_UNDECIDED && cfg == RCL_MODE_BOUNDED));
    pthread_mutex_init(&srv->pool_lock, NULL);
    srv->alive = 1;
    /* The manager and the backup first: they wait for the first servicing thread, which
     * starts the server (RUNNING) once it has touched the mailboxes. */
    pthread_t t;
    int r = spawn(srv, ROLE_MANAGER, manager_main, srv, &t);
    if (r == EINVAL && srv->pinned) { /* the CPU is not ours after all: unpinned, C11 atomics */
        srv->pinned = false;
        r = spawn(srv, ROLE_MANAGER, manager_main, srv, &t);
    }
    if (r == EPERM && srv->fifo) {
        if (rcl_cfg_mode == RCL_MODE_FIFO || rcl_cfg_mode == RCL_MODE_BOUNDED) {
            fprintf(stderr,
                    "locktune: error: LOCKTUNE_RCL_MODE=%s: SCHED_FIFO is not "
                    "permitted (needs root, CAP_SYS_NICE or RLIMIT_RTPRIO >= %d)\n",
                    rcl_cfg_mode == RCL_MODE_FIFO ? "fifo" : "bounded", PRIO_MANAGER);
            exit(2);
        }
        /* Said in LOCKTUNE_STATS (the mode and its reason), never on the program's own
         * stderr: a library's note changes what the program prints (libuv's spawn tests
         * compare a child's output with what it wrote). */
        decide_mode_degraded("SCHED_FIFO not permitted (EPERM: needs CAP_SYS_NICE or "
                             "RLIMIT_RTPRIO)");
        srv->fifo = srv->bounded = false;
        r = spawn(srv, ROLE_MANAGER, manager_main, srv, &t);
    }
    if (r != 0)
        return r;
    if (mode == MODE_UNDECIDED)
        __atomic_store_n(&mode,
                         !srv->fifo     ? MODE_DEGRADED
                         : srv->bounded ? MODE_BOUNDED
                                        : MODE_FIFO,
                         __ATOMIC_RELEASE);
    if (srv->fifo && (r = spawn(srv, ROLE_BACKUP, backup_main, srv, &t)) != 0)
        return r; /* (a manager without servicing threads waits, harmlessly) */
    __atomic_store_n(&srv->canary_seen, lt_now_ns(), __ATOMIC_RELAXED);
    if (srv->bounded && (r = spawn(srv, ROLE_CANARY, canary_main, srv, &t)) != 0)
        return r;
    pthread_mutex_lock(&srv->pool_lock);
    r = new_servicing_thread(srv);
    pthread_mutex_unlock(&srv->pool_lock);
    if (r != 0)
        return r;
    wait_started(srv);
    return 0;
}
