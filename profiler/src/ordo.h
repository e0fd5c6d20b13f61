/*
 * ordo.h - this machine's clock: is the TSC invariant, how fast does it tick, and how far
 * apart can two cores' TSCs be (the Ordo boundary: Kashyap's dissertation, chapter 3, in
 * ../shared/papers/scaling-synchronization-primitives-shfllock.txt, Figure 3.1).
 *
 * A time difference measured across a migration between two cores is meaningful only
 * beyond the boundary; the profile records it so the report can say so.
 */
#ifndef LTP_ORDO_H
#define LTP_ORDO_H

#include <stdint.h>

struct ltp_clock_probe {
    int invariant;     /* CPUID says the TSC is invariant */
    double hz;         /* TSC ticks per second, against CLOCK_MONOTONIC_RAW */
    uint64_t boundary; /* Ordo boundary, TSC cycles (0 when not measured) */
    int cpus;          /* CPUs this process may run on */
    int pairs;         /* ordered core pairs measured */
    int runs;          /* one-way messages per ordered pair */
    char error[160];   /* why a pair could not be measured ("" if all were) */
};

/* Measure everything; `runs` messages per ordered pair of CPUs (Ordo uses 100,000; a few
 * thousand give the same minimum on small machines).  Returns 0. */
int ltp_clock_measure(struct ltp_clock_probe *p, int runs);

#endif
