/*
 * fc - flat combining (Hendler, Incze, Shavit & Tzafrir; the RCL paper §2.3.2).
 *
 * A test-and-test-and-set word and a publication list of per-thread records, one record per
 * thread per lock, that stay in the list between requests:
 *
 *   execute: write the context, then the section, into our record (release); if the record
 *            is not in the list, activate it and push it (CAS on the head).  Then wait until
 *            either the section is done (a combiner cleared it) or the word is free - then
 *            take the word and combine: run our own request, then FC_PASSES passes over the
 *            list running every published request, and free the word.
 *   cleanup: every FC_CLEANUP_EVERY sessions the combiner unlinks the records that published
 *            nothing for FC_MAX_AGE sessions (the authors' frequency 100 and threshold 10,
 *            the paper §5.2); their owners push them again when they next publish.
 *   lock:    take the word (TTAS, spin then yield).   unlock: free it.
 *
 *   record.fn:    NULL --owner publishes (release)--> fn --combiner ran it (release)--> NULL
 *                                                        --a step aside--> BUSY --done--> NULL
 *   record.state: INACTIVE --owner: CAS, then push--> ACTIVE --combiner unlinked it--> INACTIVE
 *                                                            --owner exits--> DEAD --combiner
 *                                                              unlinks and frees it
 *
 * Records belong to their thread (a small most-recently-used cache of lock -> record); only
 * the combiner, which holds the word, unlinks records, and only it frees a DEAD one, so a
 * combiner never reads freed memory.  A record whose lock was freed without lt_mutex_destroy
 * stays with its thread until the thread exits (then it leaks: the list it was in is gone).
 * lt_mutex_destroy unlinks every record (the owners re-push theirs if the lock is re-used).
 *
 * fork: a record published by a thread of the parent stays in the list of the child, where
 * that thread does not exist; its section must never run there.  Every publication carries
 * the fork generation (fc_generation, incremented by the child's fork handler - installed
 * when the library loads, so it runs before a program's own child handlers); a combiner that
 * finds a section published in an older generation unlinks its record and leaves it inactive
 * (and leaked: its owner is gone).  The forking thread's own records hold no request across
 * the fork (it was forking), and it re-publishes with the new generation.
 *
 *   record.gen:   the owner's, written before the section (so a combiner that sees the
 *                 section sees its generation)
 *
 * Competitive hand-over of the combiner role: whoever takes the free word combines, so the
 * role always goes to a running thread (the paper: FC holds up when threads outnumber CPUs).
 * Bounded bypass (impatient.h): a lock() or execute waiter that has waited LT_IMPATIENT_NS
 * (10 ms) draws a ticket, and the word then goes to the impatient waiters in ticket order
 * (an impatient executer combines when it gets it, its own request first if no other
 * combiner ran it meanwhile).  Without it, threads that take the word with lock() back to
 * back starved the others, and with them every published request (test_bypass: a waiter got
 * 1 acquisition in 2.5 s).
 * Waiting: spin, then yield (LT_WAIT_SPIN).  State: 32 bytes; 64 bytes per thread per lock it
 * executed on (at most FC_CACHE per thread are kept).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "../algo.h"
#include "../impatient.h"
#include "combining.h"

#define FC_PASSES        2u
#define FC_CLEANUP_EVERY 100u
#define FC_MAX_AGE       10u
#define FC_CACHE         8
#define FC_BUSY          ((lt_cs_fn)(uintptr_t)1)

enum { R_INACTIVE = 0, R_ACTIVE = 1, R_DEAD = 2 };

struct fc_rec {
    lt_cs_fn fn;         /* atomic: the published section; NULL none; FC_BUSY stepped aside */
    void *ctx;           /* the context in, the section's result out */
    struct fc_rec *next; /* atomic: list link */
    lt_mutex_t *lock;    /* the lock it publishes to (the owner's cache key) */
    uint32_t state;      /* atomic: R_* */
    uint32_t age;        /* the session that last served it (combiner only) */
    uint32_t gen;        /* atomic (relaxed): fc_generation when the section was published */
} __attribute__((aligned(64)));

struct fc_lock {
    uint32_t word;       /* atomic: 0 free, 1 held */
    uint32_t sessions;   /* combining sessions (word holder only) */
    struct fc_rec *head; /* atomic: the publication list */
    struct lt_impatient imp;
};
LT_STATE_FITS(struct fc_lock);

struct fc_cache_entry {
    lt_mutex_t *lock;
    struct fc_rec *rec;
};
static __thread struct fc_cache_entry cache[FC_CACHE] __attribute__((tls_model("initial-exec")));

static int fc_unlock(lt_mutex_t *m);

static uint32_t fc_generation; /* atomic (relaxed): forks this process descends through */

