/*
 * auto - a lock that watches itself and switches between two algorithms at run time
 * (issue 14; the published model is GLK, "Locking made easy", Antić et al., Middleware'16:
 * this is our own protocol and our own rules).
 *
 * Modes, each a complete lock of its own inside the one lt_mutex_t:
 *
 *   BARGE   a futex mutex that barges (take the word if it is free, else sleep; the releasing
 *           thread may take it again at once).  Cheapest while few threads want the lock at
 *           a time.  Its release is one plain store where membarrier(2) is there (below).
 *   QUEUE   the blocking ShflLock (shfl_core.h): stealing unless an impatient head is owed
 *           it, waiters queued behind a spinning head, parked beyond the spin budget, woken
 *           ahead of their turn.  Holds up when threads outnumber CPUs.
 *
 * State (m->_u, 34 of its 40 bytes; the ShflLock first, where shfl_core.h looks for it):
 *
 *   q        the QUEUE lock          word     the BARGE word (0 free, 1 held; 2 sleepers: below)
 *   mode     the lock in force       book     the holder's window (acq, cont, crowd)
 *   waiting  BARGE waiters now       fenced   whether BARGE releases are exchanges
 *
 * The BARGE release, and who pays for the ordering it needs.  A release must not miss a
 * sleeper: the releaser writes the word and then reads whether anyone sleeps; the sleeper
 * announces itself and then reads the word - the store-buffering pattern, where each side
 * needs a full barrier between its store and its load.  glibc puts it on the releaser: the
 * word is three-state (2: "maybe sleepers") and every release an exchange, an atomic
 * read-modify-write - a full barrier on x86, which waits for the section's stores to drain
 * (in the bundled bank, 88% of the release's samples sat on it).  While a lock
 * is not contended we put it on the sleeper instead, as liburcu's membarrier flavour does:
 *
 *   unfenced release:  word = 0 (release) ; compiler barrier ; waiting != 0 ?  wake one
 *   fenced release:    exchange(word, 0) == 2 ?  wake one                       (glibc's)
 *   wait:  waiting += 1 (seq_cst) ;  fenced == 0 ?  fenced = 1, membarrier(PRIVATE_EXPEDITED)
 *          while exchange(word, 2) != 0:  futex_wait(word, 2)  ;  waiting -= 1
 *
 * (`waiting` counts the BARGE waiters only: a thread queued on the QUEUE lock never sleeps
 * on the word, and counting it would add two atomic operations on the lock's line to every
 * queued acquisition - with two threads, most acquisitions.)
 *
 * membarrier returns once every running thread of the process has passed a full barrier (one
 * not running passed one when it was switched out).  A releaser that read fenced == 0 before
 * that barrier has its store of 0 drained by it: the waiter's exchange after the call sees
 * that 0 (it takes the word), or a later holder's; a releaser whose load of `waiting` comes
 * after the barrier sees the waiter's increment and wakes.  A waiter that came in meanwhile,
 * found fenced already 1 and went to sleep on a 2 a stale plain store then overwrote, is woken
 * by the chain glibc's protocol keeps: the waiter that made the call is still to take the word
 * by exchanging in 2, so its release wakes one, and so on while anyone sleeps.  So the first
 * wait on a quiet lock costs one membarrier (14 us on our 2-vCPU VM: IPIs), and
 * releases are exchanges from then on; the holder unfences the lock again after
 * UNFENCE_WINDOWS windows without a contended acquisition - storing fenced = 0 and then
 * reading `waiting` (both seq_cst: the same pattern against a waiter's increment and look
 * at `fenced`), fencing it again if someone came.  At most one membarrier per ~8,000
 * uncontended acquisitions, then.  Where membarrier is missing (Linux before 4.14, or a
 * seccomp filter), or with LOCKTUNE_AUTO_MEMBARRIER=0, every release is an exchange.
 *
 * Acquisition (lock, trylock): read `mode`, take that mode's lock, read `mode` again.  Equal:
 * the lock is ours.  Different: the lock moved on while we waited - release the mode's lock
 * and start again with the new mode.  Release: the lock of `mode` - the holder's, since
 * nobody else changes `mode` while it holds that lock - and, if it switched, the other too.
 *
 * Switching, by the holder only (it holds the current mode's lock, X), from X to Y:
 *
 *     holder of X, releasing:  take Y's lock  ->  mode = Y (release)  ->  release Y, X
 *
 *   - Only a holder of the lock in force changes `mode`, so while a thread holds X with
 *     mode == X nobody else can be inside a section: a thread holding Y finds mode != Y until
 *     the switcher publishes Y, and the switcher holds Y's lock then (it took it first).
 *   - Y's lock is free but for stragglers - threads that read `mode` == Y before an earlier
 *     switch away from Y - who take it, see mode != Y and let it go: the switcher waits for
 *     them (they never wait for anything while holding Y).
 *   - Waiters queued or asleep on X take X in their turn, find mode == Y, release X and queue
 *     on Y: no waiter is lost, and each passes X once.
 *   - The release store of `mode` is read after a thread takes a mode's lock (acquire), which
 *     the switcher released after the store: a thread that gets X after the switch sees Y.
 *
 * What holds across a switch: mutual exclusion (above); lt_execute (lock, call, unlock: no
 * execute of its own); trylock (takes the lock in force, or returns EBUSY after a few moved
 * modes); timedlock (timed.c's hand-off: unlock releases the lock of `mode`, whoever calls it);
 * condition variables (cond.c releases and re-takes m as any lock); fork (fork_child below).
 * The owner field (mutex.c) is written only once the mode is checked: a thread passing
 * through a lock that moved on never names itself the holder.
 *
 * When to switch (the holder, at the end of a window of acquisitions, under the lock):
 *
 *   contended  acquisitions in the window that found the lock taken
 *   crowd      the mean over the window's acquisitions of the threads then waiting: on the
 *              barging lock `waiting`, on the queue lock 1 when anyone is queued, else 0
 *
 *   BARGE -> QUEUE  when contended >= 1/8 of the window: a barging futex lock that is often
 *                   found taken pays a sleep and a wake-up (two system calls) per contended
 *                   hand-over, where the queue lock's waiters spin at the head and its
 *                   stealing keeps the releasing thread's cache warm.  With one thread per
 *                   CPU as much as with threads piled up beyond the CPUs.
 *   QUEUE -> BARGE  when contended < 1/32 and crowd < 1/16: the lock has gone quiet.  Not on
 *                   `contended` alone: the queue lock's stealing makes most acquisitions
 *                   uncontended while a queue waits (8 threads on 2 CPUs: 0.1%), and a rule
 *                   on it alone sent the lock back to the barging one every other window.
 *
 * The barging lock stays the mode of a quiet lock: its rare waiters sleep at once, where the
 * queue lock's head would spin (on a loaded machine, CPU time other threads could use).
 *
 * The window is 256 acquisitions on the barging lock, and ends early at its 32nd contended
 * one: contention moves the lock to the queue within 32 sleeps.  On the queue it is 16,384:
 * the way back needs a long quiet stretch.  Two threads on two CPUs, one of them often busy
 * elsewhere, give quiet windows of a few hundred acquisitions all the time; with windows of
 * 256 on the queue the bundled raytrace went back and forth 94 times a run, each return to
 * the barging lock costing up to 32 sleeps.  A lock that went quiet loses nothing by staying
 * on the queue lock for a while: its uncontended path is as cheap.
 * LOCKTUNE_AUTO_SWITCH_EVERY=N (tests) switches every N acquisitions whatever is observed.
 * LOCKTUNE_STATS counts the switches each way per site (`algorithm_counters`: `switches_to_queue`,
 * `switches_to_barge`) and the acquisitions made on the queue lock (`acquired_on_queue`).
 */
