/*
 * rcl.h - the Remote Core Locking runtime (Lozi et al., TOCS 2016, §3; docs/delegation.md):
 * servers, their mailboxes, client ids, servicing threads.  algo/rcl.c is the lock algorithm
 * on top of it.
 *
 * A server owns one CPU.  Its servicing threads, pinned there, loop over an array of
 * one-cache-line mailboxes, one per client thread, and run the critical sections posted in
 * them; the data those sections touch stays in the server CPU's caches.  A lock belongs to
 * one server (per site: locktune_config.h's `server`, LOCKTUNE_SERVERS, or the default).
 *
 * Files:
 *   rcl.h      this: the mailbox, the server, the per-thread state, the interfaces
 *   local.h    core-local atomics (the paper's local CAS / FAA)
 *   clients.c  client ids (dense, reused), a client's wait for its request (spin, yield, park)
 *   server.c   servers: placement, the servicing loop (Algorithm 4), idle sleep, fork, statistics
 *   pool.c     the servicing-thread pool: threads, retirement, the manager and backup threads
 *              (Algorithm 5) under SCHED_FIFO, and the degraded mode without it
 */
#ifndef LT_RCL_H
#define LT_RCL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "../algo.h"
#include "local.h"

#define RCL_LINE       64
#define RCL_MAILBOXES  4096 /* 256 KiB of mailboxes per server (the paper's fixed size) */
#define RCL_OVERFLOW   (RCL_MAILBOXES - 1) /* shared, serialised, by threads beyond the rest */
#define RCL_INLINE_CTX 32                  /* context bytes carried in the mailbox line */
#define RCL_HOLDERS    65536               /* holder words per server (256 KiB) */

/* Requests other than a section, in the function word (never valid function addresses). */
#define RCL_OP_GRANT    ((lt_cs_fn)(uintptr_t)1) /* lock(): take the lock for the client */
#define RCL_OP_TRYGRANT ((lt_cs_fn)(uintptr_t)2) /* trylock(): take it if free, else EBUSY */
#define RCL_OP_RELEASE  ((lt_cs_fn)(uintptr_t)3) /* unlock() */
#define RCL_OP_LAST     RCL_OP_RELEASE

/*
 * A mailbox: one cache line, the paper's request_t (Fig. 1, Alg. 4) - lock, context, function,
 * real_me - then the parking word and the context itself when it fits.
 *
 *   function: NULL --client: lock, context, real_me, then function (seq_cst)--> fn
 *             fn --server: result into context, then NULL (release)--> NULL
 *
 * The function word is written last by the client and cleared last by the server: it is the
 * only word either side waits on.
 */
struct rcl_mailbox {
    lt_mutex_t *lock;  /* atomic (relaxed): the lock */
    void *context;     /* atomic (relaxed): the context in, the section's result out */
    lt_cs_fn function; /* atomic: the request; NULL when none */
    int32_t real_me;   /* atomic (relaxed): the client the request is for (nested requests) */
    uint32_t parked;   /* atomic: 1 while the client sleeps on the request (futex word) */
    unsigned char inline_ctx[RCL_INLINE_CTX];
} __attribute__((aligned(RCL_LINE)));
_Static_assert(sizeof(struct rcl_mailbox) == RCL_LINE, "a mailbox is one cache line");

/*
 * An RCL lock's state, in lt_mutex_t._u (24 bytes).  The holder word - client id + 1 of whoever
 * holds the lock, 0 when free - is written only by the server's threads (core-local CAS); it
 * lives in the server's holder table (slot > 0), not in the lock: a client reads the lock (the
 * algorithm, the server, the slot) at every lt_execute, and a holder written there at every
 * section would bring the lock's line back and forth between the client and the server, a
 * round trip per section.  The table has RCL_HOLDERS slots per server, taken at init and given
 * back by lt_mutex_destroy; a lock that finds none free (or is freed without lt_mutex_destroy,
 * whose slot is then lost) keeps its holder inline.
 */
struct rcl_lock {
    uint32_t slot;          /* index in srv->holders, 0: the inline holder below */
    uint32_t callers;       /* lll.h word: one lock() caller at a time asks for the lock */
    struct rcl_server *srv; /* set at init */
    uint32_t holder;        /* the holder word when slot == 0 */
};
LT_STATE_FITS(struct rcl_lock);

static inline struct rcl_lock *rcl_state(lt_mutex_t *m)
{
    return LT_STATE(m, struct rcl_lock);
}

enum rcl_state { RCL_RUNNING = 0, RCL_SLEEPING = 1, RCL_STOPPED = 2 };

