/*
 * posix - glibc's pthread_mutex_t, kept inline in lt_mutex_t.
 *
 * The baseline every other algorithm is measured against, and the algorithm of every site
 * nobody configured.  Blocking (futex), unfair (a releasing thread may barge back in).
 */
#include <errno.h>
#include <pthread.h>

#include "../algo.h"

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
    return pthread_mutex_lock(&m->_u._posix);
}

static int posix_trylock(lt_mutex_t *m)
{
    return pthread_mutex_trylock(&m->_u._posix);
}

static int posix_timedlock(lt_mutex_t *m, const struct timespec *abstime)
{
    return pthread_mutex_timedlock(&m->_u._posix, abstime);
}

static int posix_unlock(lt_mutex_t *m)
{
    return pthread_mutex_unlock(&m->_u._posix);
}

const struct lt_algo lt_algo_posix = {
    .name = "posix",
    .caps = LT_CAP_SUPPORTS_COND | LT_CAP_BLOCKING,
    .init = posix_init,
    .destroy = posix_destroy,
    .lock = posix_lock,
    .trylock = posix_trylock,
    .timedlock = posix_timedlock,
    .unlock = posix_unlock,
    .execute = NULL,
};
