/*
 * order.c - sampled admission order and the lock working set size (see order.h).
 */
#include <stdlib.h>
#include <string.h>

#include "order.h"

#define LB_MAX_STRIDE  (UINT64_C(1) << 40)
#define LB_MAX_ANALYSE (UINT64_C(1) << 24) /* ranks held at once by the analysis (64 MiB) */
#define LB_EMPTY       UINT32_MAX

void lb_order_init(struct lb_order *o, uint64_t window)
{
    o->window = window;
    atomic_init(&o->stride, 1);
    atomic_init(&o->lost_from, UINT64_MAX);
}

int lb_order_rec_init(struct lb_order_rec *r, struct lb_order *o, size_t cap)
{
    /* At least four windows' worth, so that thinning always frees room (see lb_order_full). */
    if (cap < 4 * o->window)
        cap = 4 * o->window;
    r->o = o;
    r->buf = malloc(cap * sizeof *r->buf);
    r->n = 0;
    r->cap = r->buf ? cap : 0;
    r->lo = 0;
    r->hi = o->window;
    r->stride = 1;
    return r->buf ? 0 : -1;
}

void lb_order_rec_destroy(struct lb_order_rec *r)
{
    free(r->buf);
    r->buf = NULL;
    r->n = r->cap = 0;
}

void lb_order_advance(struct lb_order_rec *r, uint64_t s)
{
    /* relaxed: the stride is a hint while the run lasts (a stale, smaller stride only makes
     * this thread note more); the analysis reads the final value after joining the threads. */
    uint64_t g = atomic_load_explicit(&r->o->stride, memory_order_relaxed);
    if (g > r->stride)
        r->stride = g;
    uint64_t w = s / r->o->window;
    w = (w + r->stride - 1) & ~(r->stride - 1); /* the next sampled window at or after s's */
    r->lo = w * r->o->window;
    r->hi = r->lo + r->o->window;
}

/* Keep only the ranks of windows sampled under `stride`. */
static void thin(struct lb_order_rec *r, uint64_t stride)
{
    size_t k = 0;
    for (size_t i = 0; i < r->n; i++)
        if ((r->buf[i] / r->o->window) % stride == 0)
            r->buf[k++] = r->buf[i];
    r->n = k;
}

static void lost(struct lb_order *o, uint64_t s)
{
    uint64_t cur = atomic_load_explicit(&o->lost_from, memory_order_relaxed);
    while (s < cur && !atomic_compare_exchange_weak_explicit(
                          &o->lost_from, &cur, s, memory_order_relaxed, memory_order_relaxed))
        ;
}

void lb_order_full(struct lb_order_rec *r, uint64_t s)
{
    struct lb_order *o = r->o;
    if (r->cap == 0) { /* no buffer at all */
        lost(o, s);
        r->lo = r->hi = UINT64_MAX;
        return;
    }
    for (;;) {
        /* Adopt the shared stride (it may have grown since this thread last looked) and drop
         * what it no longer samples.  Freeing a quarter of the buffer is enough to go on;
         * otherwise double the shared stride, unless another thread already raised it
         * further (relaxed: see lb_order_advance). */
        uint64_t g = atomic_load_explicit(&o->stride, memory_order_relaxed);
        if (g > r->stride)
            r->stride = g;
        thin(r, r->stride);
        if (r->n <= r->cap - r->cap / 4)
            break;
        uint64_t want = r->stride * 2;
        if (want > LB_MAX_STRIDE) {
            lost(o, s); /* give up noting; the analysis stops below s */
            r->lo = r->hi = UINT64_MAX;
            return;
        }
        while (g < want && !atomic_compare_exchange_weak_explicit(
                               &o->stride, &g, want, memory_order_relaxed, memory_order_relaxed))
            ;
    }
    if ((s / o->window) % r->stride == 0)
        r->buf[r->n++] = s;
    else
        r->lo = r->hi = 0; /* s's window is no longer sampled: find the next one */
}

int lb_order_analyse(struct lb_order *o, struct lb_order_rec *recs, unsigned nthreads,
                     uint64_t from, uint64_t to, struct lb_lwss *out)
{
    memset(out, 0, sizeof *out);
    const uint64_t W = o->window;
    const uint64_t S = atomic_load_explicit(&o->stride, memory_order_relaxed);
    const uint64_t lost_from = atomic_load_explicit(&o->lost_from, memory_order_relaxed);
    out->stride = S;

    uint64_t limit = to < lost_from ? to : lost_from;
    uint64_t top = 0; /* highest rank noted, +1 */
    for (unsigned t = 0; t < nthreads; t++)
        for (size_t i = 0; i < recs[t].n; i++)
            if (recs[t].buf[i] + 1 > top)
                top = recs[t].buf[i] + 1;
    if (top < limit)
        limit = top;
    uint64_t w_first = (from + W - 1) / W;
    w_first = (w_first + S - 1) / S * S;
    uint64_t w_end = limit / W; /* windows wholly below limit */
    if (w_end <= w_first)
        return 0;
    uint64_t nwin = (w_end - w_first + S - 1) / S;
    if (nwin * W > LB_MAX_ANALYSE)
        nwin = LB_MAX_ANALYSE / W;

    uint32_t *order = malloc(nwin * W * sizeof *order);
    uint64_t *stamp = malloc(nthreads * sizeof *stamp);
    if (order == NULL || stamp == NULL) {
        free(order);
        free(stamp);
        return -1;
    }
    memset(order, 0xff, nwin * W * sizeof *order);
    for (unsigned t = 0; t < nthreads; t++) {
        stamp[t] = UINT64_MAX;
        for (size_t i = 0; i < recs[t].n; i++) {
            uint64_t s = recs[t].buf[i], w = s / W;
            if (w < w_first || w % S != 0 || (w - w_first) / S >= nwin)
                continue;
            uint64_t pos = (w - w_first) / S * W + s % W;
            if (order[pos] != LB_EMPTY)
                out->duplicates++;
            else
                order[pos] = t;
        }
    }
    double sum = 0;
    out->min = UINT32_MAX;
    for (uint64_t k = 0; k < nwin; k++) {
        const uint32_t *win = order + k * W;
        unsigned distinct = 0;
        int complete = 1;
        for (uint64_t j = 0; j < W; j++) {
            if (win[j] == LB_EMPTY) {
                complete = 0;
                break;
            }
            if (stamp[win[j]] != k) {
                stamp[win[j]] = k;
                distinct++;
            }
        }
        if (!complete) {
            out->incomplete++;
            continue;
        }
        out->windows++;
        sum += distinct;
        if (distinct < out->min)
            out->min = distinct;
        if (distinct > out->max)
            out->max = distinct;
    }
    if (out->windows)
        out->mean = sum / (double)out->windows;
    else
        out->min = 0;
    free(order);
    free(stamp);
    return 0;
}
