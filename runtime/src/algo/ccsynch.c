/*
 * ccsynch - CC-Synch (Fatourou & Kallimanis; the RCL paper §2.3.3, Algorithm 1).
 *
 * A queue of nodes; a thread swaps a fresh node in as the new tail, and writes its request
 * into the node it got back - the previous tail - then links that node to its fresh one:
 *
 *   execute: nn = fresh node {next NULL, WAITING, not done}
 *            cur = XCHG(tail, nn)                         (acq_rel)
 *            cur->fn, cur->ctx = the request; cur->next = nn   (release: the request is in)
 *            wait while cur is WAITING; done: return its result (cur is our node from now on)
 *            else we are the combiner: run our request, then walk from nn: while the node has
 *            a next (its owner linked: the request is in), run it, mark it done and GO (a
 *            parked owner is woken).  Stop at a HOLD, at a node not linked yet, or past
 *            lt_combine_max sections at the first node whose waiter is awake (not PARKED;
 *            at lt_combine_hard whatever its state: combining.h); then hand on there.
 *   hand on at t:   GO without done - t's owner becomes the combiner (a request, or the owner
 *            is between its XCHG and its link) - or, if t is still the tail, CAS the tail to
 *            NULL: the lock is idle and t is ours.
 *
 *   node.state: WAITING --combiner ran it: done, then GO (release)--> GO (return the result)
 *                       --hand on (release)----------------------> GO, not done (combine)
 *               WAITING --waiter: budget spent (LT_WAIT_PARK)--> PARKED --GO by exchange and
 *                       FUTEX_WAKE (lt_combining_grant)--> GO, as above (handed on: past
 *                       lt_combine_hard only)
 *
 * One departure from Algorithm 1, which keeps a dummy node in an idle queue: here an idle
 * queue is a NULL tail (a zeroed lock is valid, and a lock owns no memory, so locks can be
 * freed without lt_mutex_destroy and 300,000 locks allocate nothing).  The thread whose XCHG
 * returns NULL has no node to write its request into: it is the combiner at once, runs its
 * own request, and walks from its fresh node.  The combiner that finds the queue drained CASes
 * the tail back to NULL and keeps the last node (the paper's line 26 sets its wait flag only):
 * one CAS per drained session.
 *
 * lock() queues a HOLD request; the combiner that reaches it hands on there, so its owner
 * holds the lock: unlock() combines from its fresh node, as a combiner would after running its
 * own request.  A condition wait's release and a step aside (combining.h) hand on at once.
 *
 * FIFO.  Nodes travel between threads (a thread keeps the node it got back), from the
 * per-thread pool of qnode.h.  The paper's design flaw: a thread preempted between its XCHG
 * and its link splits the queue, and the combiner hands on to it - with more threads than
 * CPUs throughput collapses (§2.3.4).  Waiting for the link instead (a moment, while the
 * linker may be running) measured slower on 2 CPUs, oversubscribed.  The role goes on only to
 * an awake waiter before the hard bound: once the queue is asleep, handing the role to a
 * parked waiter stopped the lock for a wake-up every lt_combine_max sections (issue 12).  A
 * parked waiter is served instead, and woken with its result.  (Deferring those wake-ups to
 * the end of the session measured faster, but a section that waits for a thread served
 * earlier in the session - outside any condition variable - would wait for ever.)
 * Waiting: the lock's policy (wait.h), spin-then-park by default, so that waiters give their
 * CPUs to the combiner; `ccsynch:spin` spins, then yields, and collapses oversubscribed (no
 * waiter parks, so the role goes on at lt_combine_max).  Every GO goes through
 * lt_combining_grant, which wakes a parked waiter.
 * lock() waits behind the admission gate (gate.h) under LT_WAIT_PARK: its HOLD request is a
 * strict FIFO hand-over, and without the gate lock()-only use collapsed as the FIFO locks did
 * (0.045 M acquisitions/s at 16 threads on 2 CPUs, glibc 9.5 M).  State: 32 bytes.
 */
