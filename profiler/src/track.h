/*
 * track.h - what every wrapper records: an acquisition, a release, a failed trylock, a
 * timeout.  Inline: these are the hot path.  Only the calling thread's own slot and record
 * are written, with plain stores; the lock's owner (locktab.h) is written only when the
 * lock changes hands.
 *
 * A critical section, as the RCL paper measures it, runs from the lock call's entry (t0)
 * through the acquisition (t1) and the unlock call's entry (t2) to the release's return
 * (t3):   wait = t1 - t0   hold = t2 - t1   cs = t3 - t0.
 * An uncontended acquisition takes t1 = t0 -- unless the call was preempted or interrupted
 * (ltp_took: a second reading, checked against LTP_LONG_TICKS), so that a lock nobody held
 * has no wait.  A timed release always reads t3 after the real unlock returns: its own time
 * (an atomic on a line another CPU may hold, a wake-up) is part of the section, and was the
 * 2-4% a short section came out low when t3 = t2 was taken for a release with nobody to
 * wake.  An untimed pair (layout.h, "Timing") reads the clock not at all.
 */
#ifndef LTP_TRACK_H
#define LTP_TRACK_H

#include <pthread.h>

#include "clock.h"
#include "locktab.h"
#include "prof.h"
#include "thread.h"
#include "tripwire.h"

#define LTP_INLINE static inline __attribute__((always_inline))

/* The thread's count of CPU losses (tripwire.h), brought up to date: read at a lock call's
 * entry (ltp_entry) and at its release (ltp_lost_cpu). */
LTP_INLINE uint32_t ltp_switches(struct ltp_tls *t)
{
    t->switches += (uint32_t)ltp_tripwire_check(t->tripwire);
    return t->switches;
}

/* At a lock call's entry: what the section's held entry will compare its release with.
 * Returns 1 when the thread lost its CPU since its last lock call or release: the section
 * about to start finds cold caches, as a thread's first ones do, and is no fair sample. */
LTP_INLINE int ltp_entry(struct ltp_tls *t)
{
    uint32_t before = t->switches;
    t->entry_switches = ltp_switches(t);
    return t->entry_switches != before;
}

/* 1 when h's thread lost its CPU (was switched out, migrated or signalled) between h's lock
 * call and now.  Without a tripwire, never. */
LTP_INLINE int ltp_lost_cpu(struct ltp_tls *t, const struct ltp_held *h)
{
    return ltp_switches(t) != h->switches;
}

LTP_INLINE uint64_t ltp_pmc(struct ltp_tls *t)
{
    return __builtin_expect(t->pmu.fd >= 0, 0) ? ltp_pmu_thread_read(&t->pmu) : 0;
}

/* The slot of `lock`'s site, or NULL (untracked). */
LTP_INLINE struct ltp_raw_slot *ltp_slot_of(struct ltp_tls *t, void *lock, int kind,
                                            struct ltp_lockent **entry)
{
    struct ltp_lockent *e = ltp_locktab_get(lock, kind);
    if (__builtin_expect(!e, 0))
        return NULL;
    *entry = e;
    /* acquire (in ltp_locktab_get): the site this word names is complete */
    return ltp_slot(t, LTP_WORD_SITE(__atomic_load_n(&e->word, __ATOMIC_RELAXED)));
}

/* The entry of caller `ra` (the wrapper's return address) in slot s: the last one seen in
 * this thread for this site is one compare away; another caller is looked up in the small
 * table (ltp_callsite_slow, thread.c), and past LTP_CALLSITE_OTHER distinct callers its
 * counts go to the "other callers" bucket (layout.h, struct ltp_raw_callsite). */
LTP_INLINE struct ltp_raw_callsite *ltp_callsite(struct ltp_raw_slot *s, uint64_t ra)
{
    struct ltp_raw_callsite *c = &s->callsite[s->callsite_hint];
    if (__builtin_expect(c->ra == ra, 1))
        return c;
    return ltp_callsite_slow(s, ra);
}

#define LTP_CALLER ((uint64_t)(uintptr_t)__builtin_return_address(0))

