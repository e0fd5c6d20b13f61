/*
 * ticket.h - a bare ticket lock, compiled into the benchmark: the reference an algorithm's
 * uncontended cost is compared with (no locktune dispatch, no waiting policy, no statistics).
 *
 *   next   the next ticket to hand out            owner  the ticket allowed in
 *
 *   lock:    t = next++  (fetch-and-add)  ──▶  spin while owner != t  ──▶  holder
 *   unlock:  owner = owner + 1  (only the holder writes owner)
 *
 *   free        next == owner
 *   held        next == owner + 1
 *   contended   next >  owner + 1   (next - owner - 1 waiters, served in ticket order)
 *
 * Spin-only and FIFO: under oversubscription it hands the lock to preempted waiters and
 * collapses (notes: 300-5,500x below glibc at 8-32 threads on 2 vCPUs).  That is expected.
 */
#ifndef LB_TICKET_H
#define LB_TICKET_H

#include <stdatomic.h>
#include <stdint.h>

#include "tsc.h"

struct lb_ticket {
    _Atomic uint32_t next;
    _Atomic uint32_t owner;
};

static inline void lb_ticket_lock(struct lb_ticket *l)
{
    /* relaxed: taking a ticket orders nothing; the acquire load of owner below does. */
    uint32_t t = atomic_fetch_add_explicit(&l->next, 1, memory_order_relaxed);
    /* acquire: pairs with the release in unlock, so the previous holder's writes to the
     * protected data are visible once our turn comes. */
    while (atomic_load_explicit(&l->owner, memory_order_acquire) != t)
        lb_relax();
}

static inline void lb_ticket_unlock(struct lb_ticket *l)
{
    /* Only the holder writes owner, so a relaxed read of it is exact; release publishes the
     * critical section's writes to the next holder. */
    uint32_t o = atomic_load_explicit(&l->owner, memory_order_relaxed);
    atomic_store_explicit(&l->owner, o + 1, memory_order_release);
}

#endif