#define _GNU_SOURCE
#include <linux/membarrier.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../config.h"
#include "../futex.h"
#include "shfl_core.h"

enum { AUTO_BARGE = 0, AUTO_QUEUE = 1, AUTO_MODES = 2 };

#define WINDOW_BARGE    256u   /* acquisitions per window on the barging lock */
#define WINDOW_QUEUE    16384u /* ... on the queue lock */
#define UNFENCE_WINDOWS 32u    /* uncontended windows before the BARGE releases are stores again */

/* The holder's bookkeeping.  It shares the line the queue's head spins on, where each store
 * the holder makes costs a transfer of the line and lengthens the section: so it is written
 * at the release, with one store just before the release's own (and, for a contended
 * acquisition, once in the slow path, where the line moves anyway). */
union auto_book {
    struct {
        uint16_t acq;   /* acquisitions in the window */
        uint16_t cont;  /* contended acquisitions in the window */
        uint16_t crowd; /* the crowd seen at each release, summed (saturating) */
        uint16_t spare;
    };
    uint64_t all; /* relaxed atomic loads and stores of it: one instruction each */
};

struct auto_lock {
    struct shfl_lock q;   /* QUEUE; first: shfl_core.h addresses it as m->_u */
    uint32_t word;        /* atomic: BARGE */
    uint32_t waiting;     /* atomic: threads waiting for the BARGE word now */
    union auto_book book; /* the holder's */
    uint8_t mode;         /* atomic: the lock in force */
    uint8_t fenced;       /* atomic: 0 unfenced, else 1 + uncontended windows since fenced */
};
LT_STATE_FITS(struct auto_lock);

