/*
 * mutex.h - what condition variables need from mutex.c: releasing a lock entirely for a
 * wait (whatever its recursion depth) and taking it back.
 */
#ifndef LT_MUTEX_H
#define LT_MUTEX_H

#include <stdint.h>
#include <time.h>

#include "locktune.h"

/* Whether the calling thread holds m. */
int lt_mutex_held(const lt_mutex_t *m);
/* 0 when the caller holds m; else EPERM (reported for default-type locks) or EINVAL. */
int lt_mutex_cond_check(lt_mutex_t *m);
/* Release m, held by the caller (lt_mutex_cond_check said so), for a condition wait; *depth
 * receives its recursion depth. */
void lt_mutex_cond_release(lt_mutex_t *m, uint32_t *depth);
/* Take m back after the wait and restore the depth. */
void lt_mutex_cond_reacquire(lt_mutex_t *m, uint32_t depth);

/* A forked child: locks that another thread was binding at the fork are unbound again. */
void lt_mutex_after_fork_child(void);
/* A forked child: m was being acquired (or executed on) by a thread lost in the fork; make
 * its state consistent (mutex.c: fork). */
void lt_mutex_fork_repair(lt_mutex_t *m);
/* timed.c: on the release slow path, with TIMED or HANDED set in m->_flags: 1 when the lock
 * went to a timed waiter (it stays held, by that waiter now), 0 when the caller must release
 * it. */
int lt_timed_handoff(lt_mutex_t *m);
/* fork: the timed waiters' list is held across the fork; in the child, the timed waiters
 * announced at the fork are gone (timed.c). */
void lt_mutex_timed_prepare_fork(void);
void lt_mutex_timed_parent_after_fork(void);
void lt_mutex_timed_fork_child(void);

/* The condition wait of cond.c, for every algorithm: release m, sleep, take m back (by the
 * algorithm's unlock and lock).  An algorithm's cond_wait hook may wrap it. */
int lt_cond_wait_generic(lt_cond_t *c, lt_mutex_t *m, const struct timespec *abstime);

#endif
