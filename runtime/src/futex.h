/*
 * futex.h - thin wrappers over the futex(2) system call (private futexes only).
 */
#ifndef LT_FUTEX_H
#define LT_FUTEX_H

#include <linux/futex.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* Sleep while *addr == val.  abstime is CLOCK_REALTIME (FUTEX_WAIT_BITSET) or NULL. */
static inline long lt_futex_wait(uint32_t *addr, uint32_t val, const struct timespec *abstime)
{
    return syscall(SYS_futex, addr, FUTEX_WAIT_BITSET_PRIVATE | FUTEX_CLOCK_REALTIME, val, abstime,
                   NULL, FUTEX_BITSET_MATCH_ANY);
}

static inline long lt_futex_wake(uint32_t *addr, int n)
{
    return syscall(SYS_futex, addr, FUTEX_WAKE_PRIVATE, n, NULL, NULL, 0);
}

#endif
