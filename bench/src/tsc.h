/*
 * tsc.h - time in TSC cycles: the benchmark's clock, its delay loop and its spin hint.
 *
 * Delays between critical sections are given in cycles (the RCL paper's knob).  "Cycles" are
 * TSC ticks: constant-rate on every x86 this project runs on (constant_tsc/nonstop_tsc), so a
 * delay is a fixed amount of time whatever the core's current frequency.  lb_tsc_calibrate()
 * measures the tick rate against CLOCK_MONOTONIC_RAW once per process.
 *
 * Off x86 the clock is CLOCK_MONOTONIC_RAW in nanoseconds (1 "cycle" = 1 ns).
 */
#ifndef LB_TSC_H
#define LB_TSC_H

#include <stdint.h>
#include <time.h>

#if defined(__x86_64__) || defined(__i386__)
#define LB_HAVE_TSC 1

/* Unordered read: good enough for a delay loop, which only needs monotonic progress. */
static inline uint64_t lb_tsc(void)
{
    uint32_t lo, hi;
    __asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
    return ((uint64_t)hi << 32) | lo;
}

/* Ordered read: LFENCE keeps RDTSC from executing before earlier loads have completed, so a
 * timestamp taken just after acquiring a lock is not hoisted above the acquisition. */
static inline uint64_t lb_tsc_ordered(void)
{
    uint32_t lo, hi;
    __asm__ volatile("lfence\n\trdtsc" : "=a"(lo), "=d"(hi)::"memory");
    return ((uint64_t)hi << 32) | lo;
}

static inline void lb_relax(void)
{
    __asm__ volatile("pause" ::: "memory");
}

#else
#define LB_HAVE_TSC 0

static inline uint64_t lb_tsc(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline uint64_t lb_tsc_ordered(void)
{
    return lb_tsc();
}

static inline void lb_relax(void)
{
    __asm__ volatile("" ::: "memory");
}
#endif

/* Busy delay of `cycles` ticks: the non-critical work between two critical sections.  No
 * PAUSE: the paper's delay is computation, which competes for the core like real work. */
static inline void lb_delay(uint64_t cycles)
{
    if (cycles == 0)
        return;
    uint64_t t0 = lb_tsc();
    while (lb_tsc() - t0 < cycles)
        __asm__ volatile("" ::: "memory");
}

/* Ticks per second, measured over about `seconds` against CLOCK_MONOTONIC_RAW. */
double lb_tsc_calibrate(double seconds);

/* Seconds on CLOCK_MONOTONIC, for wall-clock intervals. */
double lb_now(void);

#endif
