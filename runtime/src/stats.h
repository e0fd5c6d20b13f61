/*
 * stats.h - per-site runtime statistics (LOCKTUNE_STATS=path: JSON written at exit).
 *
 * Counters live per thread and per site, so counting costs a thread-local increment and no
 * shared cache line; they are summed when the report is written.  With LOCKTUNE_STATS unset,
 * every counting site in the runtime is one predicted branch on lt_stats_on.
 */
#ifndef LT_STATS_H
#define LT_STATS_H

#include <stdint.h>
#include <stdio.h>

enum lt_stat {
    LT_STAT_INSTANCES,        /* locks bound to the site (init, or first use when static) */
    LT_STAT_DESTROYED,        /* lt_mutex_destroy calls that succeeded */
    LT_STAT_ACQUIRED,         /* acquisitions (lock, trylock, timedlock, lt_execute) */
    LT_STAT_CONTENDED,        /* acquisitions that had to wait */
    LT_STAT_TRY_FAILED,       /* trylock / lt_execute_trylock returning EBUSY */
    LT_STAT_TIMEDOUT,         /* timedlock returning ETIMEDOUT */
    LT_STAT_PARKED,           /* waits that slept in the kernel */
    LT_STAT_HANDOVERS,        /* unlocks that passed the lock directly to a waiter */
    LT_STAT_COND_WAITS,       /* lt_cond_wait / lt_cond_timedwait calls on the site's locks */
    LT_STAT_MISUSE,           /* misuse reports (docs/runtime.md, "Misuse") */
    LT_STAT_FALLBACK_PSHARED, /* locks made plain glibc mutexes: process-shared attribute */
    LT_STAT_FALLBACK_ROBUST,  /* ... robust attribute */
    LT_STAT_FALLBACK_PRIO,    /* ... priority-inheritance / priority-protect protocol */
    LT_STAT_SKIPPED,          /* mcstp: waiters passed over as preempted */
    LT_STAT_CULLED,           /* mcscr: waiters moved to the passive set */
    LT_STAT_REPROVISIONED,    /* mcscr: passive waiters brought back to keep the lock busy */
    LT_STAT_FAIR_GRANTS,      /* mcscr: long-term-fairness grants to the eldest passive waiter */
    LT_STAT_SELF_ADMITTED,    /* mcscr: passive waiters that found the lock idle and took it */
    LT_STAT_DELEGATED,        /* sections a server or combiner ran for another thread */
    LT_STAT_SESSIONS,         /* combining locks: times a thread acted as combiner */
    LT_STAT_STEPPED_ASIDE,    /* combining locks: a combined section waited on a condition */
    LT_STAT_ON_CALLER,        /* delegating: lt_execute run on the caller, under the lock */
    LT_STAT_AUTO_TO_QUEUE,    /* auto: switches from the barging lock to the queue lock */
    LT_STAT_AUTO_TO_BARGE,    /* auto: switches back */
    LT_STAT_AUTO_FENCED,      /* auto: barging releases made exchanges (a membarrier each) */
    LT_STAT_AUTO_UNFENCED,    /* auto: ... made plain stores again */
    LT_STAT_AUTO_ON_QUEUE,    /* auto: acquisitions made while the queue lock was in force */
    LT_STAT_GATED,            /* gate.h: waits that went passive at the admission gate */
    LT_STAT_GATE_TURNS,       /* gate.h: passive waiters let through over the limit (fairness) */
    LT_STAT_N
};

#define LT_STAT_BIT(s) (1u << (s))

extern int lt_stats_on; /* set once at start-up, read-only afterwards */

void lt_stat_add(int site, enum lt_stat s, uint64_t n);

static inline void lt_stat(int site, enum lt_stat s)
{
    if (__builtin_expect(lt_stats_on, 0))
        lt_stat_add(site, s, 1);
}

/* Start-up (config.c): remember where to write the report and arrange for it at exit. */
void lt_stats_enable(const char *path);
/* A thread is exiting: fold its counters into the process totals. */
void lt_stats_thread_exit(void);
/* Write the report now (also called at exit).  Returns 0 or an errno value. */
int lt_stats_write(void);
/* fork (thread.c's handlers): the statistics' lock is held across the fork, and free in the
 * child. */
void lt_stats_prepare_fork(void);
void lt_stats_parent_after_fork(void);
void lt_stats_fork_child(void);

#endif
