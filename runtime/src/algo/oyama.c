/*
 * oyama - the combining lock of Oyama, Taura & Yonezawa (the RCL paper §2.3.1).
 *
 * One word is the lock: FREE, LOCKED (held, nothing waiting), or a pointer to a LIFO stack of
 * requests (held, and these wait for its holder to run them).  A request is a node on its
 * owner's stack: the section, its context (then its result), and a state word.
 *
 *   word:  FREE --CAS (acquire)--> LOCKED --push: CAS--> &top -> ... --push--> &top' -> ...
 *            ^                        |  ^                               |
 *            +--release: CAS (rel.)---+  +--release: XCHG(word, LOCKED), run the stack--+
 *
 *   execute: CAS FREE -> LOCKED: run our own section, then release.  Else push our request
 *            and wait until the holder has run it (DONE), or hands us the lock (HANDED).
 *   release: CAS LOCKED -> FREE.  Failing that, detach the stack and run its requests in
 *            stack order (we are the combiner), then try again.
 *   lock:    CAS FREE -> LOCKED, retried (spin, then yield) for the spin budget plus
 *            O_PATIENCE_NS; then push a HOLD request (no section) and wait until a holder
 *            reaches it and hands it the lock, with the rest of its batch.  Competing first
 *            keeps lock()/unlock() from handing the lock to descheduled waiters, and so does
 *            this: a holder hands the lock to a HOLD only while its owner still spins; one
 *            that has begun to yield is told to RETRY (compete again, queue again).  Queueing
 *            keeps a stream of lt_execute requests from starving lock().
 *   unlock:  run the batch handed on with the lock, then release.  The release of a condition
 *            wait runs nothing: it hands the lock on to the batch's first request, or to the
 *            stack's top, or frees it.
 *
 *   node.state: WAITING --holder ran the section (release)--> DONE
 *                       --holder handed the lock on, with a batch (release)--> HANDED
 *                       --holder passed a HOLD whose owner yields (release)--> RETRY
 *
 * A HANDED request's owner holds the lock: it runs its own section, then the batch, then
 * releases.  A combined section that waits on a condition variable steps aside
 * (combining.h): the lock is handed on to the next request of the batch, or released.
 *
 * Unfair (LIFO: a request can be overtaken by every later one, the paper says it can starve),
 * and a releaser keeps combining while requests keep arriving, as in the paper.  A lock()
 * caller's bypass is bounded (impatient.h): one that has waited LT_IMPATIENT_NS (10 ms) draws
 * a ticket; while anyone holds one, nobody takes the free word or pushes a request or a HOLD
 * (they wait for quiet), so the stack drains, the word comes free, and the ticket holders take
 * it in order.  Before, a lock() caller whose HOLD was passed over each time (its owner had
 * begun to yield) could wait past 1 s on a loaded machine (runtime.fair.oyama in CI).
 * Every thread CASes the one word, which is on the critical path.  Waiting: spin, then yield
 * (LT_WAIT_SPIN).  A descheduled waiter never stalls the lock (the holder runs its request),
 * so it holds up when threads outnumber CPUs; a descheduled holder stalls everyone.
 * State: 32 bytes; requests live on their owners' stacks.
 */
#include "../algo.h"
#include "../impatient.h"
#include "combining.h"

enum { O_FREE = 0, O_LOCKED = 1 };
/* How long lock() competes for the free word (after the spin budget) before it queues. */
#define O_PATIENCE_NS 1000000u
enum { O_WAITING = 0, O_DONE = 1, O_HANDED = 2, O_RETRY = 3 };

struct oyama_node {
    struct oyama_node *next;  /* stack link: written before the push, then read-only */
    lt_cs_fn fn;              /* the section; NULL: a HOLD request (lock()) */
    void *ctx;                /* the context in, the section's result out */
    struct oyama_node *batch; /* HANDED: the requests handed on with the lock */
    uint32_t state;           /* atomic: O_* */
    uint32_t spinning;        /* atomic: a HOLD's owner still spins (not yet yielding) */
} __attribute__((aligned(64)));

struct oyama_lock {
    uintptr_t word;           /* atomic: O_FREE, O_LOCKED or the stack's top */
    struct oyama_node *batch; /* a lock() holder's handed-on batch, run by its unlock */
    struct lt_impatient imp;
};
LT_STATE_FITS(struct oyama_lock);

static int oyama_unlock(lt_mutex_t *m);

static int oyama_init(lt_mutex_t *m)
{
    (void)m;
    lt_combining_setup();
    return 0;
}

