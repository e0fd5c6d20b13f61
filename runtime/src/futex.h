/*
 * futex.h - thin wrappers over the futex(2) system call (private futexes only).
 *
 * Every caller re-checks its own condition after a wait returns: a wait may end spuriously
 * (EINTR, or a wake aimed at memory that has since been reused for another futex word).
 */
#ifndef LT_FUTEX_H
#define LT_FUTEX_H

#include <errno.h>
#include <linux/futex.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* Sleep while *addr == val.  abstime: absolute time on `clock` (CLOCK_REALTIME or
 * CLOCK_MONOTONIC), or NULL for no timeout.  Returns 0, EAGAIN (*addr != val), ETIMEDOUT or
 * EINTR. */
static inline int lt_futex_wait(uint32_t *addr, uint32_t val, const struct timespec *abstime,
                                clockid_t clock)
{
    int op = FUTEX_WAIT_BITSET_PRIVATE;
    if (abstime && clock == CLOCK_REALTIME)
        op |= FUTEX_CLOCK_REALTIME;
    long r = syscall(SYS_futex, addr, op, val, abstime, NULL, FUTEX_BITSET_MATCH_ANY);
    return r == 0 ? 0 : errno;
}

/* Wake up to n threads sleeping on addr; how many it woke (0 on error). */
static inline int lt_futex_wake_count(uint32_t *addr, int n)
{
    long r = syscall(SYS_futex, addr, FUTEX_WAKE_PRIVATE, n, NULL, NULL, 0);
    return r > 0 ? (int)r : 0;
}

/* Wake up to n threads sleeping on addr. */
static inline void lt_futex_wake(uint32_t *addr, int n)
{
    syscall(SYS_futex, addr, FUTEX_WAKE_PRIVATE, n, NULL, NULL, 0);
}

#endif
