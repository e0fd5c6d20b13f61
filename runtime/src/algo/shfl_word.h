/*
 * shfl_word.h - the ShflLock's lock word and its two fast paths (shfl_core.h has the
 * algorithm, its queue and its state machine).
 *
 * Apart from the rest so that mutex.c can inline them into lt_mutex_lock, lt_mutex_unlock and
 * lt_execute (through inline.h) without the queue's code: an uncontended pair of
 * shfl and shfl-block then costs no call beyond the program's own two.  shfl.c, shfl_block.c
 * and auto.c use the same functions.
 */
#ifndef LT_SHFL_WORD_H
#define LT_SHFL_WORD_H

#include <stdbool.h>
#include <stdint.h>

#include "../algo.h"

struct shfl_node;

struct shfl_lock {
    uint32_t locked;   /* atomic */
    uint32_t no_steal; /* atomic; set by the queue's head (shfl_core.h) */
    struct shfl_node *tail;
};
LT_STATE_FITS(struct shfl_lock);

static inline bool shfl_take(struct shfl_lock *l)
{
    uint32_t z = 0;
    /* acquire: the critical section starts after the CAS that took the word. */
    return __atomic_load_n(&l->locked, __ATOMIC_RELAXED) == 0 &&
           __atomic_compare_exchange_n(&l->locked, &z, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
}

/* The fast path: steal the lock unless waiters have asked for it in order. */
static inline bool shfl_fast(struct shfl_lock *l)
{
    /* relaxed: a hint; shfl_core.h's header comment says which one racy bypass it allows. */
    return __atomic_load_n(&l->no_steal, __ATOMIC_RELAXED) == 0 && shfl_take(l);
}

/* The whole unlock, shfl and shfl-block alike: the waiters take the word themselves. */
static inline int shfl_unlock_any(lt_mutex_t *m)
{
    /* release: the critical section's writes go to the next taker. */
    __atomic_store_n(&LT_STATE(m, struct shfl_lock)->locked, 0, __ATOMIC_RELEASE);
    return 0;
}

#endif
