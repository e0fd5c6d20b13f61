/*
 * roundtrip.h - the core-to-core round trip: one cache line bounced between two pinned threads.
 *
 * It is the physical floor of every handover between cores (an RCL section cannot cost less:
 * the request goes to the server and the answer comes back), and on a VM it drifts 3-10x as the
 * host moves vCPUs around (notes/memcached-and-baselines.md), so every benchmark run records one
 * beside it.
 *
 *   ping (cpu a)                         pong (cpu b)
 *   flag = 2k+1  ───── line moves ─────▶ sees 2k+1
 *   sees 2k+2    ◀──── line moves ────── flag = 2k+2        one round trip = two transfers
 */
#ifndef LB_ROUNDTRIP_H
#define LB_ROUNDTRIP_H

struct lb_rt {
    int ok; /* 0: see why */
    char why[160];
    int cpu_a, cpu_b;
    unsigned batches;
    unsigned long per_batch;
    double ns_min, ns_median, ns_max; /* per round trip, over the batches' means */
    double cycles_median;
};

/* `round_trips` in total, timed in `batches`; tsc_hz converts cycles to ns.  Gives up (ok = 0)
 * when one side waits more than a second: the other thread is not running. */
void lb_roundtrip(int cpu_a, int cpu_b, unsigned long round_trips, unsigned batches, double tsc_hz,
                  struct lb_rt *out);

#endif
