/*
 * clock.h - the profiler's time source: the TSC where it is invariant, CLOCK_MONOTONIC
 * otherwise.
 *
 * An invariant TSC (CPUID 0x80000007 EDX bit 8) ticks at a constant rate on every core,
 * but the cores' counters may be offset from one another; a thread that migrates between
 * two readings sees that offset in the difference.  `locktune-probe --clock` measures the
 * largest offset (the Ordo boundary, ordo.c) so the report can call differences inside it
 * noise; here a negative difference is clamped to zero and counted (ltp_elapsed).
 *
 * RDTSC alone may execute before the instructions that precede it have: out of order, a
 * timestamp taken at the end of a critical section can be read while the section's last few
 * hundred instructions are still in flight.  Where every section is timed, these errors are
 * alike at both ends and cancel (the tests check shares against the program's own clock);
 * a section timed alone, sampled among untimed ones, came out up to three times too short.
 * Those take ltp_now_ordered(): LFENCE first makes RDTSC wait for everything before it
 * (Intel SDM, RDTSC), at about the cost of a second reading.
 */
#ifndef LTP_CLOCK_H
#define LTP_CLOCK_H

#include <stdint.h>
#include <time.h>

#include "layout.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <x86intrin.h>
#define LTP_HAVE_TSC 1
#else
#define LTP_HAVE_TSC 0
#endif

extern int ltp_clock_kind; /* LTP_CLOCK_TSC or LTP_CLOCK_MONO, fixed at start-up */

static inline uint64_t ltp_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline uint64_t ltp_now(void)
{
#if LTP_HAVE_TSC
    if (__builtin_expect(ltp_clock_kind == LTP_CLOCK_TSC, 1))
        return __rdtsc();
#endif
    return ltp_mono_ns();
}

/* A reading that marks the end of everything before it (see above): for timestamps taken
 * alone, far from any other (a section sampled at random). */
static inline uint64_t ltp_now_ordered(void)
{
#if LTP_HAVE_TSC
    if (__builtin_expect(ltp_clock_kind == LTP_CLOCK_TSC, 1)) {
        _mm_lfence();
        return __rdtsc();
    }
#endif
    return ltp_mono_ns();
}

/* 1 when the CPU says its TSC is invariant. */
static inline int ltp_tsc_invariant(void)
{
#if LTP_HAVE_TSC
    unsigned a, b, c, d;
    if (!__get_cpuid(0x80000000, &a, &b, &c, &d) || a < 0x80000007)
        return 0;
    __get_cpuid(0x80000007, &a, &b, &c, &d);
    return (d >> 8) & 1;
#else
    return 0;
#endif
}

/* later - earlier, or 0 (counting one unit of noise in *noise) when a migration between
 * cores with offset clocks made it negative. */
static inline uint64_t ltp_elapsed(uint64_t earlier, uint64_t later, uint64_t *noise)
{
    if (__builtin_expect((int64_t)(later - earlier) < 0, 0)) {
        ++*noise;
        return 0;
    }
    return later - earlier;
}

#endif
