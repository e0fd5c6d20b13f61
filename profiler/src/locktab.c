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

#define MASK ((1u << LTP_LOCKTAB_BITS) - 1)

struct ltp_lockent ltp_locktab[LTP_LOCKTAB_PRIVATE + 1];
uint32_t ltp_lockowner[LTP_LOCKTAB_PRIVATE + 1];

static void untracked(void)
{
    if (ltp_base)
        __atomic_fetch_add(&ltp_hdr()->locks_untracked, 1, __ATOMIC_RELAXED);
}

/* TOMB -> 0 claims a dead slot for `lock`; the address is stored after the claim, so a
 * reader of the old address that sees word 0 waits, then notices the new address. */
static int claim_tomb(struct ltp_lockent *e, void *lock)
{
    uint32_t expected = LTP_WORD_TOMB;
    if (!__atomic_compare_exchange_n(&e->word, &expected, 0, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
        return 0;
    __atomic_store_n(ltp_lockent_owner(e), 0, __ATOMIC_RELAXED);
    __atomic_store_n(&e->addr, (uintptr_t)lock, __ATOMIC_RELEASE);
    return 1;
}

/* The entry of `lock`, or a slot claimed for it (*claimed = 1: its word is 0 and the caller
 * must publish it).  NULL when no slot is free within the probe limit. */
static struct ltp_lockent *find_or_claim(void *lock, int *claimed)
{
    uint64_t h = ltp_locktab_hash(lock);
restart:;
    struct ltp_lockent *tomb = NULL;
    for (unsigned i = 0; i < LTP_LOCKTAB_PROBE; i++) {
        struct ltp_lockent *e = &ltp_locktab[(h + i) & MASK];
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
        if (!tomb && __atomic_load_n(&e->word, __ATOMIC_RELAXED) == LTP_WORD_TOMB)
            tomb = e;
    }
    if (tomb && claim_tomb(tomb, lock)) {
        *claimed = 1;
        return tomb;
    }
    return NULL;
}

/* Wait for a slot's publisher; 0 if it never comes (it vanished in a fork). */
static uint32_t wait_word(struct ltp_lockent *e)
{
    for (unsigned i = 0;; i++) {
        uint32_t w = __atomic_load_n(&e->word, __ATOMIC_ACQUIRE);
        if (w)
            return w;
        if (i < 1000)
            ltp_cpu_relax();
        else if (i < 20000)
            sched_yield();
        else
            return 0;
    }
}

static void publish(struct ltp_lockent *e, int kind, uint32_t site)
{
    __atomic_store_n(&e->word, LTP_WORD(kind, site), __ATOMIC_RELEASE);
}

struct ltp_lockent *ltp_locktab_slow(void *lock, int kind)
{
    for (int tries = 0; tries < 8; tries++) {
        int claimed;
        struct ltp_lockent *e = find_or_claim(lock, &claimed);
        if (!e)
            break;
        if (claimed) {
            uint32_t site = ltp_site_first_use(kind, lock);
            publish(e, kind, site);
            ltp_site_born(site);
            return e;
        }
        uint32_t w = wait_word(e);
        if (!w)
            break;
        if (__atomic_load_n(&e->addr, __ATOMIC_ACQUIRE) != (uintptr_t)lock)
            continue; /* the slot was reused for another lock meanwhile */
        if (w != LTP_WORD_TOMB && LTP_WORD_KIND(w) == (uint32_t)kind)
            return e;
        /* Used again after destroy without a new init, or now used as another kind (its
         * memory was reused): a new instance, sited by this first use. */
        uint32_t site = ltp_site_first_use(kind, lock);
        if (__atomic_compare_exchange_n(&e->word, &w, LTP_WORD(kind, site), 0, __ATOMIC_ACQ_REL,
                                        __ATOMIC_ACQUIRE)) {
            if (w != LTP_WORD_TOMB)
                ltp_site_died(LTP_WORD_SITE(w));
            ltp_site_born(site);
            return e;
        }
    }
    untracked();
    return NULL;
}

void ltp_locktab_born(void *lock, int kind, uint32_t site)
{
    int claimed;
    struct ltp_lockent *e = find_or_claim(lock, &claimed);
    if (!e) {
        untracked();
        return;
    }
    uint32_t old =
        claimed ? 0 : __atomic_exchange_n(&e->word, LTP_WORD(kind, site), __ATOMIC_ACQ_REL);
    if (claimed)
        publish(e, kind, site);
    __atomic_store_n(ltp_lockent_owner(e), 0, __ATOMIC_RELAXED);
    /* Re-initialised without a destroy in between: the old instance is gone. */
    if (old != 0 && old != LTP_WORD_TOMB)
        ltp_site_died(LTP_WORD_SITE(old));
    ltp_site_born(site);
}

void ltp_locktab_died(void *lock, int kind)
{
    (void)kind;
    uint64_t h = ltp_locktab_hash(lock);
    for (unsigned i = 0; i < LTP_LOCKTAB_PROBE; i++) {
        struct ltp_lockent *e = &ltp_locktab[(h + i) & MASK];
        uintptr_t a = __atomic_load_n(&e->addr, __ATOMIC_ACQUIRE);
        if (a == 0)
            return;
        if (a != (uintptr_t)lock)
            continue;
        uint32_t w = __atomic_load_n(&e->word, __ATOMIC_ACQUIRE);
        while (w != 0 && w != LTP_WORD_TOMB &&
               !__atomic_compare_exchange_n(&e->word, &w, LTP_WORD_TOMB, 0, __ATOMIC_ACQ_REL,
                                            __ATOMIC_ACQUIRE))
            ;
        if (w != 0 && w != LTP_WORD_TOMB)
            ltp_site_died(LTP_WORD_SITE(w));
        return;
    }
}