/* Should this uncontended acquisition be timed?  The first LTP_EXACT_FIRST of a site in a
 * thread always are (LTP_TIMED_ALWAYS), and all of a site whose sections are long; then one
 * in ltp_sample_period on average, at random
 * intervals (LTP_TIMED_RANDOM; a fixed stride could alias with a loop that alternates
 * locks).
 *
 * slot.long_cs is LTP_CS_UNDECIDED until the first LTP_EXACT_FIRST timed acquisitions are in,
 * then LTP_CS_LONG or LTP_CS_SHORT.  Every timed acquisition counts in slot.timed (trylocks,
 * waits, condition-wait returns too), so the decision is taken at the first sampling call
 * that finds timed >= LTP_EXACT_FIRST, never at an exact count that another path may step
 * over.  A site turns LTP_CS_LONG, and from then on every section is timed, when its first
 * sections held the lock LTP_LONG_TICKS on average, or when long random samples are frequent
 * (ltp_outlier).  Sections found fought over, or whose thread lost its CPU, are timed one by
 * one (interpose.c, pthread_mutex_unlock) without switching the site: what is left to the
 * estimate is short, on-CPU, uncontended sections, and the random samples are drawn from
 * those alone (ltp_not_a_sample). */
#define LTP_TIMED_ALWAYS 1
#define LTP_TIMED_RANDOM 2
LTP_INLINE int ltp_sample(struct ltp_tls *t, struct ltp_raw_slot *s)
{
    if (__builtin_expect(s->long_cs != LTP_CS_SHORT || ltp_sample_period == 1, 0)) {
        if (s->long_cs == LTP_CS_LONG || s->long_cs == LTP_CS_OUTLIERS || ltp_sample_period == 1 ||
            s->timed < LTP_EXACT_FIRST)
            return LTP_TIMED_ALWAYS;
        /* on-CPU holds only: one preemption among the first sections is no long section */
        if (s->hold - s->lost_hold >= (s->timed - s->lost_cpu) * LTP_LONG_TICKS) {
            s->long_cs = LTP_CS_LONG; /* long sections: time them all */
            return LTP_TIMED_ALWAYS;
        }
        s->long_cs = LTP_CS_SHORT;
    }
    if (__builtin_expect(--t->countdown > 0, 1))
        return 0;
    uint32_t x = t->rng ? t->rng : (uint32_t)t->serial * 2654435761u + 1;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    t->rng = x;
    t->countdown = 1 + x % (2 * ltp_sample_period - 1); /* uniform, mean ltp_sample_period */
    return LTP_TIMED_RANDOM;
}

/* The acquisition time of a call that did not wait for another thread, `t0` its entry: t0
 * itself (the call's own few instructions count in the hold, as in an untimed one), unless
 * the call took LTP_LONG_TICKS or more: then the thread was preempted or interrupted inside
 * it, and that time is wait (lock call entry to its return), not hold. */
LTP_INLINE uint64_t ltp_took(uint64_t t0)
{
    uint64_t t1 = ltp_now();
    return (int64_t)(t1 - t0) >= LTP_LONG_TICKS ? t1 : t0;
}

/* At an exclusive lock call's entry: start fetching e's owner for writing.  The previous
 * holder wrote it at its own acquisition, so it is in that holder's cache; read and written
 * after the acquisition without this, its miss was inside the section (perf, lockbench at 2
 * threads: a tenth of the lock wrapper's samples), where it delays every waiting thread. */
LTP_INLINE void ltp_owner_prefetch(const struct ltp_lockent *e)
{
    __builtin_prefetch(ltp_lockent_owner(e), 1, 3);
}

/* Exclusive acquisitions track the last owner: a different one means the lock, and the
 * data it protects, come from another thread's cache.  Such an owner change is counted in
 * the site's slot (slot.owner_changes, mutrace's "changed"): only on this branch, which
 * already writes the shared owner, so the same thread taking the lock again pays nothing. */