static unsigned switch_every; /* LOCKTUNE_AUTO_SWITCH_EVERY; 0: by the rules */
static bool asym;             /* the BARGE release is a store: membarrier is registered */

static int membarrier(int cmd)
{
    return (int)syscall(__NR_membarrier, cmd, 0, 0);
}

/* Whether the sleepers can pay for the BARGE release's barrier (header).  The registration is
 * the process's (its memory map's), inherited by fork and dropped by exec; made at start-up,
 * usually while the process has one thread (3 us; with more, the kernel waits for an RCU
 * grace period: 19 ms measured). */
static bool asym_available(void)
{
    const char *v = getenv("LOCKTUNE_AUTO_MEMBARRIER");
    if (v && *v) {
        if (strcmp(v, "0") == 0)
            return false;
        if (strcmp(v, "1") != 0)
            lt_config_fatal("LOCKTUNE_AUTO_MEMBARRIER=%s: expected 0 or 1", v);
    }
    int cmds = membarrier(MEMBARRIER_CMD_QUERY);
    return cmds > 0 && (cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED) &&
           membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0;
}

static void auto_configure(void)
{
    const char *v = getenv("LOCKTUNE_AUTO_SWITCH_EVERY");
    if (v && *v) {
        char *end;
        unsigned long x = strtoul(v, &end, 10);
        if (*end || x < 1 || x > 65535)
            lt_config_fatal("LOCKTUNE_AUTO_SWITCH_EVERY=%s: expected a number of acquisitions "
                            "from 1 to 65535",
                            v);
        switch_every = (unsigned)x;
    }
    asym = asym_available();
}

/* ------------------------------------------------------------------ the two locks */

static inline bool barge_try(struct auto_lock *a)
{
    uint32_t c = 0;
    /* acquire: the section starts after the CAS that took the word. */
    return __atomic_compare_exchange_n(&a->word, &c, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
}

/* Sleep until the word is ours (glibc's lll_lock, with the header's fencing).  No spinning,
 * as glibc's default mutex: a spinning waiter would pull the word's line away from a holder
 * that may be about to take the lock again. */
static __attribute__((noinline)) void barge_wait(lt_mutex_t *m, struct auto_lock *a)
{
    if (asym) {
        /* seq_cst: take()'s increment of `waiting`, then the look at `fenced` (the holder's
         * unfencing does the mirror image); membarrier orders them against the unfenced
         * releases. */
        if (__atomic_load_n(&a->fenced, __ATOMIC_SEQ_CST) == 0) {
            /* Every waiter that saw 0 makes the call (the one that set 1 may not have made
             * it yet); the counter counts the lock's transitions. */
            uint8_t zero = 0;
            if (__atomic_compare_exchange_n(&a->fenced, &zero, 1, 0, __ATOMIC_SEQ_CST,
                                            __ATOMIC_RELAXED))
                lt_stat(lt_site(m), LT_STAT_AUTO_FENCED);
            if (membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) != 0)
                abort(); /* registered at start-up (fork keeps it): cannot fail */
        }
    }
    /* 2 = "maybe sleepers": a fenced release then wakes one.  acquire: the section starts
     * after the exchange that took the word. */
    while (__atomic_exchange_n(&a->word, 2, __ATOMIC_ACQUIRE) != 0) {
        lt_stat(lt_site(m), LT_STAT_PARKED);
        lt_futex_wait(&a->word, 2, NULL, CLOCK_MONOTONIC);
    }
}

