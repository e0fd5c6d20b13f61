/*
 * track.h - what every wrapper records: an acquisition, a release, a failed trylock, a
 * timeout.  Inline: these are the hot path.  Only the calling thread's own slot and record
 * are written, with plain stores; the lock table entry's `owner` is written only when the
 * lock changes hands.
 *
 * A critical section, as the RCL paper measures it, runs from the lock call's entry (t0)
 * through the acquisition (t1) and the unlock call's entry (t2) to the release's return
 * (t3):   wait = t1 - t0   hold = t2 - t1   cs = t3 - t0.
 * An uncontended acquisition takes t1 = t0; a release that cannot wake anyone (no waiter
 * flagged in the lock word) takes t3 = t2.  A timed uncontended pair thus reads the clock
 * twice, and an untimed one (layout.h, "Timing") not at all.
 */
#ifndef LT_TRACK_H
#define LT_TRACK_H

#include <pthread.h>

#include "clock.h"
#include "locktab.h"
#include "prof.h"
#include "thread.h"

#define LT_INLINE static inline __attribute__((always_inline))

LT_INLINE uint64_t lt_pmc(struct lt_tls *t)
{
    return __builtin_expect(t->pmu.fd >= 0, 0) ? lt_pmu_thread_read(&t->pmu) : 0;
}

/* The slot of `lock`'s site, or NULL (untracked). */
LT_INLINE struct lt_raw_slot *lt_slot_of(struct lt_tls *t, void *lock, int kind,
                                         struct lt_lockent **entry)
{
    struct lt_lockent *e = lt_locktab_get(lock, kind);
    if (__builtin_expect(!e, 0))
        return NULL;
    *entry = e;
    /* acquire (in lt_locktab_get): the site this word names is complete */
    return lt_slot(t, LT_WORD_SITE(__atomic_load_n(&e->word, __ATOMIC_RELAXED)));
}

/* Should this uncontended acquisition be timed?  The first LT_EXACT_FIRST of a site in a
 * thread always are (LT_TIMED_ALWAYS), and all of a site whose sections are long; then one
 * in lt_sample_period on average, at random
 * intervals (LT_TIMED_RANDOM; a fixed stride could alias with a loop that alternates
 * locks). */
#define LT_TIMED_ALWAYS 1
#define LT_TIMED_RANDOM 2
LT_INLINE int lt_sample(struct lt_tls *t, struct lt_raw_slot *s)
{
    if (s->timed < LT_EXACT_FIRST || s->long_cs || lt_sample_period == 1)
        return LT_TIMED_ALWAYS;
    if (s->timed == LT_EXACT_FIRST && s->hold >= (uint64_t)LT_EXACT_FIRST * LT_LONG_TICKS) {
        s->long_cs = 1; /* long sections: time them all */
        return LT_TIMED_ALWAYS;
    }
    if (__builtin_expect(--t->countdown > 0, 1))
        return 0;
    uint32_t x = t->rng ? t->rng : (uint32_t)t->serial * 2654435761u + 1;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    t->rng = x;
    t->countdown = 1 + x % (2 * lt_sample_period - 1); /* uniform, mean lt_sample_period */
    return LT_TIMED_RANDOM;
}

/* Exclusive acquisitions track the last owner: a different one means the lock, and the
 * data it protects, come from another thread's cache. */
LT_INLINE int lt_handover(struct lt_tls *t, struct lt_lockent *e)
{
    uint32_t prev = __atomic_load_n(&e->owner, __ATOMIC_RELAXED);
    if (__builtin_expect(prev == (uint32_t)t->serial, 1))
        return 0;
    __atomic_store_n(&e->owner, (uint32_t)t->serial, __ATOMIC_RELAXED);
    return prev != 0;
}

LT_INLINE struct lt_held *lt_push(struct lt_tls *t, void *lock, struct lt_raw_slot *s)
{
    uint32_t d = t->depth;
    if (__builtin_expect(d >= LT_HELD_MAX, 0)) {
        t->rec->held_overflow++;
        return NULL;
    }
    struct lt_held *h = &t->held[d];
    h->lock = lock;
    h->slot = s;
    t->depth = d + 1;
    return h;
}

/* A timed acquisition (s and e from lt_slot_of); `random`: picked by lt_sample() at random
 * and did not wait. */
LT_INLINE void lt_acquired_at(struct lt_tls *t, void *lock, struct lt_raw_slot *s,
                              struct lt_lockent *e, int shared, uint64_t t0, uint64_t t1,
                              int contended, uint64_t pmc0, int random)
{
    s->acquisitions++;
    s->timed++;
    s->contended += (uint64_t)contended;
    if (contended)
        s->wait += lt_elapsed(t0, t1, &t->rec->clock_noise);
    int remote = contended;
    if (shared)
        s->read_acquisitions++;
    else
        remote |= lt_handover(t, e);
    struct lt_held *h = lt_push(t, lock, s);
    if (__builtin_expect(h != NULL, 1)) {
        h->t0 = t0;
        h->t1 = t1;
        h->pmc0 = pmc0;
        h->timed = 1;
        h->contended = (uint8_t)contended;
        h->remote = (uint8_t)remote;
        h->random = (uint8_t)(random && !contended);
        if (t->depth == 1) {
            t->outer_start = t0;
            t->outer_timed = 1;
            t->outer_random = h->random;
        }
    }
}

