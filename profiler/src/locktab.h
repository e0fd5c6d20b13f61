/*
 * locktab.h - which site each live lock belongs to: an open-addressing table keyed by the
 * lock's address, in the process's private memory (it need not survive the process).
 *
 * Entry life cycle (`word` holds kind << 24 | site):
 *
 *     addr 0, word 0 (empty)
 *        | CAS addr 0 -> lock            first sight of the lock (init, or first use)
 *        v
 *     addr lock, word 0 (being published: readers wait for it)
 *        | store-release word = kind|site
 *        v
 *     addr lock, word kind|site   <----- re-init at the same address: word = new site
 *        | destroy: store word = TOMB       ^
 *        v                                  | re-init or first use at the same address
 *     addr lock, word TOMB  ---------------/
 *        | CAS word TOMB -> 0, store addr = other lock   (slot reused for another lock)
 *        v
 *     addr other, word 0 ...
 *
 * Slots are never emptied again, so a probe sequence is never cut short.
 *
 * A slot's owner (ltp_lockowner, same index) is the serial of the thread that last acquired
 * the lock exclusively: an acquisition by another thread means the lock (and the data it
 * protects) came from another core's cache.  It is written only when it changes (relaxed: a
 * hint for the locality estimate, never used for synchronisation), and lives in an array of
 * its own: in the entry, beside the address every lock call reads, its write at each hand-over
 * made the next lock call miss in the cache, on this lock and on the three others whose
 * entries share the line (perf, lockbench at 2 threads on the AMD EPYC VM: a fifth of the
 * wrappers' samples were that miss).
 */
#ifndef LTP_LOCKTAB_H
#define LTP_LOCKTAB_H

#include <stdint.h>

#define LTP_LOCKTAB_BITS     18
#define LTP_LOCKTAB_PROBE    256
#define LTP_WORD_TOMB        0xffffffffu
#define LTP_WORD(kind, site) (((uint32_t)(kind) << 24) | (uint32_t)(site))
#define LTP_WORD_SITE(w)     ((w)&0xffffffu)
#define LTP_WORD_KIND(w)     ((w) >> 24)

struct ltp_lockent {
    uintptr_t addr;
    uint32_t word;
};

/* In .bss: fixed addresses (no pointer to load on the hot path), pages touched on use.  One
 * entry past the table's mask, LTP_LOCKTAB_PRIVATE, is in no probe sequence: the sampling
 * calibration's private lock (interpose.c) uses it. */
#define LTP_LOCKTAB_PRIVATE (1u << LTP_LOCKTAB_BITS)
extern struct ltp_lockent ltp_locktab[LTP_LOCKTAB_PRIVATE + 1];
extern uint32_t ltp_lockowner[LTP_LOCKTAB_PRIVATE + 1];

/* The owner of entry e (above). */
static inline uint32_t *ltp_lockent_owner(const struct ltp_lockent *e)
{
    return &ltp_lockowner[e - ltp_locktab];
}

/* The lock's entry, registering it on first sight (a static or zeroed lock: site from its
 * storage or its first use).  NULL when the table is full or the entry is stuck (its
 * publisher vanished in a fork): the operation then goes untracked. */
struct ltp_lockent *ltp_locktab_slow(void *lock, int kind);

static inline uint64_t ltp_locktab_hash(const void *lock)
{
    return ((uint64_t)(uintptr_t)lock * 0x9E3779B97F4A7C15ull) >> (64 - LTP_LOCKTAB_BITS);
}

/* Fast path: the first probe finds the lock, published, of the right kind. */
static inline struct ltp_lockent *ltp_locktab_get(void *lock, int kind)
{
    struct ltp_lockent *e = &ltp_locktab[ltp_locktab_hash(lock)];
    /* acquire on word: the site entry it names was published before it (sites.c) */
    if (__builtin_expect(__atomic_load_n(&e->addr, __ATOMIC_RELAXED) == (uintptr_t)lock, 1)) {
        uint32_t w = __atomic_load_n(&e->word, __ATOMIC_ACQUIRE);
        if (__builtin_expect(w != 0 && w != LTP_WORD_TOMB && LTP_WORD_KIND(w) == (uint32_t)kind, 1))
            return e;
    }
    return ltp_locktab_slow(lock, kind);
}

/* A lock was initialised at `lock` (site already computed). */
void ltp_locktab_born(void *lock, int kind, uint32_t site);

/* A lock was destroyed. */
void ltp_locktab_died(void *lock, int kind);

#endif