static inline void barge_release(struct auto_lock *a)
{
    if (asym && !__atomic_load_n(&a->fenced, __ATOMIC_RELAXED)) {
        /* release: the section's writes go to the next taker.  The compiler must not move
         * the load above the store; the processor may, and the waiters' membarrier is what
         * makes that harmless (header). */
        __atomic_store_n(&a->word, 0, __ATOMIC_RELEASE);
        __atomic_signal_fence(__ATOMIC_SEQ_CST);
        if (__atomic_load_n(&a->waiting, __ATOMIC_RELAXED))
            lt_futex_wake(&a->word, 1);
        return;
    }
    /* release: the section's writes go to the next taker. */
    if (__atomic_exchange_n(&a->word, 0, __ATOMIC_RELEASE) == 2)
        lt_futex_wake(&a->word, 1);
}

/* The BARGE holder at the end of a window: count the uncontended windows of a fenced lock,
 * unfence it after UNFENCE_WINDOWS of them (header). */
static void barge_window(lt_mutex_t *m, struct auto_lock *a, bool contended)
{
    uint8_t f = __atomic_load_n(&a->fenced, __ATOMIC_RELAXED);
    if (!asym || f == 0)
        return;
    if (contended) { /* only we change a nonzero `fenced` */
        __atomic_store_n(&a->fenced, 1, __ATOMIC_RELAXED);
    } else if (f < UNFENCE_WINDOWS) {
        __atomic_store_n(&a->fenced, (uint8_t)(f + 1), __ATOMIC_RELAXED);
    } else {
        __atomic_store_n(&a->fenced, 0, __ATOMIC_SEQ_CST);
        lt_stat(lt_site(m), LT_STAT_AUTO_UNFENCED);
        uint8_t zero = 0; /* a waiter that came in may have seen 1 and made no call: */
        if (__atomic_load_n(&a->waiting, __ATOMIC_SEQ_CST) &&
            __atomic_compare_exchange_n(&a->fenced, &zero, 1, 0, __ATOMIC_SEQ_CST,
                                        __ATOMIC_RELAXED))
            lt_stat(lt_site(m), LT_STAT_AUTO_FENCED); /* (the counters count transitions) */
    }
}

/* Take mode's lock if that needs no waiting.  QUEUE: steal unless an impatient head is owed
 * the lock (shfl_fast; shfl_block.c says why).  Stealing past it kept the head spinning, a CPU
 * lost, while two threads took the lock in turn. */
static bool try_take(struct auto_lock *a, uint32_t mode)
{
    return mode == AUTO_BARGE ? barge_try(a) : shfl_fast(&a->q);
}

/* Take mode's lock, waiting if need be.  Returns 1 when it had to wait.  The owner field is
 * not touched: the lock is not ours until the mode is checked (auto_lock). */
static int take(lt_mutex_t *m, struct auto_lock *a, uint32_t mode)
{
    if (try_take(a, mode))
        return 0;
    if (mode == AUTO_QUEUE) {
        shfl_wait(m, true); /* counts the contention (lt_contended) */
        return 1;
    }
    /* seq_cst: the waiter's announcement (header: the increment, then the look at
     * `fenced`); also the count the holder samples. */
    __atomic_fetch_add(&a->waiting, 1, __ATOMIC_SEQ_CST);
    lt_contended(m);
    barge_wait(m, a);
    __atomic_fetch_sub(&a->waiting, 1, __ATOMIC_RELAXED);
    return 1;
}

static void release(lt_mutex_t *m, struct auto_lock *a, uint32_t mode)
{
    if (mode == AUTO_BARGE)
        barge_release(a);
    else
        shfl_unlock_any(m);
}

/* ------------------------------------------------------------------ switching */

