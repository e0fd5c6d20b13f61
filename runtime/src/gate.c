/*
 * gate.c - the passive side of the admission gate (gate.h has the protocol).
 */
#include "gate.h"

#include "futex.h"
#include "stats.h"

static unsigned gate_limit;                  /* atomic, relaxed: 0 until first computed */
static uint64_t gate_turn = LT_GATE_TURN_NS; /* set before any lock is used (config.c) */

void lt_gate_set_turn(uint64_t ns)
{
    gate_turn = ns;
}

unsigned lt_gate_limit(void)
{
    unsigned n = __atomic_load_n(&gate_limit, __ATOMIC_RELAXED);
    if (__builtin_expect(n == 0, 0)) {
        unsigned cpus = lt_wait_cpus();
        n = cpus > 1 ? cpus - 1 : 1;
        __atomic_store_n(&gate_limit, n, __ATOMIC_RELAXED);
    }
    return n;
}

void lt_gate_wake(struct lt_gate *g, lt_mutex_t *m, bool (*lock_free)(lt_mutex_t *m))
{
    (void)m;
    (void)lock_free;
    /* One wake-up in flight at a time: with threads outnumbering CPUs the lock goes idle for a
     * moment at many releases (an active thread is about to take it again), and a FUTEX_WAKE at
     * each, for a waiter that then finds the gate full and sleeps again, cost 60% of the CPU
     * time at 16 threads on 2 CPUs.  The waiter woken clears `waking` before it looks at the
     * lock again (lt_gate_wait), so an idle release after that look wakes again; a wake that
     * found nobody asleep clears it here.  seq_cst: ordered after the release's seq_cst and
     * before the seq bump. */
    uint32_t idle = 0;
    if (!__atomic_compare_exchange_n(&g->waking, &idle, 1, 0, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
        return;
    /* release: nothing is published through seq; the woken waiter re-reads the lock itself.
     * The RMW changes the word a waiter may be about to sleep on: the kernel then refuses the
     * sleep (no lost wake-up). */
    __atomic_fetch_add(&g->seq, 1, __ATOMIC_RELEASE);
    if (lt_futex_wake_count(&g->seq, 1) == 0)
        __atomic_store_n(&g->waking, 0, __ATOMIC_SEQ_CST);
}

static struct timespec ns_to_ts(uint64_t ns)
{
    struct timespec ts = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};
    return ts;
}

void lt_gate_wait(struct lt_gate *g, lt_mutex_t *m, bool (*lock_free)(lt_mutex_t *m))
{
    int site = m->_site;
    /* Undo the count that found the gate full. */
    __atomic_fetch_sub(&g->admitted, 1, __ATOMIC_RELAXED);
    lt_stat(site, LT_STAT_GATED);
    uint64_t start = lt_now_ns(), patience = 0;
    for (;;) {
        /* acquire: pairs with the waker's RMW (orders nothing we rely on; the lock is re-read). */
        uint32_t seen = __atomic_load_n(&g->seq, __ATOMIC_ACQUIRE);
        /* seq_cst: the waiter's half of the Dekker pair (gate.h). */
        uint32_t np = __atomic_add_fetch(&g->passive, 1, __ATOMIC_SEQ_CST);
        if (patience == 0) {
            patience = (np < LT_GATE_PATIENCE_MAX ? np : LT_GATE_PATIENCE_MAX) * gate_turn;
        }
        /* Through, over the limit if need be, when the lock is free (nobody is about to
         * circulate it) or the patience has run out (long-term fairness). */
        bool go = lock_free(m), out_of_patience = false;
        if (!go && __atomic_load_n(&g->admitted, __ATOMIC_RELAXED) >= lt_gate_limit()) {
            uint64_t waited = lt_now_ns() - start;
            if (waited < patience) {
                struct timespec until = ns_to_ts(start + patience);
                lt_futex_wait(&g->seq, seen, &until, CLOCK_MONOTONIC);
                waited = lt_now_ns() - start;
            }
            out_of_patience = waited >= patience;
        }
        __atomic_fetch_sub(&g->passive, 1, __ATOMIC_RELAXED);
        /* The wake-up in flight, if it was for us (seq moved since we sampled it): done. */
        if (__atomic_load_n(&g->seq, __ATOMIC_RELAXED) != seen)
            __atomic_store_n(&g->waking, 0, __ATOMIC_SEQ_CST);
        uint32_t a = __atomic_fetch_add(&g->admitted, 1, __ATOMIC_RELAXED);
        if (a < lt_gate_limit() || go)
            return;
        if (out_of_patience) {
            lt_stat(site, LT_STAT_GATE_TURNS);
            return;
        }
        __atomic_fetch_sub(&g->admitted, 1, __ATOMIC_RELAXED);
    }
}
