/*
 * shfl - the non-blocking ShflLock (shfl_core.h has the algorithm and its state machine).
 *
 * Waiting: LT_WAIT_SPIN - for under-subscribed machines, where it keeps hand-overs
 * cache-to-cache.  With a queue, the lock goes to the queue head in order: a descheduled head
 * stalls it, so it collapses when threads outnumber CPUs (use shfl-block there).
 * State: 16 bytes; queue nodes live on the waiters' stacks.
 */
#include "shfl_core.h"

static int shfl_init(lt_mutex_t *m)
{
    (void)m;
    return 0;
}

static int shfl_lock(lt_mutex_t *m)
{
    if (__builtin_expect(shfl_fast(LT_STATE(m, struct shfl_lock)), 1))
        return lt_acquired(m);
    return shfl_lock_slow(m, false);
}

static int shfl_timedlock(lt_mutex_t *m, const struct timespec *abstime)
{
    return lt_timedlock_handoff(m, shfl_trylock_any, abstime);
}

const struct lt_algo lt_algo_shfl = {
    .name = "shfl",
    .caps = LT_CAP_SUPPORTS_COND,
    .counts = LT_STAT_BIT(LT_STAT_PARKED),
    .size = sizeof(struct shfl_lock),
    .wait = "spin (queue head on the lock word, others on their own node), then yield",
    .inline_path = LT_INLINE_SHFL,
    .init = shfl_init,
    .destroy = shfl_destroy_any,
    .lock = shfl_lock,
    .trylock = shfl_trylock_any,
    .timedlock = shfl_timedlock,
    .unlock = shfl_unlock_any,
    .fork_child = shfl_fork_child_any,
};
