/*
 * mutex.c - the public lt_mutex_* and lt_execute entry points.
 *
 * A lock is bound to its algorithm on first use (statically initialised locks never pass
 * through lt_mutex_init), then every call goes straight to the algorithm's table.
 */
#include <errno.h>
#include <stdatomic.h>
#include <string.h>

#include "algo.h"
#include "config.h"

/* The algorithm configured for a site, or the default. */
static const struct lt_algo *site_algo(int site)
{
    const struct lt_site_config *c = lt_config_site(site);
    const struct lt_algo *a = c ? lt_algo_find(c->algorithm) : NULL;
    return a ? a : lt_algo_default();
}

static const struct lt_algo *bind(lt_mutex_t *m)
{
    /* acquire: pairs with the release CAS below, so the algorithm's init is visible. */
    const struct lt_algo *a = __atomic_load_n((const struct lt_algo **)&m->_ops, __ATOMIC_ACQUIRE);
    if (__builtin_expect(a != NULL, 1))
        return a;
    a = site_algo(m->_site);
    const struct lt_algo *expected = NULL;
    /* Statically initialised: the initialiser already is the algorithm's zero state for
     * posix; other algorithms initialise before publication.  Only one thread publishes. */
    if (__atomic_compare_exchange_n((const struct lt_algo **)&m->_ops, &expected, a, 0,
                                    __ATOMIC_RELEASE, __ATOMIC_ACQUIRE))
        return a;
    return expected;
}

int lt_mutex_init(lt_mutex_t *m, const pthread_mutexattr_t *attr, int site)
{
    (void)attr;
    memset(m, 0, sizeof *m);
    m->_site = site;
    const struct lt_algo *a = site_algo(site);
    int r = a->init(m);
    if (r == 0)
        __atomic_store_n((const struct lt_algo **)&m->_ops, a, __ATOMIC_RELEASE);
    return r;
}

int lt_mutex_destroy(lt_mutex_t *m)
{
    int r = bind(m)->destroy(m);
    if (r == 0)
        __atomic_store_n((const struct lt_algo **)&m->_ops, NULL, __ATOMIC_RELAXED);
    return r;
}

int lt_mutex_lock(lt_mutex_t *m)
{
    return bind(m)->lock(m);
}

int lt_mutex_trylock(lt_mutex_t *m)
{
    return bind(m)->trylock(m);
}

int lt_mutex_timedlock(lt_mutex_t *m, const struct timespec *abstime)
{
    return bind(m)->timedlock(m, abstime);
}

int lt_mutex_unlock(lt_mutex_t *m)
{
    return bind(m)->unlock(m);
}

void *lt_execute_ex(lt_mutex_t *m, lt_cs_fn fn, void *ctx, unsigned flags)
{
    const struct lt_algo *a = bind(m);
    if (a->execute && !(flags & (LT_EXEC_ON_CALLER | LT_EXEC_MAY_WAIT)))
        return a->execute(m, fn, ctx);
    a->lock(m);
    void *r = fn(ctx);
    a->unlock(m);
    return r;
}

void *lt_execute(lt_mutex_t *m, lt_cs_fn fn, void *ctx)
{
    return lt_execute_ex(m, fn, ctx, 0);
}

int lt_execute_trylock(lt_mutex_t *m, lt_cs_fn fn, void *ctx, void **result)
{
    const struct lt_algo *a = bind(m);
    int r = a->trylock(m);
    if (r != 0)
        return r;
    void *v = fn(ctx);
    a->unlock(m);
    if (result)
        *result = v;
    return 0;
}

const char *lt_mutex_algorithm(lt_mutex_t *m)
{
    return bind(m)->name;
}