LTP_INLINE int ltp_handover(struct ltp_tls *t, struct ltp_raw_slot *s, struct ltp_lockent *e)
{
    uint32_t prev = __atomic_load_n(ltp_lockent_owner(e), __ATOMIC_RELAXED);
    if (__builtin_expect(prev == (uint32_t)t->serial, 1))
        return 0;
    __atomic_store_n(ltp_lockent_owner(e), (uint32_t)t->serial, __ATOMIC_RELAXED);
    if (prev == 0)
        return 0; /* the lock's first owner (since its init) */
    s->owner_changes++;
    return 1;
}

LTP_INLINE struct ltp_held *ltp_push(struct ltp_tls *t, void *lock, struct ltp_raw_slot *s,
                                     struct ltp_raw_callsite *c)
{
    uint32_t d = t->depth;
    if (__builtin_expect(d >= LTP_HELD_MAX, 0)) {
        t->rec->held_overflow++;
        return NULL;
    }
    struct ltp_held *h = &t->held[d];
    h->lock = lock;
    h->slot = s;
    h->callsite = c;
    h->switches = t->entry_switches; /* ltp_entry: at the lock call's entry or, for the other
                                      * acquisitions (ltp_acquired), at the acquisition */
    t->depth = d + 1;
    return h;
}

/* A timed acquisition (s and e from ltp_slot_of); `random`: picked by ltp_sample() at random
 * and did not wait. */
