/*
 * cs.h - the critical section: the RCL paper's microbenchmark (digest-rcl.md §7.2).
 *
 * K shared cache lines, non-contiguous and visited in a shuffled order, each read-modified-
 * written once per section; the address of each next line is read from the line before it
 * (a pointer chase), so the accesses are dependent and a prefetcher cannot run ahead.
 *
 *     slot:   0        1        2        3        4      (LB_SLOT = 256 bytes apart:
 *           [line]   [line]   [line]   [line]   [line]   beyond the adjacent-line
 *              └──next──────────────▶ │  ◀─next─┘        prefetcher's 128-byte pairs)
 *                          ◀──next────┘
 *           head = the first line of the chain; the last line's next is the head again.
 *
 * The head line also carries the section's bookkeeping, so it costs no extra line transfer:
 *   seq            acquisitions so far: the admission order (the acquirer reads it)
 *   release_tsc    when the previous holder released, written only before a sampled handover
 *   release_owner  who that holder was
 * K = 0 is the smallest possible section: seq + 1 on the head line, nothing else.
 *
 * Every field is plain (not atomic): the lock under test is what protects it.  That is the
 * point: if the lock fails, `value` loses updates and lb_shared_check() says so.
 */
#ifndef LB_CS_H
#define LB_CS_H

#include <stddef.h>
#include <stdint.h>

#include "tsc.h"

#define LB_LINE_BYTES 64
#define LB_SLOT_BYTES 256
#define LB_MAX_LINES  1024
#define LB_NO_OWNER   UINT32_MAX

struct lb_line {
    uint64_t value;         /* incremented by every section that visits the line */
    uint64_t seq;           /* head only: acquisitions so far */
    uint64_t release_tsc;   /* head only: TSC at the last sampled release */
    uint32_t next;          /* slot index of the next line of the chain */
    uint32_t release_owner; /* head only: thread that wrote release_tsc */
} __attribute__((aligned(LB_LINE_BYTES)));

struct lb_shared {
    unsigned char *region; /* nslots * LB_SLOT_BYTES, page-aligned */
    uint32_t head;         /* slot of the head line */
    unsigned lines;        /* K */
    unsigned nslots;
};

/* One thread's view of a section: its inputs and what the section reports back. */
struct lb_cs_ctx {
    struct lb_shared *sh;
    uint32_t tid;
    uint64_t sample_mask; /* handover sampled at acquisitions with (seq & mask) == 0 */
    /* out */
    uint64_t seq;           /* this acquisition's rank in the admission order */
    uint64_t entry_tsc;     /* sampled acquisitions only: TSC on entry */
    uint64_t release_tsc;   /* ...and the previous holder's release stamp */
    uint32_t release_owner; /* ...and who that was (LB_NO_OWNER before the first) */
};

static inline struct lb_line *lb_slot(const struct lb_shared *sh, uint32_t i)
{
    return (struct lb_line *)(void *)(sh->region + (size_t)i * LB_SLOT_BYTES);
}

/* The section itself; inlined between lock and unlock, and called through lb_cs() by
 * lt_execute.  Must run under the lock. */
static inline __attribute__((always_inline)) void lb_cs_run(struct lb_cs_ctx *c)
{
    const struct lb_shared *sh = c->sh;
    struct lb_line *h = lb_slot(sh, sh->head);
    uint64_t s = h->seq;
    if ((s & c->sample_mask) == 0) {
        c->entry_tsc = lb_tsc_ordered();
        c->release_tsc = h->release_tsc;
        c->release_owner = h->release_owner;
    }
    h->seq = s + 1;
    struct lb_line *l = h;
    for (unsigned k = 0; k < sh->lines; k++) {
        l->value++;
        l = lb_slot(sh, l->next); /* dependent: the next address comes from this line */
    }
    if (((s + 1) & c->sample_mask) == 0) { /* the next acquisition is sampled */
        h->release_owner = c->tid;
        h->release_tsc = lb_tsc();
    }
    c->seq = s;
}

/* lt_cs_fn-shaped entry for lt_execute: runs the section on whichever thread executes it. */
void *lb_cs(void *ctx);

/* Lay out K lines in shuffled slots (deterministic for a seed).  0 or -1 (out of memory). */
int lb_shared_init(struct lb_shared *sh, unsigned lines, uint64_t seed);
void lb_shared_destroy(struct lb_shared *sh);

/* After the run: the head's seq and every line's value must equal `total` acquisitions.
 * Returns 0, or -1 with *line (the chain position, 0 = head) and *value of the first line
 * that disagrees (*line = -1 when seq itself is off). */
int lb_shared_check(const struct lb_shared *sh, uint64_t total, int *line, uint64_t *value);

#endif