static int oyama_destroy(lt_mutex_t *m)
{
    return __atomic_load_n(&LT_STATE(m, struct oyama_lock)->word, __ATOMIC_RELAXED) != O_FREE
               ? EBUSY
               : 0;
}

/* The free word, taken: FREE -> LOCKED. */
static inline bool take_free(struct oyama_lock *l)
{
    uintptr_t w = O_FREE;
    /* acquire: the section starts after the release that freed the word. */
    return __atomic_load_n(&l->word, __ATOMIC_RELAXED) == O_FREE &&
           __atomic_compare_exchange_n(&l->word, &w, O_LOCKED, 0, __ATOMIC_ACQUIRE,
                                       __ATOMIC_RELAXED);
}

/* ... unless an impatient lock() caller waits for it. */
static inline bool take(struct oyama_lock *l)
{
    return lt_impatient_quiet(&l->imp) && take_free(l);
}

/* Before a push: wait while an impatient lock() caller waits for the word. */
static void wait_quiet(struct oyama_lock *l)
{
    struct lt_spin s = LT_SPIN_INIT;
    while (!lt_impatient_quiet(&l->imp))
        lt_combining_poll(&s);
}

/* Push n onto the stack - or take the lock if it turns out free (returns true). */
static bool push_or_take(struct oyama_lock *l, struct oyama_node *n)
{
    uintptr_t w = __atomic_load_n(&l->word, __ATOMIC_RELAXED);
    for (;;) {
        if (w == O_FREE) {
            if (__atomic_compare_exchange_n(&l->word, &w, O_LOCKED, 0, __ATOMIC_ACQUIRE,
                                            __ATOMIC_RELAXED))
                return true;
            continue;
        }
        n->next = w == O_LOCKED ? NULL : (struct oyama_node *)w;
        /* release: the holder that detaches the stack sees the node's fields. */
        if (__atomic_compare_exchange_n(&l->word, &w, (uintptr_t)n, 0, __ATOMIC_RELEASE,
                                        __ATOMIC_RELAXED))
            return false;
    }
}

static uint32_t wait_node(struct oyama_node *n)
{
    struct lt_spin s = LT_SPIN_INIT;
    uint32_t v;
    /* acquire: pairs with the holder's release store (the section's writes, or the lock). */
    while ((v = __atomic_load_n(&n->state, __ATOMIC_ACQUIRE)) == O_WAITING)
        lt_combining_poll(&s);
    return v;
}

/* Whether the lock may be handed to n: a section's request always (its owner waits for it
 * anyway), a HOLD only while its owner still spins - one that yields is probably not running,
 * and handing it the lock would make everyone wait for the scheduler. */
static inline bool takes_lock(const struct oyama_node *n)
{
    return n->fn || __atomic_load_n(&n->spinning, __ATOMIC_RELAXED);
}

/* A HOLD passed over: its owner competes for the word again. */
static inline void retry(lt_mutex_t *m, struct oyama_node *n)
{
    lt_stat(lt_site(m), LT_STAT_SKIPPED);
    __atomic_store_n(&n->state, O_RETRY, __ATOMIC_RELEASE);
}

/* Hand the lock, which the caller holds, to the owner of n, with the requests `rest`. */
static void hand_on(lt_mutex_t *m, struct oyama_node *n, struct oyama_node *rest)
{
    if (n->fn)
        n->batch = rest; /* its owner runs its own section, then these */
    else
        LT_STATE(m, struct oyama_lock)->batch = rest; /* a lock() holder: run at unlock */
    lt_stat(lt_site(m), LT_STAT_HANDOVERS);
    /* release: the new holder sees our sections' writes, and the batch. */
    __atomic_store_n(&n->state, O_HANDED, __ATOMIC_RELEASE);
}

/* Release without running anything (a step aside, a condition wait's release): hand the lock
 * to the first of `list` that takes it, else free the word - or, if requests were pushed
 * meanwhile, hand it to one of those. */
static void release_quietly(lt_mutex_t *m, struct oyama_node *list)
{
    struct oyama_lock *l = LT_STATE(m, struct oyama_lock);
    for (;;) {
        while (list) {
            struct oyama_node *n = list;
            list = n->next; /* read before we let go of n */
            if (takes_lock(n)) {
                hand_on(m, n, list);
                return;
            }
            retry(m, n);
        }
        uintptr_t w = O_LOCKED;
        /* release: the next holder sees our sections' writes. */
        if (__atomic_compare_exchange_n(&l->word, &w, O_FREE, 0, __ATOMIC_RELEASE,
                                        __ATOMIC_RELAXED))
            return;
        /* acquire: the pushed nodes' fields. */
        list = (struct oyama_node *)__atomic_exchange_n(&l->word, O_LOCKED, __ATOMIC_ACQUIRE);
    }
}

