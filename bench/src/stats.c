/*
 * stats.c - fairness measures and weighted quantiles (see stats.h).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "stats.h"

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static uint64_t *sorted_copy(const uint64_t *x, size_t n)
{
    uint64_t *s = malloc((n ? n : 1) * sizeof *s);
    if (s == NULL)
        return NULL;
    memcpy(s, x, n * sizeof *s);
    qsort(s, n, sizeof *s, cmp_u64);
    return s;
}

double lb_rsd(const uint64_t *x, size_t n)
{
    if (n == 0)
        return 0;
    double mean = 0, var = 0;
    for (size_t i = 0; i < n; i++)
        mean += (double)x[i];
    mean /= (double)n;
    if (mean == 0)
        return 0;
    for (size_t i = 0; i < n; i++)
        var += ((double)x[i] - mean) * ((double)x[i] - mean);
    return sqrt(var / (double)n) / mean;
}

/* With x sorted ascending (1-based rank i), Σi Σj |xi - xj| = 2 Σi (2i - n - 1) xi, so
 * G = Σi (2i - n - 1) xi / (n Σ x): the definition in O(n log n). */
double lb_gini(const uint64_t *x, size_t n)
{
    if (n == 0)
        return 0;
    uint64_t *s = sorted_copy(x, n);
    if (s == NULL)
        return NAN;
    double num = 0, total = 0;
    for (size_t i = 0; i < n; i++) {
        num += (2.0 * (double)(i + 1) - (double)n - 1.0) * (double)s[i];
        total += (double)s[i];
    }
    free(s);
    return total == 0 ? 0 : num / ((double)n * total);
}

double lb_min_max_ratio(const uint64_t *x, size_t n)
{
    if (n == 0)
        return 1;
    uint64_t lo = x[0], hi = x[0];
    for (size_t i = 1; i < n; i++) {
        lo = x[i] < lo ? x[i] : lo;
        hi = x[i] > hi ? x[i] : hi;
    }
    return hi == 0 ? 1 : (double)lo / (double)hi;
}

/* Sort ascending, sum the upper half (the middle element of an odd count counts half). */
double lb_fairness_factor(const uint64_t *x, size_t n)
{
    if (n == 0)
        return 0.5;
    uint64_t *s = sorted_copy(x, n);
    if (s == NULL)
        return NAN;
    double upper = 0, total = 0;
    for (size_t i = 0; i < n; i++) {
        total += (double)s[i];
        if (2 * i + 1 > n)
            upper += (double)s[i];
        else if (2 * i + 1 == n)
            upper += (double)s[i] / 2;
    }
    free(s);
    return total == 0 ? 0.5 : upper / total;
}

int lb_reservoir_init(struct lb_reservoir *r, size_t cap, uint64_t seed)
{
    r->v = malloc((cap ? cap : 1) * sizeof *r->v);
    r->n = 0;
    r->cap = r->v ? cap : 0;
    r->seen = 0;
    r->rng = seed ? seed : 0x2545f4914f6cdd1du;
    return r->v ? 0 : -1;
}

void lb_reservoir_destroy(struct lb_reservoir *r)
{
    free(r->v);
    r->v = NULL;
    r->n = r->cap = 0;
}

struct weighted {
    double value, weight;
};

static int cmp_weighted(const void *a, const void *b)
{
    double x = ((const struct weighted *)a)->value, y = ((const struct weighted *)b)->value;
    return (x > y) - (x < y);
}

int lb_quantiles(const struct lb_reservoir *rs, size_t nres, struct lb_quantiles *out)
{
    memset(out, 0, sizeof *out);
    size_t total = 0;
    for (size_t i = 0; i < nres; i++) {
        total += rs[i].n;
        out->samples += rs[i].seen;
    }
    if (total == 0)
        return 0;
    struct weighted *w = malloc(total * sizeof *w);
    if (w == NULL)
        return -1;
    size_t k = 0;
    double wsum = 0, vsum = 0;
    for (size_t i = 0; i < nres; i++)
        for (size_t j = 0; j < rs[i].n; j++) {
            w[k].value = rs[i].v[j];
            w[k].weight = (double)rs[i].seen / (double)rs[i].n;
            wsum += w[k].weight;
            vsum += w[k].weight * w[k].value;
            k++;
        }
    qsort(w, total, sizeof *w, cmp_weighted);
    out->min = w[0].value;
    out->max = w[total - 1].value;
    out->mean = vsum / wsum;
    /* The q-quantile: the smallest value whose cumulative weight reaches q of the total. */
    const double qs[3] = {0.5, 0.9, 0.99};
    double *dst[3] = {&out->p50, &out->p90, &out->p99};
    double cum = 0;
    size_t q = 0;
    for (size_t i = 0; i < total && q < 3; i++) {
        cum += w[i].weight;
        while (q < 3 && cum >= qs[q] * wsum * (1 - 1e-12)) {
            *dst[q] = w[i].value;
            q++;
        }
    }
    while (q < 3)
        *dst[q++] = out->max;
    free(w);
    return 0;
}