/* Counters, written by the server's own threads (core-local adds), read by the report. */
struct rcl_counters {
    uint64_t passes;         /* passes over the mailboxes */
    uint64_t active_passes;  /* passes that ran at least one request */
    uint64_t sections;       /* sections run (GRANT/RELEASE not counted) */
    uint64_t requests;       /* every request served, lock/unlock included */
    uint64_t scanned;        /* sum over active passes of the mailboxes scanned */
    uint64_t distinct;       /* sum over active passes of the distinct locks served */
    uint64_t multi_lock;     /* active passes that served two locks or more */
    uint64_t slow_passes;    /* passes with more than one servicing thread in the pool */
    uint64_t idle_sleeps;    /* times the server went to sleep, idle */
    uint64_t threads;        /* servicing threads created */
    uint64_t wakeups;        /* prepared threads woken by the manager */
    uint64_t retirements;    /* servicing threads that left the pool */
    uint64_t manager_checks; /* manager activations */
    uint64_t alive_misses;   /* activations that found is_alive unset */
    uint64_t interventions;  /* activations that added a servicing thread */
    uint64_t elections;      /* activations that elected a thread (SCHED_FIFO) */
    uint64_t backup_runs;    /* times the backup thread found every servicing thread blocked */
    uint64_t max_pool;       /* most servicing threads in the pool at once */
    uint64_t demotions;      /* bounded: busy periods that outlasted the budget (pool.c) */
    uint64_t local_sleeps;   /* bounded: idle sleeps at once, for a client on the server's CPU */
    uint64_t starvations;    /* bounded: manager checks that found the canary kept off (pool.c) */
    uint64_t shared_sleeps;  /* SCHED_OTHER: idle sleeps at once, another thread wanted the CPU */
};

struct rcl_sthread;

struct rcl_server {
    /* read-mostly */
    struct rcl_mailbox *mb; /* RCL_MAILBOXES, page-aligned, first touched on the server CPU */
    uint32_t *claims;  /* RCL_MAILBOXES: 1 while a servicing thread looks at the request, 2 while it
                          runs its section */
    uint32_t *holders; /* RCL_HOLDERS holder words (struct rcl_lock) */
    uint64_t *slots_used; /* RCL_HOLDERS bits, under slots_lock */
    unsigned slots_hint;  /* under slots_lock: where to look for a free slot */
    pthread_mutex_t slots_lock;
    int cpu;
    int number;       /* the first server number placed on this CPU */
    bool fifo;        /* its threads run under SCHED_FIFO */
    bool bounded;     /* ... on a CPU it shares: with a budget (pool.c, "Bounded") */
    bool pinned;      /* they all run on `cpu` only: core-local atomics are safe */
    bool placed;      /* its mailbox pages were first touched on `cpu` (once, at its creation) */
    uint32_t nlocks;  /* locks bound to it (atomic) */
    uint32_t ninline; /* ... of them, with no holder slot: the holder in the lock (atomic) */
    /* read by every client after it posts a request */
    _Alignas(RCL_LINE) uint32_t state; /* atomic: enum rcl_state (futex word while idle) */
    /* written by parking clients, read-modified by the server after its passes */
    _Alignas(RCL_LINE) uint32_t parked_clients; /* atomic: clients asleep on a request */
    uint32_t local_clients; /* atomic, bounded: clients waiting on the server's own CPU */
    /* the server's own threads only */
    _Alignas(RCL_LINE) uint32_t alive; /* set by every pass, cleared by the manager */
    uint32_t timestamp;                /* election round (manager) */
    uint32_t demoted;                  /* atomic, bounded: the budget is spent (pool.c) */
    uint64_t budget_at, budget_cpu;    /* the manager's: its last check, servicing CPU time */
    uint64_t hold_until;               /* the manager's: demoted at least until then */
    uint64_t canary_seen;              /* atomic, bounded: when the canary last ran (pool.c) */
    int32_t nservicing;                /* servicing threads in the pool (not retired) */
    int32_t nfree;                     /* ... of them, not in the middle of a pass */
    struct rcl_sthread *all;           /* every servicing thread (the manager's list) */
    struct rcl_sthread *prepared;      /* retired threads (a stack; popped under pool_lock) */
    pthread_mutex_t pool_lock;
    uint32_t manager_word; /* futex: the backup wakes the manager */
    uint32_t backup_word;  /* futex: the backup's nap */
    struct rcl_counters ct;
};

/* A servicing thread. */
struct rcl_sthread {
    struct rcl_server *srv;
    pthread_t thread; /* 0 until pthread_create returned (atomic: the manager reads it) */
    int32_t tid;
    uint32_t timestamp;  /* the server's election round when it last made a pass */
    uint32_t servicing;  /* atomic: 1 in the pool, 0 retired (the futex it sleeps on) */
    uint32_t ncompleted; /* requests completed in this pass (parked clients to wake) */
    uint32_t fifo_now;   /* atomic, bounded: 1 while it runs SCHED_FIFO (pool.c) */
    struct rcl_sthread *next_all, *next_prepared;
};