/* Run `list`, a detached stack, in stack order, holding m.  Returns true when the lock was
 * handed on (to a HOLD request, or by a section that stepped aside): the caller's session is
 * over and it must not release. */
static bool combine(lt_mutex_t *m, struct oyama_node *list)
{
    if (!list)
        return false;
    struct lt_serving frame;
    lt_serving_push(&frame, m);
    bool handed = false;
    while (list) {
        struct oyama_node *n = list;
        list = n->next; /* read before DONE: the node dies with its owner's frame */
        if (!n->fn) {
            if (!takes_lock(n)) {
                retry(m, n);
                continue;
            }
            hand_on(m, n, list);
            handed = true;
            break;
        }
        frame.pos = list;
        n->ctx = n->fn(n->ctx);
        lt_stat(lt_site(m), LT_STAT_ACQUIRED);
        lt_stat(lt_site(m), LT_STAT_DELEGATED);
        if (frame.stepped) { /* the rest was handed on; we hold m by lock() */
            __atomic_store_n(&n->state, O_DONE, __ATOMIC_RELEASE);
            lt_serving_pop(&frame);
            lt_combining_unlock_held(m, oyama_unlock);
            return true;
        }
        /* release: the owner sees the section's writes and its result. */
        __atomic_store_n(&n->state, O_DONE, __ATOMIC_RELEASE);
    }
    lt_serving_pop(&frame);
    return handed;
}

static void release(lt_mutex_t *m)
{
    struct oyama_lock *l = LT_STATE(m, struct oyama_lock);
    for (;;) {
        uintptr_t w = O_LOCKED;
        /* release: the next holder sees every section run under this hold. */
        if (__atomic_compare_exchange_n(&l->word, &w, O_FREE, 0, __ATOMIC_RELEASE,
                                        __ATOMIC_RELAXED))
            return;
        /* acquire: the pushed nodes' fields. */
        struct oyama_node *top =
            (struct oyama_node *)__atomic_exchange_n(&l->word, O_LOCKED, __ATOMIC_ACQUIRE);
        if (combine(m, top))
            return;
    }
}

/* Holding m: our own section, then `batch`, then release (the paper's releaser). */
static void *session(lt_mutex_t *m, lt_cs_fn fn, void *ctx, struct oyama_node *batch)
{
    lt_stat(lt_site(m), LT_STAT_SESSIONS);
    struct lt_serving frame;
    lt_serving_push(&frame, m);
    frame.pos = batch; /* what a step aside of our own section hands on */
    void *r = fn(ctx);
    lt_serving_pop(&frame);
    lt_stat(lt_site(m), LT_STAT_ACQUIRED);
    if (frame.stepped) {
        lt_combining_unlock_held(m, oyama_unlock);
        return r;
    }
    if (!combine(m, batch))
        release(m);
    return r;
}

static void *oyama_execute(lt_mutex_t *m, lt_cs_fn fn, void *ctx, unsigned flags)
{
    if (flags & (LT_EXEC_ON_CALLER | LT_EXEC_MAY_WAIT))
        return lt_execute_on_caller(m, fn, ctx);
    if (__builtin_expect(lt_serving_top != NULL, 0) && lt_serving_find(m))
        lt_combining_relock(m);
    struct oyama_lock *l = LT_STATE(m, struct oyama_lock);
    if (__builtin_expect(take(l), 1))
        return session(m, fn, ctx, NULL);
    struct oyama_node n = {NULL, fn, ctx, NULL, O_WAITING, 0};
    wait_quiet(l);
    if (push_or_take(l, &n))
        return session(m, fn, ctx, NULL);
    lt_stat(lt_site(m), LT_STAT_CONTENDED);
    if (wait_node(&n) == O_DONE)
        return n.ctx;
    return session(m, fn, ctx, n.batch); /* handed the lock */
}

