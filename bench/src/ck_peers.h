/*
 * ck_peers.h - Concurrency Kit's MCS, CLH and ticket spinlocks (Debian's libck-dev), the
 * peers our own versions are compared with (`locktune bench locks --sweep peers`).  Only
 * CK's inline functions are called: nothing of CK is copied here.
 *
 *   ck-mcs     ck_spinlock_mcs_lock(&tail, &node) / _unlock(&tail, &node): a node per thread
 *   ck-clh     ck_spinlock_clh_lock(&tail, node) / _unlock(&node): the thread's node pointer
 *              is swapped for its predecessor's on unlock (CLH's node recycling)
 *   ck-ticket  ck_spinlock_ticket_lock / _unlock
 *
 * All three spin (no parking), as their namesakes here do in their spin forms.  Built only
 * when CMake finds the headers (LB_HAVE_CK); otherwise --lock ck-* exits 2 saying so.
 */
#ifndef LB_CK_PEERS_H
#define LB_CK_PEERS_H

#ifdef LB_HAVE_CK
#include <ck_spinlock.h>

struct lb_ck_node {
    _Alignas(128) struct ck_spinlock_mcs mcs;
    struct ck_spinlock_clh *clh; /* this thread's CLH node (changes at each unlock) */
};

struct lb_ck_locks {
    _Alignas(128) struct ck_spinlock_mcs *mcs;
    _Alignas(128) struct ck_spinlock_clh *clh;
    _Alignas(128) struct ck_spinlock_ticket ticket;
};

/* The locks, and one CLH node per thread plus the lock's first ("unowned") node; each node on
 * a 128-byte pair of lines of its own. */
static inline int lb_ck_init(struct lb_ck_locks *l, struct lb_ck_node *nodes, unsigned n)
{
    void *p = NULL;
    if (posix_memalign(&p, 128, (size_t)(n + 1) * 128) != 0)
        return -1;
    char *mem = p;
    ck_spinlock_mcs_init(&l->mcs);
    ck_spinlock_clh_init(&l->clh, (struct ck_spinlock_clh *)(void *)mem);
    ck_spinlock_ticket_init(&l->ticket);
    for (unsigned i = 0; i < n; i++)
        nodes[i].clh = (struct ck_spinlock_clh *)(void *)(mem + (size_t)(i + 1) * 128);
    return 0;
}
#endif

#endif