#include "../algo.h"
#include "../gate.h"
#include "../qnode.h"
#include "combining.h"

#define CC_HOLD ((lt_cs_fn)(uintptr_t)1)

enum { CC_WAITING = LT_WAITING, CC_GO = LT_GRANTED };

struct cc_lock {
    struct lt_qnode *tail; /* atomic: NULL when idle */
    struct lt_qnode *hold; /* a lock() holder's fresh node: where its unlock combines from */
    struct lt_gate gate;   /* lock()'s waiters (gate.h) */
};
LT_STATE_FITS(struct cc_lock);

static int cc_unlock(lt_mutex_t *m);

static int cc_init(lt_mutex_t *m)
{
    (void)m;
    lt_combining_setup();
    return 0;
}

static int cc_destroy(lt_mutex_t *m)
{
    return __atomic_load_n(&LT_STATE(m, struct cc_lock)->tail, __ATOMIC_RELAXED) ? EBUSY : 0;
}

static inline struct lt_qnode *fresh_node(void)
{
    struct lt_qnode *n = lt_qnode_get();
    __atomic_store_n(&n->next, NULL, __ATOMIC_RELAXED);
    __atomic_store_n(&n->state, CC_WAITING, __ATOMIC_RELAXED);
    n->done = 0;
    return n;
}

/* The gate's test (gate.h): seq_cst, the passive waiter's half of its Dekker pair. */
static bool cc_free(lt_mutex_t *m)
{
    return __atomic_load_n(&LT_STATE(m, struct cc_lock)->tail, __ATOMIC_SEQ_CST) == NULL;
}

/* Hand the combiner role on at t (see the header). */
static void hand_on(lt_mutex_t *m, struct lt_qnode *t)
{
    struct cc_lock *l = LT_STATE(m, struct cc_lock);
    struct lt_qnode *expected = t;
    /* release: the next thread to swap the tail in sees our sections' writes; seq_cst: then
     * the gate's passive count is read (gate.h's Dekker pair; the same instruction on x86-64). */
    if (!__atomic_load_n(&t->next, __ATOMIC_ACQUIRE) &&
        __atomic_compare_exchange_n(&l->tail, &expected, NULL, 0, __ATOMIC_SEQ_CST,
                                    __ATOMIC_RELAXED)) {
        lt_qnode_put(t);
        lt_gate_idle(&l->gate, m, cc_free); /* the lock is idle */
        return;
    }
    lt_stat(lt_site(m), LT_STAT_HANDOVERS);
    /* release: the new combiner sees every section run so far. */
    lt_combining_grant(m, &t->state, CC_GO);
}

/* Combine from t (a node whose request, if linked, is not run yet), having run `ran` sections
 * in this session; ends the session by handing on.  The bound is soft (combining.h): past
 * lt_combine_max the session ends at the first node whose waiter is awake, so the role never
 * goes to a sleeping thread before lt_combine_hard. */
static void combine_from(lt_mutex_t *m, struct lt_serving *frame, struct lt_qnode *t, unsigned ran)
{
    for (;;) {
        /* acquire: the owner's request, written before its release link. */
        struct lt_qnode *next = __atomic_load_n(&t->next, __ATOMIC_ACQUIRE);
        if (!next || t->fn == CC_HOLD)
            break;
        if (ran >= lt_combine_max && (ran >= lt_combine_hard || lt_combining_awake(&t->state)))
            break;
        frame->pos = next;
        t->ctx = t->fn(t->ctx);
        ran++;
        lt_stat(lt_site(m), LT_STAT_ACQUIRED);
        lt_stat(lt_site(m), LT_STAT_DELEGATED);
        t->done = 1;
        /* release: the owner sees the section's writes and its result. */
        lt_combining_grant(m, &t->state, CC_GO);
        if (frame->stepped) { /* the role went on at `next`; we hold m by lock() */
            lt_serving_pop(frame);
            lt_combining_unlock_held(m, cc_unlock);
            return;
        }
        t = next;
    }
    lt_serving_pop(frame);
    hand_on(m, t);
}

