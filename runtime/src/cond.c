/*
 * cond.c - condition variables that work with every lock algorithm.
 *
 * A sequence-counter futex: a waiter samples _seq, releases the mutex, and sleeps while _seq
 * is unchanged; signal bumps _seq and wakes one sleeper, broadcast bumps it and wakes all.
 * A signal sent between the unlock and the futex wait changes _seq, so the wait returns at
 * once: no lost wake-up.  Spurious wake-ups are allowed by POSIX.
 */
#include <errno.h>
#include <string.h>

#include "futex.h"
#include "locktune.h"

int lt_cond_init(lt_cond_t *c, const pthread_condattr_t *attr)
{
    (void)attr;
    memset(c, 0, sizeof *c);
    return 0;
}

int lt_cond_destroy(lt_cond_t *c)
{
    /* acquire: see every waiter's decrement before declaring the condvar idle. */
    if (__atomic_load_n(&c->_waiters, __ATOMIC_ACQUIRE) != 0)
        return EBUSY;
    return 0;
}

int lt_cond_timedwait(lt_cond_t *c, lt_mutex_t *m, const struct timespec *abstime)
{
    /* relaxed is enough for the sample: the mutex we still hold orders it against signalers
     * that change the predicate under the same mutex. */
    uint32_t seq = __atomic_load_n(&c->_seq, __ATOMIC_RELAXED);
    __atomic_fetch_add(&c->_waiters, 1, __ATOMIC_SEQ_CST);
    int r = lt_mutex_unlock(m);
    if (r != 0) {
        __atomic_fetch_sub(&c->_waiters, 1, __ATOMIC_RELEASE);
        return r;
    }
    int ret = 0;
    for (;;) {
        long w = lt_futex_wait(&c->_seq, seq, abstime);
        if (w == 0 || errno == EAGAIN)
            break;
        if (errno == ETIMEDOUT) {
            ret = ETIMEDOUT;
            break;
        }
        if (errno != EINTR)
            break;
        if (__atomic_load_n(&c->_seq, __ATOMIC_ACQUIRE) != seq)
            break;
    }
    __atomic_fetch_sub(&c->_waiters, 1, __ATOMIC_RELEASE);
    lt_mutex_lock(m);
    return ret;
}

int lt_cond_wait(lt_cond_t *c, lt_mutex_t *m)
{
    return lt_cond_timedwait(c, m, NULL);
}

int lt_cond_signal(lt_cond_t *c)
{
    __atomic_fetch_add(&c->_seq, 1, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&c->_waiters, __ATOMIC_SEQ_CST))
        lt_futex_wake(&c->_seq, 1);
    return 0;
}

int lt_cond_broadcast(lt_cond_t *c)
{
    __atomic_fetch_add(&c->_seq, 1, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&c->_waiters, __ATOMIC_SEQ_CST))
        lt_futex_wake(&c->_seq, INT32_MAX);
    return 0;
}