/* The holder of mode `from` moves the lock to `to` (header: take, publish, hold both). */
static void switch_to(lt_mutex_t *m, struct auto_lock *a, uint32_t to)
{
    if (to == AUTO_BARGE) {
        struct lt_spin s = LT_SPIN_INIT;
        while (!barge_try(a))
            lt_spin_poll(&s, LT_WAIT_SPIN); /* stragglers let it go at once */
    } else {
        /* Not shfl_lock_slow: it would take us, the holder of m, for a thread relocking m. */
        struct lt_spin s = LT_SPIN_INIT;
        while (!shfl_take(&a->q))
            lt_spin_poll(&s, LT_WAIT_SPIN);
    }
    /* release: a thread that takes `from` after we let it go sees the new mode. */
    __atomic_store_n(&a->mode, (uint8_t)to, __ATOMIC_RELEASE);
    lt_stat(lt_site(m), to == AUTO_QUEUE ? LT_STAT_AUTO_TO_QUEUE : LT_STAT_AUTO_TO_BARGE);
}

/* The rules of the header, for the window just closed; returns the mode to be in. */
static uint32_t choose(const struct auto_lock *a, uint32_t mode)
{
    uint64_t acq = a->book.acq, cont = a->book.cont, crowd = a->book.crowd; /* sums */
    if (mode == AUTO_BARGE)
        return cont * 8u >= acq ? AUTO_QUEUE : AUTO_BARGE;
    return cont * 32u < acq && crowd * 16u < acq ? AUTO_BARGE : AUTO_QUEUE;
}

/* The end of the holder's window, at a release: perhaps a switch (header).  Returns the
 * mode now in force (the holder then holds both locks if it switched). */
static __attribute__((noinline)) uint32_t window_end(lt_mutex_t *m, struct auto_lock *a,
                                                     uint32_t mode)
{
    uint32_t to = switch_every ? mode ^ 1u : choose(a, mode);
    if (mode == AUTO_BARGE)
        barge_window(m, a, a->book.cont != 0);
    a->book.acq = a->book.cont = a->book.crowd = 0;
    if (to == mode)
        return mode;
    switch_to(m, a, to);
    return to;
}

/* The lock, in `mode`, is being released by its holder: one more acquisition in the window
 * (one load and one store of the book, above), and at the window's end perhaps a switch.
 * Returns the mode in force now. */
static inline __attribute__((always_inline)) uint32_t observe(lt_mutex_t *m, struct auto_lock *a,
                                                              uint32_t mode)
{
    if (mode == AUTO_QUEUE)
        lt_stat(lt_site(m), LT_STAT_AUTO_ON_QUEUE);
    /* relaxed: samples.  On the queue, whether anyone is queued (its tail), not how many. */
    uint32_t seen = mode == AUTO_BARGE ? __atomic_load_n(&a->waiting, __ATOMIC_RELAXED)
                                       : __atomic_load_n(&a->q.tail, __ATOMIC_RELAXED) != NULL;
    union auto_book b = {.all = __atomic_load_n(&a->book.all, __ATOMIC_RELAXED)};
    b.acq++;
    b.crowd = seen > (uint32_t)(UINT16_MAX - b.crowd) ? UINT16_MAX : (uint16_t)(b.crowd + seen);
    __atomic_store_n(&a->book.all, b.all, __ATOMIC_RELAXED);
    unsigned window = switch_every         ? switch_every
                      : mode == AUTO_BARGE ? WINDOW_BARGE
                                           : WINDOW_QUEUE;
    /* On the barging lock the window also ends at its 32nd contended acquisition: enough to
     * decide (1/8 of 256), and each one may have cost a sleep and a wake-up. */
    if (__builtin_expect(b.acq >= window, 0) ||
        (mode == AUTO_BARGE && __builtin_expect(b.cont >= WINDOW_BARGE / 8, 0)))
        return window_end(m, a, mode);
    return mode;
}

/* ------------------------------------------------------------------ operations */

static int auto_init(lt_mutex_t *m)
{
    (void)m; /* all zero: BARGE in force, both locks free */
    return 0;
}

