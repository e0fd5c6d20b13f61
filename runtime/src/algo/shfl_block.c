/*
 * shfl-block - the blocking ShflLock (shfl_core.h has the algorithm and its state machine).
 *
 * Waiting: LT_WAIT_PARK for waiters behind the head (spin for the budget, then futex), the
 * head spins; lock stealing always allowed; wake-ups done ahead of time, off the critical
 * path.  Meant for oversubscribed machines: a descheduled waiter never stalls the lock.
 * Fairness: none promised (stealing).  State: 16 bytes; queue nodes live on the
 * waiters' stacks.
 */
#include "shfl_core.h"

static int shfl_block_init(lt_mutex_t *m)
{
    (void)m;
    return 0;
}

static int shfl_block_lock(lt_mutex_t *m)
{
    if (__builtin_expect(shfl_take(LT_STATE(m, struct shfl_lock)), 1))
        return lt_acquired(m); /* stealing is always allowed */
    return shfl_lock_slow(m, true);
}

static int shfl_block_trylock(lt_mutex_t *m)
{
    return shfl_take(LT_STATE(m, struct shfl_lock)) ? lt_acquired(m) : EBUSY;
}

static int shfl_block_timedlock(lt_mutex_t *m, const struct timespec *abstime)
{
    return lt_timedlock_handoff(m, shfl_block_trylock, abstime);
}

const struct lt_algo lt_algo_shfl_block = {
    .name = "shfl-block",
    .caps = LT_CAP_SUPPORTS_COND | LT_CAP_BLOCKING | LT_CAP_OVERSUB_SAFE,
    .counts = LT_STAT_BIT(LT_STAT_PARKED),
    .size = sizeof(struct shfl_lock),
    .wait = "steal or queue; spin for the budget, then park (futex); head spins",
    .init = shfl_block_init,
    .destroy = shfl_destroy_any,
    .lock = shfl_block_lock,
    .trylock = shfl_block_trylock,
    .timedlock = shfl_block_timedlock,
    .unlock = shfl_unlock_any,
    .fork_child = shfl_fork_child_any,
};
