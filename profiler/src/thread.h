/*
 * thread.h - the profiler's per-thread state.
 *
 * Each thread has a TLS block (initial-exec: one instruction away, no __tls_get_addr) with
 * its mode, its thread record in the raw file, and the stack of locks it holds.  Only the
 * thread itself writes either, so the hot path has no atomics and no shared writes.
 *
 *   NEW --first lock call or thread start--> ACTIVE --thread exit (TSD destructor)--> DEAD
 *    |                                        |  ^
 *    |                                        v  |  (around the profiler's own slow paths,
 *    |                                       BUSY    so what they call passes through)
 *    +--not recording, or no record left--> OFF
 *
 * Wrappers record only in ACTIVE; every other mode calls straight through.
 */
#ifndef LTP_THREAD_H
#define LTP_THREAD_H

#include <stdint.h>

#include "layout.h"
#include "pmu.h"
#include "region.h"

#define LTP_HELD_MAX 32

enum { LTP_MODE_NEW = 0, LTP_MODE_ACTIVE, LTP_MODE_BUSY, LTP_MODE_OFF, LTP_MODE_DEAD };

struct ltp_held {
    void *lock;
    struct ltp_raw_slot *slot;
    struct ltp_raw_callsite *callsite; /* the caller's entry in slot->callsite[] */
    uint64_t t0;                       /* lock call entered */
    uint64_t t1;                       /* lock acquired */
    uint64_t pmc0;                     /* cache-miss counter at t0 */
    uint8_t timed;                     /* t0, t1 are valid */
    uint8_t contended;                 /* the acquisition waited */
    uint8_t remote;                    /* the lock came from another thread */
    uint8_t random;                    /* timed because picked at random (a fair sample) */
    uint32_t switches;                 /* t->switches at the lock call's entry */
};

struct ltp_tls {
    int mode;
    uint32_t depth; /* locks held (entries in held[] up to LTP_HELD_MAX) */
    struct ltp_raw_record *rec;
    struct ltp_raw_slot *chunk[LTP_CHUNKS]; /* rec->chunk as pointers: one load to a slot */
    uint64_t serial;
    uint64_t outer_start;    /* when depth went 0 -> 1, if that section is timed */
    int outer_timed;         /* the outermost held section is timed... */
    int outer_random;        /* ...because it was picked at random */
    uint32_t countdown;      /* uncontended acquisitions until the next timed one */
    uint32_t rng;            /* xorshift32 state for the countdown */
    uint64_t *tripwire;      /* this thread's rseq tripwire (tripwire.h), or NULL */
    uint32_t switches;       /* times the tripwire was found tripped: CPU lost */
    uint32_t entry_switches; /* switches at the entry of the lock call being made */
    struct ltp_pmu_thread pmu;
    struct ltp_held held[LTP_HELD_MAX];
};

extern __thread struct ltp_tls ltp_tls __attribute__((tls_model("initial-exec")));

extern int ltp_alloc_lock;              /* arena, thread records, slot chunks */
extern uint32_t ltp_sample_period;      /* 1: time every section (LOCKTUNE_PROF_SAMPLE) */
extern int64_t ltp_sample_bias;         /* ticks taken out of each random sample's cs (track.h) */
extern int64_t ltp_sample_bias_hold;    /* ... and out of its hold */
extern uint32_t ltp_sample_bias_rounds; /* calibration rounds it is the median of */
extern int64_t ltp_timed_bias;          /* a timed section's cs less its pair's cost */

/* Make the calling thread ACTIVE if it can be; returns it, or NULL to pass through.
 * Also the entry point of the process-wide initialisation (prof.c). */
struct ltp_tls *ltp_thread_slow(struct ltp_tls *t);

static inline struct ltp_tls *ltp_enter(void)
{
    struct ltp_tls *t = &ltp_tls;
    if (__builtin_expect(t->mode == LTP_MODE_ACTIVE, 1))
        return t;
    return ltp_thread_slow(t);
}

/* A thread record for the calling thread (thread start); 0 on success. */
int ltp_thread_register(struct ltp_tls *t);

/* The thread is exiting (TSD destructor) or the process forked (child). */
void ltp_thread_retire(struct ltp_tls *t);

/* Add thread `tid`'s schedstat (0: the calling thread) to record r. */
void ltp_sched_read(struct ltp_raw_record *r, uint64_t tid);
void ltp_thread_forget(struct ltp_tls *t);

/* Slot of `site` in the thread's record (allocating its chunk on first touch). */
struct ltp_raw_slot *ltp_slot_slow(struct ltp_tls *t, uint32_t site);

static inline struct ltp_raw_slot *ltp_slot(struct ltp_tls *t, uint32_t site)
{
    struct ltp_raw_slot *c = t->chunk[site / LTP_SLOTS_PER_CHUNK];
    if (__builtin_expect(c == NULL, 0))
        return ltp_slot_slow(t, site);
    struct ltp_raw_slot *s = c + site % LTP_SLOTS_PER_CHUNK;
    if (__builtin_expect(s->thread_gen != t->serial, 0)) {
        s->thread_gen = t->serial; /* this occupant's first touch of the site */
        s->threads++;
    }
    return s;
}

/* The entry of caller `ra` in slot s, the hint missed (track.h ltp_callsite). */
struct ltp_raw_callsite *ltp_callsite_slow(struct ltp_raw_slot *s, uint64_t ra);

/* Enter / leave the profiler's own slow paths (nestable). */
static inline int ltp_busy_enter(void)
{
    int saved = ltp_tls.mode;
    ltp_tls.mode = LTP_MODE_BUSY;
    return saved;
}

static inline void ltp_busy_exit(int saved)
{
    ltp_tls.mode = saved;
}

#endif
