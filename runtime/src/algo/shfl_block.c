/*
 * shfl-block - the blocking ShflLock (shfl_core.h has the algorithm and its state machine).
 *
 * Waiting: LT_WAIT_PARK for waiters behind the head (spin for the budget, then futex), the
 * head spins; arriving threads steal the lock until the queue head has waited SH_PATIENCE_NS
 * (it then sets no_steal, and lock and trylock stop stealing: shfl_fast); wake-ups done ahead
 * of time, off the critical path.  Meant for oversubscribed machines: a descheduled waiter
 * never stalls the lock.  Fairness: no FIFO order, but a bounded bypass (shfl_core.h).
 * State: 16 bytes; queue nodes live on the waiters' stacks.
 */
#include "shfl_core.h"

static int shfl_block_init(lt_mutex_t *m)
{
    (void)m;
    return 0;
}

static int shfl_block_lock(lt_mutex_t *m)
{
    /* Steal unless an impatient head has set no_steal.  A fast path that took a free word
     * whatever no_steal said (shfl_take) let threads that release and re-take the lock at once
     * pass the head at every release: the bound of shfl_core.h did not hold, and on one CPU a
     * waiter got the lock only when a re-taker was preempted between its release and its next
     * take (test_bypass: waiters starved for its whole window). */
    if (__builtin_expect(shfl_fast(LT_STATE(m, struct shfl_lock)), 1))
        return lt_acquired(m);
    return shfl_lock_slow(m, true);
}

/* As the fast path: EBUSY while an impatient head is owed the lock (as shfl's trylock). */
static int shfl_block_trylock(lt_mutex_t *m)
{
    return shfl_fast(LT_STATE(m, struct shfl_lock)) ? lt_acquired(m) : EBUSY;
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
    .inline_path = LT_INLINE_SHFL,
    .init = shfl_block_init,
    .destroy = shfl_destroy_any,
    .lock = shfl_block_lock,
    .trylock = shfl_block_trylock,
    .timedlock = shfl_block_timedlock,
    .unlock = shfl_unlock_any,
    .fork_child = shfl_fork_child_any,
};