static void fc_after_fork_child(void)
{
    /* relaxed: the child has one thread now; the threads it creates see it at their start */
    __atomic_store_n(&fc_generation, fc_generation + 1, __ATOMIC_RELAXED);
}

__attribute__((constructor)) static void fc_install_fork_handler(void)
{
    pthread_atfork(NULL, NULL, fc_after_fork_child);
}

static int fc_init(lt_mutex_t *m)
{
    (void)m;
    lt_combining_setup();
    return 0;
}

/* ---- records ---- */

/* The owner lets go of r: the combiner frees it if it is in a list, else we do. */
static void retire(struct fc_rec *r)
{
    uint32_t s = R_ACTIVE;
    /* acq_rel: the combiner that frees it must see our last writes; if it is inactive, the
     * combiner's unlinking happened before we free it. */
    if (!__atomic_compare_exchange_n(&r->state, &s, R_DEAD, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        free(r);
}

static void fc_thread_exit(void)
{
    for (int i = 0; i < FC_CACHE; i++)
        if (cache[i].rec) {
            retire(cache[i].rec);
            cache[i].rec = NULL;
            cache[i].lock = NULL;
        }
}

static struct fc_rec *record_of(lt_mutex_t *m)
{
    if (__builtin_expect(cache[0].lock == m, 1))
        return cache[0].rec;
    int i = 1;
    while (i < FC_CACHE && cache[i].lock != m)
        i++;
    struct fc_cache_entry e;
    if (i < FC_CACHE) {
        e = cache[i];
    } else {
        i = FC_CACHE - 1;
        if (cache[i].rec)
            retire(cache[i].rec); /* the least recently used */
        e.lock = m;
        e.rec = aligned_alloc(64, sizeof *e.rec);
        if (!e.rec) {
            fputs("locktune: error: out of memory for a flat-combining record\n", stderr);
            abort();
        }
        *e.rec = (struct fc_rec){NULL, NULL, NULL, m, R_INACTIVE, 0, 0};
        lt_thread_register(); /* fc_thread_exit at thread exit */
    }
    for (; i > 0; i--)
        cache[i] = cache[i - 1];
    cache[0] = e;
    return e.rec;
}

static void push(struct fc_lock *l, struct fc_rec *r)
{
    struct fc_rec *h = __atomic_load_n(&l->head, __ATOMIC_RELAXED);
    do
        __atomic_store_n(&r->next, h, __ATOMIC_RELAXED);
    /* release: a combiner that reaches r through the head sees r's fields. */
    while (!__atomic_compare_exchange_n(&l->head, &h, r, 1, __ATOMIC_RELEASE, __ATOMIC_RELAXED));
}

/* Make sure r is in the list (the combiner may have unlinked it). */
static void activate(struct fc_lock *l, struct fc_rec *r)
{
    uint32_t s = R_INACTIVE;
    if (__atomic_load_n(&r->state, __ATOMIC_ACQUIRE) == R_INACTIVE &&
        __atomic_compare_exchange_n(&r->state, &s, R_ACTIVE, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
        push(l, r);
}

/* Holding the word: unlink r, whose predecessor is prev (NULL: r was read from the head). */
static void unlink_rec(struct fc_lock *l, struct fc_rec *prev, struct fc_rec *r)
{
    struct fc_rec *next = __atomic_load_n(&r->next, __ATOMIC_RELAXED);
    if (!prev) {
        struct fc_rec *h = r;
        if (__atomic_compare_exchange_n(&l->head, &h, next, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
            return;
        /* pushed meanwhile: r has a predecessor now, and only we move links behind the head */
        prev = h;
        while (__atomic_load_n(&prev->next, __ATOMIC_RELAXED) != r)
            prev = __atomic_load_n(&prev->next, __ATOMIC_RELAXED);
    }
    __atomic_store_n(&prev->next, next, __ATOMIC_RELAXED);
}

/* ---- combining ---- */

/* Run r's section (published, not BUSY) for its owner. */
static void serve(lt_mutex_t *m, struct lt_serving *frame, struct fc_rec *r, lt_cs_fn f,
                  uint32_t session)
{
    frame->pos = r;
    r->ctx = f(r->ctx);
    r->age = session;
    lt_stat(lt_site(m), LT_STAT_ACQUIRED);
    if (frame->stepped)
        return; /* BUSY: the caller completes it */
    /* release: the owner sees the section's writes and its result. */
    __atomic_store_n(&r->fn, NULL, __ATOMIC_RELEASE);
}

/* Holding the word: run our own request, then FC_PASSES passes over the list, then the
 * cleanup when it is due, then free the word. */
static void combine(lt_mutex_t *m, struct fc_rec *own)
{
    struct fc_lock *l = LT_STATE(m, struct fc_lock);
    uint32_t session = ++l->sessions;
    struct lt_serving frame;
    lt_serving_push(&frame, m);
    lt_stat(lt_site(m), LT_STAT_SESSIONS);
    struct fc_rec *stepped = NULL;
    lt_cs_fn f = __atomic_load_n(&own->fn, __ATOMIC_RELAXED); /* ours: no ordering needed */
    if (f && f != FC_BUSY) {
        serve(m, &frame, own, f, session);
        if (frame.stepped)
            stepped = own;
    }
    bool cleanup = session % FC_CLEANUP_EVERY == 0;
    for (unsigned pass = 0; pass < FC_PASSES && !stepped; pass++) {
        unsigned served = 0;
        /* acquire: pairs with push's release. */
        struct fc_rec *prev = NULL, *r = __atomic_load_n(&l->head, __ATOMIC_ACQUIRE);
        while (r && !stepped) {
            struct fc_rec *next = __atomic_load_n(&r->next, __ATOMIC_ACQUIRE);
            uint32_t st = __atomic_load_n(&r->state, __ATOMIC_ACQUIRE);
            if (st == R_DEAD) {
                unlink_rec(l, prev, r);
                free(r);
                r = next;
                continue;
            }
            /* acquire: pairs with the owner's release store of the section. */
            f = __atomic_load_n(&r->fn, __ATOMIC_ACQUIRE);
            if (f && __atomic_load_n(&r->gen, __ATOMIC_RELAXED) !=
                         __atomic_load_n(&fc_generation, __ATOMIC_RELAXED)) {
                /* published by a thread of the parent, before the fork: never run it */
                unlink_rec(l, prev, r);
                __atomic_store_n(&r->state, R_INACTIVE, __ATOMIC_RELAXED); /* nobody else */
                r = next;
                continue;
            }
            if (f && f != FC_BUSY) {
                serve(m, &frame, r, f, session);
                lt_stat(lt_site(m), LT_STAT_DELEGATED);
                served++;
                if (frame.stepped) {
                    stepped = r;
                    break;
                }
            } else if (cleanup && pass == 0 && !f && session - r->age > FC_MAX_AGE) {
                unlink_rec(l, prev, r);
                uint32_t s = R_ACTIVE;
                /* release: the owner that re-activates it sees it unlinked. */
                if (!__atomic_compare_exchange_n(&r->state, &s, R_INACTIVE, 0, __ATOMIC_RELEASE,
                                                 __ATOMIC_ACQUIRE))
                    free(r); /* died meanwhile */
                r = next;
                continue;
            }
            prev = r;
            r = next;
        }
        if (!served)
            break;
    }
    lt_serving_pop(&frame);
    if (!stepped) {
        /* release: the next holder sees every section of this session. */
        __atomic_store_n(&l->word, 0, __ATOMIC_RELEASE);
        return;
    }
    /* A section waited on a condition: we stepped aside (the word was freed, the request
     * marked BUSY) and hold the word again by lock().  Complete the request, then unlock. */
    __atomic_store_n(&stepped->fn, NULL, __ATOMIC_RELEASE);
    lt_combining_unlock_held(m, fc_unlock);
}

static inline bool take(struct fc_lock *l)
{
    uint32_t z = 0;
    /* acquire: the session starts after the release that freed the word. */
    return lt_impatient_quiet(&l->imp) && __atomic_load_n(&l->word, __ATOMIC_RELAXED) == 0 &&
           __atomic_compare_exchange_n(&l->word, &z, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
}

static void *fc_execute(lt_mutex_t *m, lt_cs_fn fn, void *ctx, unsigned flags)
{
    if (flags & (LT_EXEC_ON_CALLER | LT_EXEC_MAY_WAIT))
        return lt_execute_on_caller(m, fn, ctx);
    if (__builtin_expect(lt_serving_top != NULL, 0) && lt_serving_find(m))
        lt_combining_relock(m);
    struct fc_lock *l = LT_STATE(m, struct fc_lock);
    struct fc_rec *r = record_of(m);
    r->ctx = ctx;
    __atomic_store_n(&r->gen, __atomic_load_n(&fc_generation, __ATOMIC_RELAXED), __ATOMIC_RELAXED);
    /* release: a combiner that sees the section sees its context and generation. */
    __atomic_store_n(&r->fn, fn, __ATOMIC_RELEASE);
    activate(l, r);
    struct lt_spin s = LT_SPIN_INIT;
    bool waited = false;
    uint64_t since = 0;
    for (;;) {
        /* acquire: pairs with the combiner's release store of NULL. */
        lt_cs_fn f = __atomic_load_n(&r->fn, __ATOMIC_ACQUIRE);
        if (!f)
            break;
        if (take(l)) {
            combine(m, r);
            continue; /* ours was run first, unless another combiner has it (BUSY) */
        }
        if (!waited) {
            waited = true;
            since = lt_now_ns();
            lt_stat(lt_site(m), LT_STAT_CONTENDED);
        }
        if ((s.polls & 63) == 63 && lt_impatient_due(since)) {
            /* in turn; combine() runs ours unless another combiner did meanwhile */
            lt_impatient_take(&l->imp, &l->word, &s);
            combine(m, r);
            continue;
        }
        lt_combining_poll(&s);
        if ((s.polls & 255) == 0)
            activate(l, r); /* unlinked by a cleanup while we published */
    }
    return r->ctx;
}

/* ---- lock / unlock ---- */

static __attribute__((noinline)) int fc_wait(lt_mutex_t *m)
{
    struct fc_lock *l = LT_STATE(m, struct fc_lock);
    lt_contended(m);
    struct lt_spin s = LT_SPIN_INIT;
    uint64_t since = lt_now_ns();
    while (!take(l)) {
        lt_combining_poll(&s);
        if ((s.polls & 63) == 0 && lt_impatient_due(since)) {
            lt_impatient_take(&l->imp, &l->word, &s);
            break;
        }
    }
    return lt_acquired(m);
}

static int fc_lock(lt_mutex_t *m)
{
    if (__builtin_expect(take(LT_STATE(m, struct fc_lock)), 1))
        return lt_acquired(m);
    return fc_wait(m);
}

static int fc_trylock(lt_mutex_t *m)
{
    return take(LT_STATE(m, struct fc_lock)) ? lt_acquired(m) : EBUSY;
}

static int fc_timedlock(lt_mutex_t *m, const struct timespec *abstime)
{
    return lt_timedlock_handoff(m, fc_trylock, abstime);
}

static int fc_unlock(lt_mutex_t *m)
{
    struct lt_serving *s = lt_stepping(m);
    if (__builtin_expect(s != NULL, 0)) {
        /* a combined section's condition wait: its request stays in progress (BUSY, so no
         * other combiner runs it again) while the word is free for the next combiner */
        __atomic_store_n(&((struct fc_rec *)s->pos)->fn, FC_BUSY, __ATOMIC_RELAXED);
    }
    /* release: the next holder sees the section's writes. */
    __atomic_store_n(&LT_STATE(m, struct fc_lock)->word, 0, __ATOMIC_RELEASE);
    return 0;
}

static int fc_destroy(lt_mutex_t *m)
{
    struct fc_lock *l = LT_STATE(m, struct fc_lock);
    if (__atomic_load_n(&l->word, __ATOMIC_ACQUIRE) != 0)
        return EBUSY;
    struct fc_rec *r = __atomic_load_n(&l->head, __ATOMIC_ACQUIRE);
    for (struct fc_rec *p = r; p; p = __atomic_load_n(&p->next, __ATOMIC_RELAXED))
        if (__atomic_load_n(&p->fn, __ATOMIC_ACQUIRE) &&
            __atomic_load_n(&p->state, __ATOMIC_RELAXED) != R_DEAD)
            return EBUSY; /* a thread waits for its section */
    __atomic_store_n(&l->head, NULL, __ATOMIC_RELAXED);
    while (r) {
        struct fc_rec *next = __atomic_load_n(&r->next, __ATOMIC_RELAXED);
        uint32_t s = R_ACTIVE;
        if (!__atomic_compare_exchange_n(&r->state, &s, R_INACTIVE, 0, __ATOMIC_RELEASE,
                                         __ATOMIC_ACQUIRE))
            free(r); /* DEAD */
        r = next;
    }
    return 0;
}

/* fork (mutex.c): the impatient tickets of threads the child lost (the word and the
 * publications as the header says). */
static void fc_fork_child(lt_mutex_t *m, int held)
{
    (void)held;
    lt_impatient_fork_child(&LT_STATE(m, struct fc_lock)->imp);
}

const struct lt_algo lt_algo_fc = {
    .name = "fc",
    .caps = LT_CAP_DELEGATES | LT_CAP_SUPPORTS_COND | LT_CAP_OVERSUB_SAFE,
    .counts = LT_STAT_BIT(LT_STAT_PARKED) | LT_STAT_BIT(LT_STAT_DELEGATED) |
              LT_STAT_BIT(LT_STAT_SESSIONS) | LT_STAT_BIT(LT_STAT_STEPPED_ASIDE) |
              LT_STAT_BIT(LT_STAT_ON_CALLER),
    .size = sizeof(struct fc_lock),
    .wait = "spin on own record and the lock word, then yield; in ticket order after 10 ms",
    .init = fc_init,
    .destroy = fc_destroy,
    .lock = fc_lock,
    .trylock = fc_trylock,
    .timedlock = fc_timedlock,
    .unlock = fc_unlock,
    .execute = fc_execute,
    .cond_wait = lt_combining_cond_wait,
    .thread_exit = fc_thread_exit,
    .fork_child = fc_fork_child,
};
