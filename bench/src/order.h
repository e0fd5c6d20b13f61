/*
 * order.h - the admission order, sampled without touching the lock: how many distinct threads
 * acquire the lock per window of W acquisitions (the Malthusian paper's "lock working set
 * size", LWSS; W = 1000 there).
 *
 * Every acquisition gets its rank `seq` from the head line it already touches (cs.h).  Each
 * thread notes, in a buffer of its own, the ranks it obtained that fall into *sampled windows*;
 * after the run the buffers are merged back into the order.  Nothing is written to shared
 * memory on the way, so the lock sees no extra traffic.
 *
 *   window w = ranks [w*W, (w+1)*W)      sampled  <=>  w % stride == 0
 *
 * The stride is a power of two shared by all threads and only grows: a thread whose buffer
 * fills doubles it (or adopts the larger one another thread set) and drops from its buffer the
 * windows that are no longer sampled.  Windows sampled under the final stride were therefore
 * sampled under every smaller one, by every thread: they are complete, whatever the run's length,
 * in bounded memory, spread evenly over the run.
 */
#ifndef LB_ORDER_H
#define LB_ORDER_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

struct lb_order {
    uint64_t window;            /* W */
    _Atomic uint64_t stride;    /* sampled windows: index % stride == 0; a power of two */
    _Atomic uint64_t lost_from; /* lowest rank some thread failed to note (UINT64_MAX) */
};

/* One thread's notebook. */
struct lb_order_rec {
    struct lb_order *o;
    uint64_t *buf;
    size_t n, cap;
    uint64_t lo, hi; /* the sampled window being noted: [lo, hi) */
    uint64_t stride; /* the stride this thread last read */
};

void lb_order_init(struct lb_order *o, uint64_t window);
/* 0, or -1 when the buffer cannot be allocated. */
int lb_order_rec_init(struct lb_order_rec *r, struct lb_order *o, size_t cap);
void lb_order_rec_destroy(struct lb_order_rec *r);

void lb_order_advance(struct lb_order_rec *r, uint64_t s); /* out of line: rare */
void lb_order_full(struct lb_order_rec *r, uint64_t s);    /* out of line: rare */

/* Note acquisition rank s.  Ranks noted by one thread must increase. */
static inline void lb_order_note(struct lb_order_rec *r, uint64_t s)
{
    if (s >= r->hi)
        lb_order_advance(r, s);
    if (s >= r->lo) {
        if (r->n < r->cap)
            r->buf[r->n++] = s;
        else
            lb_order_full(r, s);
    }
}

struct lb_lwss {
    uint64_t windows; /* complete windows analysed */
    double mean;      /* distinct threads per window, averaged */
    unsigned min, max;
    uint64_t duplicates; /* ranks noted twice (the lock let two threads in) */
    uint64_t incomplete; /* sampled windows with ranks nobody noted */
    uint64_t stride;     /* final stride */
};

/* Distinct threads per window over the complete sampled windows inside ranks [from, to).
 * recs[i] is thread i's notebook.  0, or -1 when out of memory. */
int lb_order_analyse(struct lb_order *o, struct lb_order_rec *recs, unsigned nthreads,
                     uint64_t from, uint64_t to, struct lb_lwss *out);

#endif