/* We are the combiner: run our own request, then the queue from nn (our fresh node). */
static void *session(lt_mutex_t *m, lt_cs_fn fn, void *ctx, struct lt_qnode *nn)
{
    struct lt_serving frame;
    lt_serving_push(&frame, m);
    lt_stat(lt_site(m), LT_STAT_SESSIONS);
    frame.pos = nn;
    void *r = fn(ctx);
    lt_stat(lt_site(m), LT_STAT_ACQUIRED);
    if (frame.stepped) {
        lt_serving_pop(&frame);
        lt_combining_unlock_held(m, cc_unlock);
        return r;
    }
    combine_from(m, &frame, nn, 1);
    return r;
}

static __attribute__((noinline)) void *cc_wait(lt_mutex_t *m, lt_cs_fn fn, void *ctx,
                                               struct lt_qnode *cur, struct lt_qnode *nn)
{
    lt_stat(lt_site(m), LT_STAT_CONTENDED);
    /* acquire (lt_wait_word): pairs with the combiner's release of GO. */
    lt_wait_word(&cur->state, lt_wait_of(m), lt_site(m));
    if (cur->done) {
        void *r = cur->ctx;
        lt_qnode_put(cur); /* the combiner is done with it: our node now */
        return r;
    }
    lt_qnode_put(cur);
    return session(m, fn, ctx, nn);
}

static void *cc_execute(lt_mutex_t *m, lt_cs_fn fn, void *ctx, unsigned flags)
{
    if (flags & (LT_EXEC_ON_CALLER | LT_EXEC_MAY_WAIT))
        return lt_execute_on_caller(m, fn, ctx);
    if (__builtin_expect(lt_serving_top != NULL, 0) && lt_serving_find(m))
        lt_combining_relock(m);
    struct cc_lock *l = LT_STATE(m, struct cc_lock);
    struct lt_qnode *nn = fresh_node();
    /* acq_rel: release publishes nn's initialisation to whoever links to it or swaps it out;
     * acquire takes over the node we get back (and, when idle, the last session's writes). */
    struct lt_qnode *cur = __atomic_exchange_n(&l->tail, nn, __ATOMIC_ACQ_REL);
    if (!cur)
        return session(m, fn, ctx, nn);
    cur->fn = fn;
    cur->ctx = ctx;
    /* release: the combiner that sees the link sees the request. */
    __atomic_store_n(&cur->next, nn, __ATOMIC_RELEASE);
    return cc_wait(m, fn, ctx, cur, nn);
}

static __attribute__((noinline)) int cc_lock_slow(lt_mutex_t *m, struct lt_qnode *nn)
{
    struct cc_lock *l = LT_STATE(m, struct cc_lock);
    enum lt_wait_policy p = lt_wait_of(m);
    lt_contended(m);
    /* A HOLD request is a strict FIFO hand-over, so lock() waits behind the gate (gate.h);
     * execute()'s requests, run by the combiner, do not. */
    lt_gate_enter(&l->gate, m, p, cc_free);
    struct lt_qnode *cur = __atomic_exchange_n(&l->tail, nn, __ATOMIC_ACQ_REL); /* as above */
    if (cur) {
        cur->fn = CC_HOLD;
        cur->ctx = NULL;
        __atomic_store_n(&cur->next, nn, __ATOMIC_RELEASE);
        lt_wait_word(&cur->state, p, lt_site(m)); /* GO, not done: we hold it */
        lt_qnode_put(cur);
    }
    lt_gate_acquired(&l->gate, p);
    l->hold = nn;
    return lt_acquired(m);
}