/* An untimed (sampled-out) exclusive acquisition. */
LT_INLINE void lt_acquired_untimed(struct lt_tls *t, void *lock, struct lt_raw_slot *s,
                                   struct lt_lockent *e, int contended)
{
    s->acquisitions++;
    s->contended += (uint64_t)contended;
    lt_handover(t, e);
    struct lt_held *h = lt_push(t, lock, s);
    if (__builtin_expect(h != NULL, 1)) {
        h->timed = 0;
        if (t->depth == 1)
            t->outer_timed = 0;
    }
}

/* A timed acquisition, looked up here. */
LT_INLINE struct lt_raw_slot *lt_acquired(struct lt_tls *t, void *lock, int kind, int shared,
                                          uint64_t t0, uint64_t t1, int contended, uint64_t pmc0)
{
    struct lt_lockent *e;
    struct lt_raw_slot *s = lt_slot_of(t, lock, kind, &e);
    if (__builtin_expect(s != NULL, 1))
        lt_acquired_at(t, lock, s, e, shared, t0, t1, contended, pmc0, 0);
    return s;
}

/* The held entry of `lock` (innermost), or NULL. */
LT_INLINE struct lt_held *lt_held_find(struct lt_tls *t, void *lock)
{
    for (uint32_t i = t->depth; i-- > 0;)
        if (t->held[i].lock == lock)
            return &t->held[i];
    return NULL;
}

/* Pop `h`; at depth 0, close the outermost section. */
LT_INLINE void lt_pop(struct lt_tls *t, struct lt_held *h, uint64_t t3)
{
    struct lt_held *top = &t->held[t->depth - 1];
    if (h != top)
        *h = *top; /* rare: not the innermost lock (order is the program's business) */
    if (--t->depth == 0) {
        struct lt_raw_record *r = t->rec;
        r->outer_sections++;
        if (t->outer_timed) {
            uint64_t d = lt_elapsed(t->outer_start, t3, &r->clock_noise);
            r->outer_timed++;
            r->cs_outer += d;
            if (t->outer_random && d < LT_OUTLIER_TICKS) {
                r->outer_random++;
                r->cs_outer_random += d;
            }
            r->last_ticks = t3;
        }
    }
}

LT_INLINE void lt_released(struct lt_tls *t, struct lt_held *h, uint64_t t2, uint64_t t3,
                           uint64_t pmc3)
{
    if (__builtin_expect(!h->timed, 0)) {
        lt_pop(t, h, t3);
        return;
    }
    struct lt_raw_record *r = t->rec;
    struct lt_raw_slot *s = h->slot;
    uint64_t hold = lt_elapsed(h->t1, t2, &r->clock_noise);
    uint64_t cs = lt_elapsed(h->t0, t3, &r->clock_noise);
    s->hold += hold;
    s->cs += cs;
    if (hold > s->max_hold)
        s->max_hold = hold;
    if (h->random && __builtin_expect(cs < LT_OUTLIER_TICKS, 1)) {
        /* (an interrupted one counts as measured, not as a sample: layout.h, "Timing") */
        s->timed_free++;
        s->hold_free += hold;
        s->cs_free += cs;
    }
    if (h->remote) {
        s->remote_acquisitions++;
        s->remote_hold += hold;
    }
    if (pmc3)
        s->misses += pmc3 - h->pmc0;
    lt_pop(t, h, t3);
}

static inline void lt_unheld(struct lt_tls *t)
{
    t->rec->foreign_unlocks++;
}

static inline void lt_trylock_failed(struct lt_tls *t, void *lock, int kind)
{
    struct lt_lockent *e;
    struct lt_raw_slot *s = lt_slot_of(t, lock, kind, &e);
    if (s)
        s->trylock_failures++;
}

static inline void lt_timed_out(struct lt_tls *t, void *lock, int kind, uint64_t t0, uint64_t t1)
{
    struct lt_lockent *e;
    struct lt_raw_slot *s = lt_slot_of(t, lock, kind, &e);
    if (s) {
        uint64_t w = lt_elapsed(t0, t1, &t->rec->clock_noise);
        s->timeouts++;
        s->wait += w;
        s->cs += w; /* time lost to the lock, though no section ran */
    }
}

/* glibc's mutex word (bits/struct_mutex.h, a stable ABI): 0 when free; 2 for a normal
 * mutex with possible waiters; FUTEX_WAITERS (bit 31) for robust and priority-inheritance
 * mutexes.  With waiters flagged the release will wake someone, which is worth timing. */
static inline int lt_mutex_word(const pthread_mutex_t *m)
{
    return __atomic_load_n(&m->__data.__lock, __ATOMIC_RELAXED);
}

static inline int lt_mutex_has_waiters(const pthread_mutex_t *m)
{
    int w = lt_mutex_word(m);
    return w == 2 || w < 0;
}

#endif
