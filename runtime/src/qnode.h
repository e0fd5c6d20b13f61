/*
 * qnode.h - the queue node of the MCS family (mcs, clh, mcstp, mcscr) and of the combining
 * queues (ccsynch, dsmsynch).
 *
 * 128 bytes, 128-byte aligned: a waiter spins on its own node, and the adjacent-line prefetcher
 * of x86 pairs 64-byte lines, so a node shares no sector with another thread's node.
 * Which fields an algorithm uses is said in its file.
 */
#ifndef LT_QNODE_H
#define LT_QNODE_H

#include <stdint.h>

#include "thread.h"

struct lt_qnode {
    struct lt_qnode *next; /* queue successor (atomic) */
    uint32_t state;        /* wait word (atomic): LT_WAITING, LT_PARKED, or an algorithm's */
    uint32_t done;         /* ccsynch, dsmsynch: the request was run (the paper's `completed`) */
    uint64_t stamp;        /* mcstp: when the waiter was last seen running, ns (atomic) */
    struct lt_qnode *ps_prev, *ps_next; /* mcscr passive set: touched by the lock holder only */
    struct lt_qnode *pool_next;         /* free-list link: touched by the owning thread only */
    void *(*fn)(void *);                /* ccsynch, dsmsynch: the request (a section), or HOLD */
    void *ctx;                          /* ... its context in, its result out */
} __attribute__((aligned(128)));

/* Largest number of free nodes a thread keeps; more go back to malloc. */
#define LT_QNODE_POOL_MAX 16

struct lt_qnode *lt_qnode_alloc(void);
void lt_qnode_release(struct lt_qnode *n);

/* A node from the calling thread's pool (allocated when the pool is empty; never fails: an
 * allocation failure aborts with a message, as a lock operation has no error to return). */
static inline struct lt_qnode *lt_qnode_get(void)
{
    struct lt_thread *t = &lt_thread_self;
    struct lt_qnode *n = t->free;
    if (__builtin_expect(n == NULL, 0))
        return lt_qnode_alloc();
    t->free = n->pool_next;
    t->nfree--;
    return n;
}

/* Give a node back to the calling thread's pool. */
static inline void lt_qnode_put(struct lt_qnode *n)
{
    struct lt_thread *t = &lt_thread_self;
    if (__builtin_expect(t->nfree >= LT_QNODE_POOL_MAX || !t->registered || t->exiting, 0)) {
        lt_qnode_release(n);
        return;
    }
    n->pool_next = t->free;
    t->free = n;
    t->nfree++;
}

#endif
