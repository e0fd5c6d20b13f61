/*
 * qnode.h - the queue node of the MCS family (mcs, clh, mcstp, mcscr).
 *
 * 128 bytes, 128-byte aligned: a waiter spins on its own node, and the adjacent-line prefetcher
 * of x86 pairs 64-byte lines, so a node shares no sector with another thread's node.
 * Which fields an algorithm uses is said in its file.
 */
#ifndef LT_QNODE_H
#define LT_QNODE_H

#include <stdint.h>

struct lt_qnode {
    struct lt_qnode *next; /* queue successor (atomic) */
    uint32_t state;        /* wait word (atomic): LT_WAITING, LT_PARKED, or an algorithm's */
    uint32_t _pad;
    uint64_t stamp; /* mcstp: when the waiter was last seen running, ns (atomic) */
    struct lt_qnode *ps_prev, *ps_next; /* mcscr passive set: touched by the lock holder only */
    struct lt_qnode *pool_next;         /* free-list link: touched by the owning thread only */
} __attribute__((aligned(128)));

/* A node from the calling thread's pool (allocated when the pool is empty; never fails: an
 * allocation failure aborts with a message, as a lock operation has no error to return). */
struct lt_qnode *lt_qnode_get(void);
/* Give a node back to the calling thread's pool. */
void lt_qnode_put(struct lt_qnode *n);

#endif