static int cc_lock(lt_mutex_t *m)
{
    struct cc_lock *l = LT_STATE(m, struct cc_lock);
    struct lt_qnode *nn = fresh_node(), *none = NULL;
    /* A free lock is taken by CAS (acq_rel, as the XCHG above), so that a waiter passes the
     * gate before it queues. */
    if (__builtin_expect(!__atomic_compare_exchange_n(&l->tail, &none, nn, 0, __ATOMIC_ACQ_REL,
                                                      __ATOMIC_RELAXED),
                         0))
        return cc_lock_slow(m, nn);
    l->hold = nn;
    return lt_acquired(m);
}

static int cc_trylock(lt_mutex_t *m)
{
    struct cc_lock *l = LT_STATE(m, struct cc_lock);
    if (__atomic_load_n(&l->tail, __ATOMIC_RELAXED))
        return EBUSY;
    struct lt_qnode *nn = fresh_node(), *none = NULL;
    /* acq_rel as in cc_execute. */
    if (!__atomic_compare_exchange_n(&l->tail, &none, nn, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
        lt_qnode_put(nn);
        return EBUSY;
    }
    l->hold = nn;
    return lt_acquired(m);
}

static int cc_timedlock(lt_mutex_t *m, const struct timespec *abstime)
{
    return lt_timedlock_handoff(m, cc_trylock, abstime);
}

static int cc_unlock(lt_mutex_t *m)
{
    struct lt_serving *s = lt_stepping(m);
    if (__builtin_expect(s != NULL, 0)) { /* a combined section's condition wait */
        hand_on(m, s->pos);
        return 0;
    }
    struct cc_lock *l = LT_STATE(m, struct cc_lock);
    struct lt_qnode *h = l->hold;
    l->hold = NULL;
    if (lt_quiet_release()) { /* a condition wait's release: run nothing */
        hand_on(m, h);
        return 0;
    }
    struct lt_serving frame;
    lt_serving_push(&frame, m);
    combine_from(m, &frame, h, 0);
    return 0;
}

/* fork (mutex.c): the requests queued after a lock() holder's fresh node (l->hold) are lost
 * threads', and so is a combining session; the holder's node becomes the tail again (a lost
 * thread may have written a request into it: the next one to swap the tail in overwrites it),
 * or the queue goes. */
static void cc_fork_child(lt_mutex_t *m, int held)
{
    struct cc_lock *l = LT_STATE(m, struct cc_lock);
    struct lt_qnode *h = held ? l->hold : NULL;
    if (h)
        __atomic_store_n(&h->next, NULL, __ATOMIC_RELAXED);
    l->hold = h;
    __atomic_store_n(&l->tail, h, __ATOMIC_RELAXED);
    lt_gate_fork_child(&l->gate);
}

const struct lt_algo lt_algo_ccsynch = {
    .name = "ccsynch",
    .caps = LT_CAP_BLOCKING | LT_CAP_DELEGATES | LT_CAP_SUPPORTS_COND | LT_CAP_FIFO,
    .counts = LT_STAT_BIT(LT_STAT_PARKED) | LT_STAT_BIT(LT_STAT_HANDOVERS) |
              LT_STAT_BIT(LT_STAT_DELEGATED) | LT_STAT_BIT(LT_STAT_SESSIONS) |
              LT_STAT_BIT(LT_STAT_STEPPED_ASIDE) | LT_STAT_BIT(LT_STAT_ON_CALLER) |
              LT_STAT_BIT(LT_STAT_GATED) | LT_STAT_BIT(LT_STAT_GATE_TURNS),
    .size = sizeof(struct cc_lock),
    .wait = "on the node it queued, by the lock's policy (default spin-then-park)",
    .waits = LT_WAIT_BIT(LT_WAIT_SPIN) | LT_WAIT_BIT(LT_WAIT_PARK) | LT_WAIT_BIT(LT_WAIT_YIELD),
    .wait_default = LT_WAIT_PARK,
    .init = cc_init,
    .destroy = cc_destroy,
    .lock = cc_lock,
    .trylock = cc_trylock,
    .timedlock = cc_timedlock,
    .unlock = cc_unlock,
    .fork_child = cc_fork_child,
    .execute = cc_execute,
    .cond_wait = lt_combining_cond_wait,
};
