/* impatient.c - the impatient waiter's path (impatient.h). */
#include "impatient.h"

uint32_t lt_impatient_enter(struct lt_impatient *p, struct lt_spin *s)
{
    /* relaxed: `waiting` only holds others back (impatient.h, "The bound"). */
    __atomic_fetch_add(&p->waiting, 1, __ATOMIC_RELAXED);
    uint32_t ticket = __atomic_fetch_add(&p->next, 1, __ATOMIC_RELAXED);
    /* acquire: pairs with the previous ticket holder's release of `turn` (not needed for the
     * word, which has its own acquire; it keeps the tickets' order plain to read). */
    while (__atomic_load_n(&p->turn, __ATOMIC_ACQUIRE) != ticket)
        lt_spin_poll(s, LT_WAIT_SPIN);
    return ticket;
}

void lt_impatient_take(struct lt_impatient *p, uint32_t *word, struct lt_spin *s)
{
    uint32_t ticket = lt_impatient_enter(p, s);
    for (;;) {
        uint32_t z = 0;
        /* acquire: the critical section starts after the CAS that took the word. */
        if (__atomic_load_n(word, __ATOMIC_RELAXED) == 0 &&
            __atomic_compare_exchange_n(word, &z, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
            break;
        lt_spin_poll(s, LT_WAIT_SPIN);
    }
    lt_impatient_leave(p, ticket);
}
