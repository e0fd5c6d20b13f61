/*
 * combining.c - what the combining locks share (combining.h): the session bound, the serving
 * frames, and the condition wait that steps aside.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <unistd.h>

#include "../diag.h"
#include "../thread.h"
#include "../wait.h"
#include "combining.h"

__thread struct lt_serving *lt_serving_top __attribute__((tls_model("initial-exec")));

unsigned lt_combine_max = 6, lt_combine_hard = 144;
static pthread_once_t setup_once = PTHREAD_ONCE_INIT;

/* The CPUs from sched_getaffinity (lt_wait_cpus), not sysconf(_SC_NPROCESSORS_ONLN): glibc reads
 * that from a file in /sys, and a descriptor the library opens on one of the program's threads,
 * at a moment of the program's choosing, shifts the numbers of the descriptors the program
 * opens meanwhile.  memcached's t/watcher_connid.t, which expects its listening socket's
 * descriptor below its client's, failed under ccsynch once in about 100 runs (the lock bound
 * on a worker thread while the main thread made the socket). */
static void setup(void)
{
    unsigned n = lt_wait_cpus();
    lt_combine_max = 3u * n;
    lt_combine_hard = 4u * lt_combine_max > 144u ? 4u * lt_combine_max : 144u; /* combining.h */
}

void lt_combining_setup(void)
{
    pthread_once(&setup_once, setup);
}

int lt_combining_cond_wait(lt_cond_t *c, lt_mutex_t *m, const struct timespec *abstime)
{
    struct lt_serving *s = lt_serving_find(m);
    if (!s || s->stepped)
        return lt_cond_wait_generic(c, m, abstime); /* a lock holder: the ordinary wait */
    if (abstime && lt_abstime_check(abstime))
        return EINVAL; /* nothing released */
    /* A section this thread runs as combiner.  The generic wait checks that the caller holds
     * m (the owner field, which a combining session does not keep) and releases it through
     * the algorithm's unlock, which sees `stepping` and steps aside. */
    __atomic_store_n(&m->_owner, lt_self(), __ATOMIC_RELAXED);
    m->_count = 1;
    s->stepping = 1;
    int r = lt_cond_wait_generic(c, m, abstime);
    s->stepping = 0;
    s->stepped = 1; /* m was taken back by lock(): this thread holds it now */
    lt_stat(m->_site, LT_STAT_STEPPED_ASIDE);
    return r;
}

void lt_combining_relock(lt_mutex_t *m)
{
    lt_misuse_relock(m);
}

void lt_combining_unlock_held(lt_mutex_t *m, int (*unlock)(lt_mutex_t *))
{
    m->_count = 0;
    __atomic_store_n(&m->_owner, 0, __ATOMIC_RELAXED);
    unlock(m);
    if (lt_thread_self.deferred_mutex == m)
        lt_cond_flush_deferred();
}
