/*
 * impatient.h - bounded bypass for a test-and-set word (spin, fc).
 *
 * Why.  A test-and-set lock lets whoever finds the word free take it.  A thread that releases
 * and takes the lock again at once therefore wins against a waiter almost every time, and on
 * a loaded CPU the waiter may get the lock only when a re-taker happens to be preempted
 * between its release and its next take: in test_bypass (4 re-takers, 4 waiters on one CPU)
 * a waiter of `spin` got 3 acquisitions in 2.5 s, one of `fc` 1, with waits of 1.8-2.5 s.
 * ShflLock bounds the same stealing with an impatient queue head (shfl_core.h); this does it
 * for a bare word (spin, fc, and oyama's FREE/LOCKED/stack word), with a ticket queue that
 * exists only while someone is impatient:
 *
 *   waiting  waiters past their patience (LT_IMPATIENT_NS since they arrived); while it is
 *            non-zero, nobody else takes the word (the fast paths, trylock and the patient
 *            waiters test it first: lt_impatient_quiet)
 *   next     the next ticket an impatient waiter draws
 *   turn     the ticket whose holder may take the word now
 *
 *   impatient waiter:  waiting += 1; t = next++; wait until turn == t; take the word when it
 *                      is free (CAS 0 -> 1, acquire); turn = t + 1 (release); waiting -= 1
 *
 * The bound.  Once a waiter is impatient, the word goes to the impatient waiters in ticket
 * order; each other thread takes it at most once more (one that tested `waiting` just before
 * the increment, then won the CAS).  A waiter waits at most its patience, plus one hold per
 * thread that raced in so, plus the holds of the impatient waiters ahead of it.  Nothing here
 * is needed for mutual exclusion - the word does that - so `waiting` is read and changed
 * relaxed: a late view of it costs one more steal, never a second holder.
 *
 * fork: the tickets of waiters the child lost would never be served, and `waiting` would hold
 * everybody back for ever; lt_impatient_fork_child forgets them (the forking thread was not
 * waiting).  State: 12 bytes.
 */
#ifndef LT_IMPATIENT_H
#define LT_IMPATIENT_H

#include <stdbool.h>
#include <stdint.h>

#include "wait.h"

/* How long a waiter waits for the word before it draws a ticket. */
#define LT_IMPATIENT_NS 10000000u

struct lt_impatient {
    uint32_t waiting; /* atomic (relaxed) */
    uint32_t next;    /* atomic */
    uint32_t turn;    /* atomic */
};

/* Nobody is impatient: the word may be taken. */
static inline bool lt_impatient_quiet(const struct lt_impatient *p)
{
    return __atomic_load_n(&p->waiting, __ATOMIC_RELAXED) == 0;
}

/* A waiter that arrived at `since` (lt_now_ns) has waited past its patience. */
static inline bool lt_impatient_due(uint64_t since)
{
    return lt_now_ns() - since >= LT_IMPATIENT_NS;
}

/* Become an impatient waiter: draw a ticket and wait for its turn (s: the caller's busy-wait,
 * polled under LT_WAIT_SPIN: spin, then yield).  The caller then takes its word as soon as it
 * is free, and calls lt_impatient_leave. */
uint32_t lt_impatient_enter(struct lt_impatient *p, struct lt_spin *s);

/* The word is ours: the next ticket's turn. */
static inline void lt_impatient_leave(struct lt_impatient *p, uint32_t ticket)
{
    __atomic_store_n(&p->turn, ticket + 1, __ATOMIC_RELEASE);
    __atomic_fetch_sub(&p->waiting, 1, __ATOMIC_RELAXED);
}

/* Both, around taking *word (0 free, 1 held: CAS 0 -> 1, acquire). */
void lt_impatient_take(struct lt_impatient *p, uint32_t *word, struct lt_spin *s);

/* In a forked child: no waiter is left. */
static inline void lt_impatient_fork_child(struct lt_impatient *p)
{
    __atomic_store_n(&p->waiting, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&p->next, __atomic_load_n(&p->turn, __ATOMIC_RELAXED), __ATOMIC_RELAXED);
}

#endif
