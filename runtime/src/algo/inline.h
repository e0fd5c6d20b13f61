/*
 * inline.h - the uncontended lock and unlock that mutex.c inlines for the algorithms that name
 * one in their table (.inline_path, enum lt_inline in algo.h), so that an uncontended pair of
 * theirs costs no call through the table.  Here rather than in mutex.c, which reaches an
 * algorithm only through its table: the cases below are the algorithms' own fast paths, each
 * doing exactly what the algorithm's lock or unlock does when the lock is free and nobody
 * waits (posix.c, shfl_word.h).
 */
#ifndef LT_ALGO_INLINE_H
#define LT_ALGO_INLINE_H

#include <pthread.h>
#include <stdbool.h>

#include "../algo.h"
#include "shfl_word.h"

/* posix's lock without statistics, recording the owner as lt_acquired does (posix.c), for a
 * lock whose inline path is posix; it may wait, in glibc, whose state names no thread the fork
 * protocol would have to repair. */
int lt_posix_lock_inline(lt_mutex_t *m);

/* Take m by the inline path `kind` if it is free, without waiting: true when taken (the caller
 * records the acquisition, as lt_acquired), false when it was busy or `kind` has no such path
 * (the table's lock takes over).  posix has none: its lock is lt_posix_lock_inline. */
static inline __attribute__((always_inline)) bool lt_inline_take(unsigned kind, lt_mutex_t *m)
{
    return kind == LT_INLINE_SHFL && shfl_fast(LT_STATE(m, struct shfl_lock));
}

/* Release m, held by the caller, by the inline path `kind` (not LT_INLINE_NONE: the table's
 * unlock releases those). */
static inline __attribute__((always_inline)) int lt_inline_release(unsigned kind, lt_mutex_t *m)
{
    if (kind == LT_INLINE_SHFL)
        return shfl_unlock_any(m);
    return pthread_mutex_unlock(&m->_u._posix); /* LT_INLINE_POSIX */
}

#endif
