/*
 * stats.h - fairness over per-thread work, and sampled latency distributions.
 *
 *   relative standard deviation  σ/μ (population σ) of per-thread operations: long-term
 *                                fairness, 0 = every thread did the same work
 *   Gini coefficient             Σi Σj |xi - xj| / (2 n² μ): 0 = equal shares, (n-1)/n = one
 *                                thread did everything
 *   min/max ratio                the least served thread's work over the most served one's
 *   fairness factor              Dice et al. (CNA, ShflLock): the share of the work done by the
 *                                better-served half of the threads; 0.5 = fair, 1 = unfair
 *
 * Latencies are kept in per-thread reservoirs (uniform samples of bounded size, Vitter's
 * algorithm R) and merged with weights seen/kept, so a thread that saw more events weighs more.
 */
#ifndef LB_STATS_H
#define LB_STATS_H

#include <stddef.h>
#include <stdint.h>

double lb_rsd(const uint64_t *x, size_t n);
double lb_gini(const uint64_t *x, size_t n);
double lb_min_max_ratio(const uint64_t *x, size_t n);
double lb_fairness_factor(const uint64_t *x, size_t n);

struct lb_reservoir {
    uint32_t *v;
    size_t n, cap;
    uint64_t seen;
    uint64_t rng; /* xorshift64 state, never 0 */
};

int lb_reservoir_init(struct lb_reservoir *r, size_t cap, uint64_t seed);
void lb_reservoir_destroy(struct lb_reservoir *r);

static inline void lb_reservoir_add(struct lb_reservoir *r, uint32_t x)
{
    r->seen++;
    if (r->n < r->cap) {
        r->v[r->n++] = x;
        return;
    }
    r->rng ^= r->rng << 13;
    r->rng ^= r->rng >> 7;
    r->rng ^= r->rng << 17;
    uint64_t j = r->rng % r->seen;
    if (j < r->cap)
        r->v[j] = x;
}

struct lb_quantiles {
    uint64_t samples; /* events seen in all reservoirs */
    double min, mean, p50, p90, p99, max;
};

/* Weighted quantiles over several reservoirs.  0, or -1 when out of memory. */
int lb_quantiles(const struct lb_reservoir *rs, size_t nres, struct lb_quantiles *out);

#endif
