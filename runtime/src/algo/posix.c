/*
 * posix - glibc's pthread_mutex_t, kept inline in lt_mutex_t.
 *
 * The baseline every other algorithm is measured against, and the algorithm of every site
 * nobody configured.  Blocking (futex: waiters sleep at once, no spinning), unfair: an
 * unlocking thread may take the lock straight back before the thread it woke runs, which keeps
 * throughput up under oversubscription.  Waiting is glibc's own: the runtime's waiting policies
 * and spin budget do not apply, and parked waits and hand-overs are not visible to the
 * statistics (null in LOCKTUNE_STATS).
 *
 * Without statistics, mutex.c's fast paths (inline.h) call lt_posix_lock_inline and glibc's
 * unlock directly rather than through this table, so that a site left on posix costs little
 * more than the program's own pthread_mutex did.  The entries below serve every other path.
 *
 * State: 40 bytes (sizeof(pthread_mutex_t) on x86-64).
 */
#include <errno.h>
#include <pthread.h>

#include "../algo.h"
#include "inline.h"

static int posix_init(lt_mutex_t *m)
{
    return pthread_mutex_init(&m->_u._posix, NULL);
}

static int posix_destroy(lt_mutex_t *m)
{
    return pthread_mutex_destroy(&m->_u._posix);
}

static int posix_lock(lt_mutex_t *m)
{
    if (__builtin_expect(lt_stats_on, 0)) { /* contended = the first attempt failed */
        if (pthread_mutex_trylock(&m->_u._posix) == 0)
            return lt_acquired(m);
        lt_contended(m);
    }
    int r = pthread_mutex_lock(&m->_u._posix);
    return r ? r : lt_acquired(m);
}

/* posix_lock where statistics are off and the caller has its tid (mutex.c's inline path). */
int lt_posix_lock_inline(lt_mutex_t *m)
{
    int r = pthread_mutex_lock(&m->_u._posix);
    if (r == 0) /* the owner, as lt_acquired records it */
        __atomic_store_n(&m->_owner, lt_thread_self.tid, __ATOMIC_RELAXED);
    return r;
}

static int posix_trylock(lt_mutex_t *m)
{
    int r = pthread_mutex_trylock(&m->_u._posix);
    return r ? r : lt_acquired(m);
}

static int posix_timedlock(lt_mutex_t *m, const struct timespec *abstime)
{
    int r = pthread_mutex_trylock(&m->_u._posix);
    if (r == EBUSY) {
        lt_contended(m); /* counts it, and reports a relock by the holder */
        r = pthread_mutex_timedlock(&m->_u._posix, abstime);
    }
    return r ? r : lt_acquired(m);
}

static int posix_unlock(lt_mutex_t *m)
{
    return pthread_mutex_unlock(&m->_u._posix);
}

const struct lt_algo lt_algo_posix = {
    .name = "posix",
    .caps = LT_CAP_SUPPORTS_COND | LT_CAP_BLOCKING | LT_CAP_OVERSUB_SAFE,
    .counts = 0,
    .size = sizeof(pthread_mutex_t),
    .wait = "glibc: futex sleep",
    .inline_path = LT_INLINE_POSIX,
    .init = posix_init,
    .destroy = posix_destroy,
    .lock = posix_lock,
    .trylock = posix_trylock,
    .timedlock = posix_timedlock,
    .unlock = posix_unlock,
};