static __attribute__((noinline)) int oyama_wait(lt_mutex_t *m)
{
    struct oyama_lock *l = LT_STATE(m, struct oyama_lock);
    lt_contended(m);
    uint64_t since = lt_now_ns();
    while (!lt_impatient_due(since)) {
        /* Compete for the free word first (a descheduled waiter then never stalls the lock) */
        struct lt_spin s = LT_SPIN_INIT;
        uint64_t patience = 0;
        while (!s.over || lt_now_ns() < patience) {
            if (take(l))
                return lt_acquired(m);
            lt_combining_poll(&s);
            if (s.over && !patience)
                patience = lt_now_ns() + O_PATIENCE_NS;
        }
        /* ... and queue once patience runs out: lt_execute traffic keeps the word busy while
         * requests keep arriving, and could otherwise starve a lock() caller. */
        struct oyama_node n = {NULL, NULL, NULL, NULL, O_WAITING, 1};
        wait_quiet(l);
        if (push_or_take(l, &n))
            return lt_acquired(m);
        struct lt_spin w = LT_SPIN_INIT;
        uint32_t v;
        /* acquire: pairs with the holder's release of HANDED (or RETRY). */
        while ((v = __atomic_load_n(&n.state, __ATOMIC_ACQUIRE)) == O_WAITING)
            if (lt_spin_poll(&w, LT_WAIT_SPIN) && n.spinning)
                __atomic_store_n(&n.spinning, 0, __ATOMIC_RELAXED); /* now yielding */
        if (v == O_HANDED)
            return lt_acquired(m); /* a HOLD request is never run */
    }
    /* Impatient: in ticket order, the word once it comes free (nobody pushes meanwhile). */
    struct lt_spin s = LT_SPIN_INIT;
    uint32_t ticket = lt_impatient_enter(&l->imp, &s);
    while (!take_free(l))
        lt_combining_poll(&s);
    lt_impatient_leave(&l->imp, ticket);
    return lt_acquired(m);
}

static int oyama_lock(lt_mutex_t *m)
{
    if (__builtin_expect(take(LT_STATE(m, struct oyama_lock)), 1))
        return lt_acquired(m);
    return oyama_wait(m);
}

static int oyama_trylock(lt_mutex_t *m)
{
    return take(LT_STATE(m, struct oyama_lock)) ? lt_acquired(m) : EBUSY;
}

static int oyama_timedlock(lt_mutex_t *m, const struct timespec *abstime)
{
    return lt_timedlock_handoff(m, oyama_trylock, abstime);
}

static int oyama_unlock(lt_mutex_t *m)
{
    struct lt_serving *s = lt_stepping(m);
    if (__builtin_expect(s != NULL, 0)) { /* a combined section's condition wait */
        struct oyama_node *rest = s->pos;
        s->pos = NULL;
        release_quietly(m, rest);
        return 0;
    }
    struct oyama_lock *l = LT_STATE(m, struct oyama_lock);
    struct oyama_node *batch = l->batch;
    l->batch = NULL;
    if (lt_quiet_release()) { /* a condition wait's release: run nothing */
        release_quietly(m, batch);
        return 0;
    }
    if (batch || __atomic_load_n(&l->word, __ATOMIC_RELAXED) != O_LOCKED)
        lt_stat(lt_site(m), LT_STAT_SESSIONS); /* a lock holder that combines */
    if (batch && combine(m, batch))
        return 0;
    release(m);
    return 0;
}

/* fork (mutex.c): the stacked requests, and a batch handed on with the lock, are lost
 * threads' (on their stacks); a held lock is LOCKED with nothing to run. */
static void oyama_fork_child(lt_mutex_t *m, int held)
{
    struct oyama_lock *l = LT_STATE(m, struct oyama_lock);
    __atomic_store_n(&l->word, held ? (uintptr_t)O_LOCKED : (uintptr_t)O_FREE, __ATOMIC_RELAXED);
    l->batch = NULL;
    lt_impatient_fork_child(&l->imp);
}

const struct lt_algo lt_algo_oyama = {
    .name = "oyama",
    .caps = LT_CAP_DELEGATES | LT_CAP_SUPPORTS_COND | LT_CAP_OVERSUB_SAFE,
    .counts = LT_STAT_BIT(LT_STAT_PARKED) | LT_STAT_BIT(LT_STAT_HANDOVERS) |
              LT_STAT_BIT(LT_STAT_DELEGATED) | LT_STAT_BIT(LT_STAT_SESSIONS) |
              LT_STAT_BIT(LT_STAT_STEPPED_ASIDE) | LT_STAT_BIT(LT_STAT_ON_CALLER) |
              LT_STAT_BIT(LT_STAT_SKIPPED),
    .size = sizeof(struct oyama_lock),
    .wait = "spin on own request, then yield; lock() in ticket order after 10 ms",
    .init = oyama_init,
    .destroy = oyama_destroy,
    .lock = oyama_lock,
    .trylock = oyama_trylock,
    .timedlock = oyama_timedlock,
    .unlock = oyama_unlock,
    .fork_child = oyama_fork_child,
    .execute = oyama_execute,
    .cond_wait = lt_combining_cond_wait,
};
