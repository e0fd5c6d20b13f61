/*
 * diag.c - misuse reports (diag.h).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

#include "algo.h"
#include "config.h"
#include "diag.h"
#include "stats.h"
#include "thread.h"

static const char *const what[LT_MISUSE_N] = {
    [LT_MISUSE_UNLOCK_FREE] = "unlock of a lock that is not held",
    [LT_MISUSE_UNLOCK_FOREIGN] = "unlock by a thread that does not hold the lock (allowed for "
                                 "default-type locks, as glibc allows it)",
    [LT_MISUSE_RELOCK] = "a thread locks a lock it already holds: it deadlocks (use a recursive "
                         "mutex type if this is meant)",
    [LT_MISUSE_DESTROY_HELD] = "destroy of a lock that is held (EBUSY)",
    [LT_MISUSE_DESTROY_BUSY] = "destroy of a lock that threads wait for (EBUSY)",
    [LT_MISUSE_DESTROYED] = "use of a destroyed lock (EINVAL)",
    [LT_MISUSE_COND_NOT_HELD] = "condition wait without holding the mutex (EPERM)",
    [LT_MISUSE_COND_NATIVE] = "process-shared condition variable used with a mutex that is not "
                              "process-shared (EINVAL)",
};

/* (site, kind) pairs already reported: each is reported once.  report_lock is held across a
 * fork (thread.c's handlers), as the statistics' lock is (stats.c): copied held, it would stop
 * the child's first misuse report for ever. */
#define MAX_REPORTED 256
static struct {
    int site;
    int kind;
} reported[MAX_REPORTED];
static unsigned nreported;
static pthread_mutex_t report_lock = PTHREAD_MUTEX_INITIALIZER;

void lt_diag_prepare_fork(void)
{
    pthread_mutex_lock(&report_lock);
}

void lt_diag_parent_after_fork(void)
{
    pthread_mutex_unlock(&report_lock);
}

void lt_diag_fork_child(void)
{
    pthread_mutex_unlock(&report_lock); /* taken by this thread in lt_diag_prepare_fork */
}

void lt_misuse(const lt_mutex_t *m, enum lt_misuse kind)
{
    int site = m->_site;
    lt_stat(site, LT_STAT_MISUSE);
    pthread_mutex_lock(&report_lock);
    int seen = 0;
    for (unsigned i = 0; i < nreported && !seen; i++)
        seen = reported[i].site == site && reported[i].kind == (int)kind;
    if (!seen && nreported < MAX_REPORTED) {
        reported[nreported].site = site;
        reported[nreported].kind = (int)kind;
        nreported++;
    }
    pthread_mutex_unlock(&report_lock);
    if (seen)
        return;
    char where[256], line[768];
    const struct lt_algo *a = lt_site_algo(site);
    int n = snprintf(line, sizeof line,
                     "locktune: misuse: %s: %s, lock %p, algorithm %s, thread %d (reported once "
                     "per site)\n",
                     what[kind], lt_site_describe(site, where, sizeof where), (const void *)m,
                     (__atomic_load_n(&m->_flags, __ATOMIC_RELAXED) & LT_MUTEX_F_NATIVE_) ? "posix"
                                                                                          : a->name,
                     (int)lt_self());
    if (n > (int)sizeof line - 1)
        n = (int)sizeof line - 1;
    ssize_t w = write(2, line, (size_t)n); /* one write: never interleaved */
    (void)w;
}