LTP_INLINE void ltp_acquired_at(struct ltp_tls *t, void *lock, struct ltp_raw_slot *s,
                                struct ltp_lockent *e, int shared, uint64_t t0, uint64_t t1,
                                int contended, uint64_t pmc0, int random, uint64_t ra)
{
    struct ltp_raw_callsite *c = ltp_callsite(s, ra);
    uint64_t w = ltp_elapsed(t0, t1, &t->rec->clock_noise); /* 0 where t1 = t0 (ltp_took) */
    s->acquisitions++;
    s->timed++;
    s->contended += (uint64_t)contended;
    s->wait += w;
    c->acquisitions++;
    c->timed++;
    c->contended += (uint64_t)contended;
    c->wait += w;
    int remote = contended;
    if (shared)
        s->read_acquisitions++;
    else
        remote |= ltp_handover(t, s, e);
    struct ltp_held *h = ltp_push(t, lock, s, c);
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

/* An untimed (sampled-out), uncontended exclusive acquisition; t0: the lock call's entry,
 * kept for ltp_late_timed. */
LTP_INLINE void ltp_acquired_untimed(struct ltp_tls *t, void *lock, struct ltp_raw_slot *s,
                                     struct ltp_lockent *e, uint64_t t0, uint64_t ra)
{
    struct ltp_raw_callsite *c = ltp_callsite(s, ra);
    s->acquisitions++;
    c->acquisitions++;
    ltp_handover(t, s, e);
    struct ltp_held *h = ltp_push(t, lock, s, c);
    if (__builtin_expect(h != NULL, 1)) {
        h->timed = 0;
        h->t0 = t0;
        if (t->depth == 1) {
            t->outer_timed = 0;
            t->outer_start = t0;
        }
    }
}

/* An untimed section found fought over at its release: time it after all, from its
 * acquisition's reading (an uncontended acquisition: t1 = t0), as a measured one. */
LTP_INLINE void ltp_late_timed(struct ltp_tls *t, struct ltp_held *h)
{
    h->timed = 1;
    h->t1 = h->t0;
    h->pmc0 = 0;
    h->contended = 0;
    h->remote = 0;
    h->random = 0;
    h->slot->timed++;
    h->callsite->timed++;
    if (h == &t->held[0]) {
        t->outer_timed = 1;
        t->outer_random = 0;
    }
}

/* A timed acquisition, looked up here. */
LTP_INLINE struct ltp_raw_slot *ltp_acquired(struct ltp_tls *t, void *lock, int kind, int shared,
                                             uint64_t t0, uint64_t t1, int contended, uint64_t pmc0,
                                             uint64_t ra)
{
    struct ltp_lockent *e;
    struct ltp_raw_slot *s = ltp_slot_of(t, lock, kind, &e);
    ltp_entry(t); /* the section's CPU losses count from here (these are never samples) */
    if (__builtin_expect(s != NULL, 1))
        ltp_acquired_at(t, lock, s, e, shared, t0, t1, contended, pmc0, 0, ra);
    return s;
}

/* The held entry of `lock` (innermost), or NULL. */
LTP_INLINE struct ltp_held *ltp_held_find(struct ltp_tls *t, void *lock)
{
    for (uint32_t i = t->depth; i-- > 0;)
        if (t->held[i].lock == lock)
            return &t->held[i];
    return NULL;
}

/* A timed section lasting LTP_OUTLIER_TICKS or more: a long section, or one whose thread was
 * preempted or interrupted.  Sampled, it is a sample like the others (the estimate multiplies
 * it by the period: unbiased, whichever it was).  Where such sections are frequent - at least
 * LTP_OUTLIERS_LONG of them and one in LTP_OUTLIER_RATE random samples - a few long ones
 * would carry the site's estimate, so the site times every section from then on (ltp_sample).
 * An interrupt or a preemption of ~20 us landing in the rare timed window of short sections is
 * not that: pairs.c on the development VM saw 32 and more in 1.5 million samples (2 in 10^5),
 * and its site went to full timing at the first one, which costs two more clock readings per
 * pair (43 ns added per pair instead of 20). */
LTP_INLINE void ltp_outlier(struct ltp_raw_slot *s)
{
    if (++s->outliers >= LTP_OUTLIERS_LONG && s->outliers * LTP_OUTLIER_RATE >= s->timed_free)
        s->long_cs = LTP_CS_OUTLIERS;
}

/* A random sample stands for the untimed sections of its site, but is not quite one of them:
 * one more clock reading inside its window (ordered, after the release: interpose.c), more
 * bookkeeping, and the wrappers' work outside the window, which an untimed pair spends within the
 * program's lock calls all the same.  The difference, measured at start-up
 * on the wrappers' own code (interpose.c, ltp_sample_calibrate), is taken out of each sample
 * before it joins the estimate (the sample itself counts as measured); it may be negative.
 * Without it, short sampled sections came out 8% high on one host, and taking out the two
 * readings' cost alone left them 11% low on another. */
LTP_INLINE uint64_t ltp_less_bias(uint64_t d, int64_t bias)
{
    int64_t v = (int64_t)d - bias;
    return v > 0 ? (uint64_t)v : 0;
}

LTP_INLINE uint64_t ltp_unbiased(uint64_t d)
{
    return ltp_less_bias(d, ltp_sample_bias);
}

/* A random sample that turned out unlike the sections left untimed (it lost its CPU, or
 * threads queued behind it: such untimed sections are timed too): it counts as measured,
 * not as a sample. */
LTP_INLINE void ltp_not_a_sample(struct ltp_tls *t, struct ltp_held *h)
{
    h->random = 0;
    if (h == &t->held[0])
        t->outer_random = 0;
}

/* Pop `h`; at depth 0, close the outermost section. */
LTP_INLINE void ltp_pop(struct ltp_tls *t, struct ltp_held *h, uint64_t t3)
{
    struct ltp_held *top = &t->held[t->depth - 1];
    if (h != top)
        *h = *top; /* rare: not the innermost lock (order is the program's business) */
    if (--t->depth == 0) {
        struct ltp_raw_record *r = t->rec;
        r->outer_sections++;
        if (t->outer_timed) {
            uint64_t d = ltp_elapsed(t->outer_start, t3, &r->clock_noise);
            r->outer_timed++;
            r->cs_outer += d;
            if (t->outer_random) { /* as in ltp_released */
                r->outer_random++;
                r->cs_outer_random += ltp_unbiased(d);
            }
            r->last_ticks = t3;
        }
    }
}

LTP_INLINE void ltp_released(struct ltp_tls *t, struct ltp_held *h, uint64_t t2, uint64_t t3,
                             uint64_t pmc3)
{
    if (__builtin_expect(!h->timed, 0)) {
        ltp_pop(t, h, t3);
        return;
    }
    struct ltp_raw_record *r = t->rec;
    struct ltp_raw_slot *s = h->slot;
    struct ltp_raw_callsite *c = h->callsite;
    uint64_t cs = ltp_elapsed(h->t0, t3, &r->clock_noise);
    /* t2 = 0: a random sample, which reads no t2 (interpose.c): its hold is its section less
     * what the two calls take around an empty one (ltp_sample_bias_hold, calibrated). */
    uint64_t hold =
        t2 ? ltp_elapsed(h->t1, t2, &r->clock_noise) : ltp_less_bias(cs, ltp_sample_bias_hold);
    int lost = ltp_lost_cpu(t, h);
    if (__builtin_expect(lost, 0)) {
        /* Preempted (or migrated, signalled) inside: the time is the lock's, and is counted
         * as measured; but it must not stand for the untimed sections, multiplied by the
         * period - those that lost their CPU are timed themselves (interpose.c) - nor make
         * the site look long (ltp_sample). */
        s->lost_cpu++;
        s->lost_hold += hold;
        if (h->random)
            ltp_not_a_sample(t, h);
    }
    s->hold += hold;
    s->cs += cs;
    c->hold += hold;
    c->cs += cs;
    if (hold > s->max_hold)
        s->max_hold = hold;
    if (h->random) { /* a sample, long or not: the estimate stays unbiased (layout.h) */
        /* hold: net already, unless the section ended at a condition wait (t2 read) */
        uint64_t hold_s = t2 ? ltp_less_bias(hold, ltp_sample_bias_hold) : hold;
        uint64_t cs_s = ltp_unbiased(cs);
        s->timed_free++;
        s->hold_free += hold_s;
        s->cs_free += cs_s;
        c->timed_free++;
        c->hold_free += hold_s;
        c->cs_free += cs_s;
    }
    if (__builtin_expect(cs >= LTP_OUTLIER_TICKS, 0) && !lost)
        ltp_outlier(s); /* a long section (or, without a tripwire, a preempted one) */
    if (h->remote) {
        s->remote_acquisitions++;
        s->remote_hold += hold;
    }
    if (pmc3 && h->pmc0) /* a section timed late has no reading at its start */
        s->misses += pmc3 - h->pmc0;
    ltp_pop(t, h, t3);
}

static inline void ltp_unheld(struct ltp_tls *t)
{
    t->rec->foreign_unlocks++;
}

static inline void ltp_trylock_failed(struct ltp_tls *t, void *lock, int kind)
{
    struct ltp_lockent *e;
    struct ltp_raw_slot *s = ltp_slot_of(t, lock, kind, &e);
    if (s)
        s->trylock_failures++;
}

static inline void ltp_timed_out(struct ltp_tls *t, void *lock, int kind, uint64_t t0, uint64_t t1,
                                 uint64_t ra)
{
    struct ltp_lockent *e;
    struct ltp_raw_slot *s = ltp_slot_of(t, lock, kind, &e);
    if (s) {
        struct ltp_raw_callsite *c = ltp_callsite(s, ra);
        uint64_t w = ltp_elapsed(t0, t1, &t->rec->clock_noise);
        s->timeouts++;
        s->wait += w;
        s->cs += w; /* time lost to the lock, though no section ran */
        c->wait += w;
        c->cs += w;
    }
}

/* glibc's mutex word (bits/struct_mutex.h, a stable ABI): 0 when free; 2 for a normal
 * mutex with possible waiters; FUTEX_WAITERS (bit 31) for robust and priority-inheritance
 * mutexes.  With waiters flagged the release will wake someone, which is worth timing. */
static inline int ltp_mutex_word(const pthread_mutex_t *m)
{
    return __atomic_load_n(&m->__data.__lock, __ATOMIC_RELAXED);
}

static inline int ltp_mutex_has_waiters(const pthread_mutex_t *m)
{
    int w = ltp_mutex_word(m);
    return w == 2 || w < 0;
}

#endif