static int auto_lock(lt_mutex_t *m)
{
    struct auto_lock *a = LT_STATE(m, struct auto_lock);
    for (;;) {
        /* acquire: pairs with a switcher's release store (header). */
        uint32_t mode = __atomic_load_n(&a->mode, __ATOMIC_ACQUIRE);
        int contended = take(m, a, mode);
        /* relaxed: taking the mode's lock was an acquire that follows the store we must see
         * (the switcher stored `mode` before releasing the lock we took). */
        if (__builtin_expect(__atomic_load_n(&a->mode, __ATOMIC_RELAXED) == mode, 1)) {
            if (contended) /* the holder's now (the book) */
                a->book.cont++;
            return lt_acquired(m);
        }
        release(m, a, mode); /* the lock moved on while we waited: not ours to hold */
    }
}

static int auto_trylock(lt_mutex_t *m)
{
    struct auto_lock *a = LT_STATE(m, struct auto_lock);
    for (int i = 0; i < 4; i++) {
        uint32_t mode = __atomic_load_n(&a->mode, __ATOMIC_ACQUIRE); /* as in auto_lock */
        if (!try_take(a, mode))
            return EBUSY;
        if (__atomic_load_n(&a->mode, __ATOMIC_RELAXED) == mode) /* as in auto_lock */
            return lt_acquired(m);
        release(m, a, mode);
    }
    return EBUSY; /* the mode kept moving: the lock was busy all along */
}

static int auto_timedlock(lt_mutex_t *m, const struct timespec *abstime)
{
    return lt_timedlock_handoff(m, auto_trylock, abstime);
}

static int auto_unlock(lt_mutex_t *m)
{
    struct auto_lock *a = LT_STATE(m, struct auto_lock);
    /* relaxed: only the holder of the lock in force changes `mode`, and that is us. */
    uint32_t mode = __atomic_load_n(&a->mode, __ATOMIC_RELAXED);
    uint32_t now = observe(m, a, mode);
    if (now != mode)
        release(m, a, now); /* switched: we hold both */
    release(m, a, mode);
    return 0;
}

static int auto_destroy(lt_mutex_t *m)
{
    struct auto_lock *a = LT_STATE(m, struct auto_lock);
    if (__atomic_load_n(&a->waiting, __ATOMIC_RELAXED))
        return EBUSY;
    return shfl_destroy_any(m);
}

/* fork (mutex.c): the lost threads' queue nodes and counts go; the holder keeps the lock of
 * `mode` (a switch happens inside a release, never while the lock is simply held). */
static void auto_fork_child(lt_mutex_t *m, int held)
{
    struct auto_lock *a = LT_STATE(m, struct auto_lock);
    uint32_t mode = __atomic_load_n(&a->mode, __ATOMIC_RELAXED);
    shfl_fork_child_any(m, held && mode == AUTO_QUEUE);
    __atomic_store_n(&a->word, held && mode == AUTO_BARGE ? 1u : 0u, __ATOMIC_RELAXED);
    __atomic_store_n(&a->waiting, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&a->fenced, 0, __ATOMIC_RELAXED); /* nobody sleeps: stores will do */
}

const struct lt_algo lt_algo_auto = {
    .name = "auto",
    .caps = LT_CAP_SUPPORTS_COND | LT_CAP_BLOCKING | LT_CAP_OVERSUB_SAFE,
    .counts = LT_STAT_BIT(LT_STAT_PARKED) | LT_STAT_BIT(LT_STAT_AUTO_TO_QUEUE) |
              LT_STAT_BIT(LT_STAT_AUTO_TO_BARGE) | LT_STAT_BIT(LT_STAT_AUTO_FENCED) |
              LT_STAT_BIT(LT_STAT_AUTO_UNFENCED) | LT_STAT_BIT(LT_STAT_AUTO_ON_QUEUE),
    .size = sizeof(struct auto_lock),
    .wait = "switches between a barging futex lock and the blocking ShflLock",
    .configure = auto_configure,
    .init = auto_init,
    .destroy = auto_destroy,
    .lock = auto_lock,
    .trylock = auto_trylock,
    .timedlock = auto_timedlock,
    .unlock = auto_unlock,
    .fork_child = auto_fork_child,
};
