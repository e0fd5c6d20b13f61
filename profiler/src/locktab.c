/*
 * locktab.c - the lock address table's slow paths (state machine in locktab.h).
 */
#define _GNU_SOURCE
#include "locktab.h"

#include <sched.h>
#include <stddef.h>

#include "region.h"
#include "sites.h"
#include "spin.h"

#define MASK ((1u << LT_LOCKTAB_BITS) - 1)

struct lt_lockent lt_locktab[1u << LT_LOCKTAB_BITS];

static void untracked(void)
{
    if (lt_base)
        __atomic_fetch_add(&lt_hdr()->locks_untracked, 1, __ATOMIC_RELAXED);
}

/* TOMB -> 0 claims a dead slot for `lock`; the address is stored after the claim, so a
 * reader of the old address that sees word 0 waits, then notices the new address. */
static int claim_tomb(struct lt_lockent *e, void *lock)
{
    uint32_t expected = LT_WORD_TOMB;
    if (!__atomic_compare_exchange_n(&e->word, &expected, 0, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
        return 0;
    __atomic_store_n(&e->owner, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&e->addr, (uintptr_t)lock, __ATOMIC_RELEASE);
    return 1;
}

/* The entry of `lock`, or a slot claimed for it (*claimed = 1: its word is 0 and the caller
 * must publish it).  NULL when no slot is free within the probe limit. */
static struct lt_lockent *find_or_claim(void *lock, int *claimed)
{
    uint64_t h = lt_locktab_hash(lock);
restart:;
    struct lt_lockent *tomb = NULL;
    for (unsigned i = 0; i < LT_LOCKTAB_PROBE; i++) {
        struct lt_lockent *e = &lt_locktab[(h + i) & MASK];
        uintptr_t a = __atomic_load_n(&e->addr, __ATOMIC_ACQUIRE);
        if (a == (uintptr_t)lock) {
            *claimed = 0;
            return e;
        }
        if (a == 0) {
            /* The end of the probe sequence: `lock` is not in the table. */
            if (tomb) {
                if (claim_tomb(tomb, lock)) {
                    *claimed = 1;
                    return tomb;
                }
                goto restart;
            }
            uintptr_t expected = 0;
            if (__atomic_compare_exchange_n(&e->addr, &expected, (uintptr_t)lock, 0,
                                            __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
                *claimed = 1;
                return e;
            }
            if (expected == (uintptr_t)lock) {
                *claimed = 0;
                return e;
            }
            continue; /* another lock took this slot: probe on */
        }
        if (!tomb && __atomic_load_n(&e->word, __ATOMIC_RELAXED) == LT_WORD_TOMB)
            tomb = e;
    }
    if (tomb && claim_tomb(tomb, lock)) {
        *claimed = 1;
        return tomb;
    }
    return NULL;
}

/* Wait for a slot's publisher; 0 if it never comes (it vanished in a fork). */
static uint32_t wait_word(struct lt_lockent *e)
{
    for (unsigned i = 0;; i++) {
        uint32_t w = __atomic_load_n(&e->word, __ATOMIC_ACQUIRE);
        if (w)
            return w;
        if (i < 1000)
            lt_cpu_relax();
        else if (i < 20000)
            sched_yield();
        else
            return 0;
    }
}

static void publish(struct lt_lockent *e, int kind, uint32_t site)
{
    __atomic_store_n(&e->word, LT_WORD(kind, site), __ATOMIC_RELEASE);
}

struct lt_lockent *lt_locktab_slow(void *lock, int kind)
{
    for (int tries = 0; tries < 8; tries++) {
        int claimed;
        struct lt_lockent *e = find_or_claim(lock, &claimed);
        if (!e)
            break;
        if (claimed) {
            uint32_t site = lt_site_first_use(kind, lock);
            publish(e, kind, site);
            lt_site_born(site);
            return e;
        }
        uint32_t w = wait_word(e);
        if (!w)
            break;
        if (__atomic_load_n(&e->addr, __ATOMIC_ACQUIRE) != (uintptr_t)lock)
            continue; /* the slot was reused for another lock meanwhile */
        if (w != LT_WORD_TOMB && LT_WORD_KIND(w) == (uint32_t)kind)
            return e;
        /* Used again after destroy without a new init, or now used as another kind (its
         * memory was reused): a new instance, sited by this first use. */
        uint32_t site = lt_site_first_use(kind, lock);
        if (__atomic_compare_exchange_n(&e->word, &w, LT_WORD(kind, site), 0, __ATOMIC_ACQ_REL,
                                        __ATOMIC_ACQUIRE)) {
            if (w != LT_WORD_TOMB)
                lt_site_died(LT_WORD_SITE(w));
            lt_site_born(site);
            return e;
        }
    }
    untracked();
    return NULL;
}

void lt_locktab_born(void *lock, int kind, uint32_t site)
{
    int claimed;
    struct lt_lockent *e = find_or_claim(lock, &claimed);
    if (!e) {
        untracked();
        return;
    }
    uint32_t old =
        claimed ? 0 : __atomic_exchange_n(&e->word, LT_WORD(kind, site), __ATOMIC_ACQ_REL);
    if (claimed)
        publish(e, kind, site);
    __atomic_store_n(&e->owner, 0, __ATOMIC_RELAXED);
    /* Re-initialised without a destroy in between: the old instance is gone. */
    if (old != 0 && old != LT_WORD_TOMB)
        lt_site_died(LT_WORD_SITE(old));
    lt_site_born(site);
}

void lt_locktab_died(void *lock, int kind)
{
    (void)kind;
    uint64_t h = lt_locktab_hash(lock);
    for (unsigned i = 0; i < LT_LOCKTAB_PROBE; i++) {
        struct lt_lockent *e = &lt_locktab[(h + i) & MASK];
        uintptr_t a = __atomic_load_n(&e->addr, __ATOMIC_ACQUIRE);
        if (a == 0)
            return;
        if (a != (uintptr_t)lock)
            continue;
        uint32_t w = __atomic_load_n(&e->word, __ATOMIC_ACQUIRE);
        while (w != 0 && w != LT_WORD_TOMB &&
               !__atomic_compare_exchange_n(&e->word, &w, LT_WORD_TOMB, 0, __ATOMIC_ACQ_REL,
                                            __ATOMIC_ACQUIRE))
            ;
        if (w != 0 && w != LT_WORD_TOMB)
            lt_site_died(LT_WORD_SITE(w));
        return;
    }
}
