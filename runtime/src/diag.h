/*
 * diag.h - misuse reports: what POSIX leaves undefined, detected where it is cheap, reported
 * once per site and kind on stderr with the site's file:line, and counted in the statistics.
 */
#ifndef LT_DIAG_H
#define LT_DIAG_H

#include "locktune.h"

enum lt_misuse {
    LT_MISUSE_UNLOCK_FREE,    /* unlock of a lock nobody holds */
    LT_MISUSE_UNLOCK_FOREIGN, /* unlock by a thread other than the holder (default type) */
    LT_MISUSE_RELOCK,         /* a thread locks a default-type lock it already holds */
    LT_MISUSE_DESTROY_HELD,   /* destroy while held */
    LT_MISUSE_DESTROY_BUSY,   /* destroy while threads wait for the lock */
    LT_MISUSE_DESTROYED,      /* use of a destroyed lock */
    LT_MISUSE_COND_NOT_HELD,  /* lt_cond_wait without holding the mutex */
    LT_MISUSE_COND_NATIVE,    /* process-shared condition variable with a non-shared mutex */
    LT_MISUSE_N
};

void lt_misuse(const lt_mutex_t *m, enum lt_misuse kind);
/* fork (thread.c's handlers): the reports' lock is held across the fork, free in the child. */
void lt_diag_prepare_fork(void);
void lt_diag_parent_after_fork(void);
void lt_diag_fork_child(void);

#endif