/* What a thread knows about itself (rcl_self). */
struct rcl_client {
    int32_t id;              /* client id, -1 until the first request */
    int32_t real_me;         /* a servicing thread: the client whose request it runs */
    struct rcl_server *srv;  /* a servicing thread: its server (NULL for clients) */
    struct rcl_sthread *st;  /* a servicing thread: itself */
    struct rcl_mailbox *cur; /* a servicing thread: the request it runs */
    lt_mutex_t *cur_lock;    /* ... and that request's lock */
    bool spawning;           /* a servicing thread: pool.c creates one of the server's threads */
};
extern __thread struct rcl_client rcl_self __attribute__((tls_model("initial-exec")));

/* The holder word of a lock. */
static inline uint32_t *rcl_holder(struct rcl_lock *l)
{
    return l->slot ? &l->srv->holders[l->slot] : &l->holder;
}

/* ---- clients.c ---- */
extern uint32_t rcl_nids;    /* atomic: 1 + the highest client id in use */
int32_t rcl_client_id(void); /* the calling thread's id (allocated on first use) */
/* Post a request in the caller's mailbox on srv and wait for it; returns the context word. */
void *rcl_call(struct rcl_server *srv, lt_mutex_t *m, lt_cs_fn fn, void *ctx, unsigned size);
void rcl_clients_stats_json(FILE *f);
void rcl_clients_prepare_fork(void);
void rcl_clients_after_fork(bool child);
void rcl_thread_exit(void); /* gives the thread's client id back */
enum rcl_wait_policy { RCL_WAIT_SPIN, RCL_WAIT_YIELD, RCL_WAIT_PARK, RCL_WAIT_YIELD_PARK };
const char *rcl_wait_name(enum rcl_wait_policy p);

/* ---- inherit.c ---- */
/* A client records what the threads it creates would inherit (at its id; the overflow id's
 * users when they take it), and forgets it when it gives the id back. */
void rcl_inherit_record(int32_t id);
void rcl_inherit_overflow(void);
void rcl_inherit_forget(int32_t id);
/* A child forked inside a section takes back the client's affinity, signal mask, policy; then
 * the origins of the parent's other threads are freed. */
void rcl_inherit_after_fork(void);
void rcl_inherit_after_fork_child(void);

/* ---- server.c ---- */
/* LOCKTUNE_RCL_MODE (enum rcl_mode_cfg) and LOCKTUNE_RCL_WAIT (an enum rcl_wait_policy, -1
 * unset), read once at start-up by rcl_configure, the algorithm's configure hook. */
enum rcl_mode_cfg { RCL_MODE_AUTO, RCL_MODE_FIFO, RCL_MODE_BOUNDED, RCL_MODE_DEGRADED };
extern int rcl_cfg_mode;
extern int rcl_cfg_wait;
void rcl_configure(void);
/* The server number of a site and its CPU. */
int rcl_site_server(int site, int *cpu);
/* LOCKTUNE_STATS: a site's "server" and "server_cpu", and the "rcl" object (mode, client ids,
 * one entry per server). */
void rcl_stats_site(FILE *f, int site);
void rcl_stats_json(FILE *f);
struct rcl_server *rcl_server_for_site(int site); /* created and started on first use */
void rcl_server_kick(struct rcl_server *srv);     /* wake it, or start it after a fork */
/* A servicing thread wakes the parked clients whose requests are complete (server.c). */
void rcl_wake_parked(struct rcl_server *srv, struct rcl_sthread *self);
void rcl_move_off_servers(void);                /* the calling thread leaves the servers' CPUs */
uint32_t rcl_slot_take(struct rcl_server *srv); /* a holder slot, or 0 */
void rcl_slot_give(struct rcl_server *srv, uint32_t s); /* back (0: nothing) */
void *rcl_servicing_main(void *arg);
/* A servicing thread releases a lock of its own server. */
void rcl_holder_release(struct rcl_server *srv, struct rcl_lock *l);

/* ---- pool.c ---- */
/* Start srv's threads (the first servicing thread, the manager, the backup).  0 or errno. */
int rcl_pool_start(struct rcl_server *srv);
/* A servicing thread inside a section is about to block: make a free thread exist. */
void rcl_pool_before_block(struct rcl_server *srv);
/* Bounded: the calling servicing thread runs SCHED_FIFO again if the budget is not spent. */
void rcl_pool_restore(struct rcl_server *srv, struct rcl_sthread *self);
/* After a pass, with more than one servicing thread in the pool (Algorithm 4's slow path). */
void rcl_pool_slow_path(struct rcl_server *srv, struct rcl_sthread *self);
/* A new thread of srv's sets its own scheduling (role: 0 servicing, 1 manager, 2 backup). */
void rcl_pool_settle(struct rcl_server *srv, int role);
const char *rcl_mode_name(void);   /* "fifo", "bounded", "degraded", or NULL before any started */
const char *rcl_mode_reason(void); /* why degraded, or NULL */
extern unsigned rcl_manager_period_ms;

#endif
