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
 *   QUEUE   the blocking ShflLock (shfl_core.h): stealing while the queue is short, waiters
 *           queued behind a spinning head, parked beyond the spin budget, woken ahead of
 *           their turn.  Holds up when threads outnumber CPUs.
 *
 * State (m->_u, 36 of its 40 bytes; the ShflLock first, where shfl_core.h looks for it):
 *
 *   q        the QUEUE lock          word     the BARGE word (0 free, 1 held; 2 sleepers: below)
 *   mode     the lock in force       held     the locks the holder holds (bit per mode)
 *   waiting  threads waiting now     acq, cont, waiters, shift: the holder's window
 *   fenced   whether BARGE releases are exchanges
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
 * (`waiting` counts the QUEUE mode's waiters too: around a switch an unfenced release may
 * wake the word for nobody, which costs a system call and nothing else.)
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
 * and start again with the new mode.  Release: every lock in `held`.
 *
 * Switching, by the holder only (it holds the current mode's lock, X), from X to Y:
 *
 *     holder of X:  take Y's lock  ->  mode = Y (release)  ->  held = X|Y  ...  unlock: both
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
 * modes); timedlock (timed.c's hand-off: unlock releases `held` whoever calls it);
 * condition variables (cond.c releases and re-takes m as any lock); fork (fork_child below).
 * The owner field (mutex.c) is written only once the mode is checked: a thread passing
 * through a lock that moved on never names itself the holder.
 *
 * When to switch (the holder, at the end of a window of acquisitions, under the lock):
 *
 *   contended  acquisitions in the window that found the lock taken
 *   crowd      the mean over the window's acquisitions of the threads then waiting
 *
 *   BARGE -> QUEUE  when contended >= 1/8 of the window and crowd >= CPUs - 1/2: threads
 *                   outnumber the CPUs the lock can run on, and a barging lock's sleepers
 *                   would cost a wake-up each time (the oversubscribed case).
 *   QUEUE -> BARGE  when contended < 1/16 or crowd < (CPUs - 1/2) / 2 (hysteresis: half).
 *
 * The window is 256 acquisitions, doubled after each switch (to 16,384 at most) and halved
 * after each window that keeps the mode, so a lock on the edge switches at most every 16,384
 * acquisitions.  LOCKTUNE_AUTO_SWITCH_EVERY=N (tests) switches every N acquisitions whatever
 * is observed.  LOCKTUNE_STATS counts the switches each way per site (`algorithm_counters`:
 * `switches_to_queue`, `switches_to_barge`).
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

#define WINDOW_MIN       256u
#define WINDOW_MAX_SHIFT 6u  /* 256 << 6 = 16,384 */
#define UNFENCE_WINDOWS  32u /* uncontended windows before the BARGE releases are stores again */

struct auto_lock {
    struct shfl_lock q; /* QUEUE; first: shfl_core.h addresses it as m->_u */
    uint32_t word;      /* atomic: BARGE */
    uint32_t waiting;   /* atomic: threads waiting in lock() now, in either mode */
    uint32_t waiters;   /* the holder's: sum of `waiting` seen at each acquisition */
    uint16_t cont;      /* the holder's: contended acquisitions in the window */
    uint16_t acq;       /* the holder's: acquisitions in the window */
    uint8_t mode;       /* atomic: the lock in force */
    uint8_t held;       /* the holder's: bit per mode whose lock it holds */
    uint8_t shift;      /* the holder's: window = WINDOW_MIN << shift */
    uint8_t fenced;     /* atomic: 0 unfenced, else 1 + uncontended windows since fenced */
};
LT_STATE_FITS(struct auto_lock);

static unsigned ncpus = 1;    /* CPUs the process may run on (configure) */
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
    unsigned n = 0;
    lt_config_usable_cpus(&n);
    ncpus = n ? n : 1;
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

/* Take mode's lock, waiting if need be.  Returns 1 when it had to wait.  The owner field is
 * not touched: the lock is not ours until the mode is checked (auto_lock). */
static int take(lt_mutex_t *m, struct auto_lock *a, uint32_t mode)
{
    if (mode == AUTO_BARGE ? barge_try(a) : shfl_take(&a->q))
        return 0;
    /* seq_cst: in BARGE mode the waiter's announcement (header: the increment, then the look
     * at `fenced`); in both, a count the holder samples. */
    __atomic_fetch_add(&a->waiting, 1, __ATOMIC_SEQ_CST);
    if (mode == AUTO_BARGE) {
        lt_contended(m);
        barge_wait(m, a);
    } else {
        shfl_wait(m, true); /* counts the contention (lt_contended) */
    }
    __atomic_fetch_sub(&a->waiting, 1, __ATOMIC_RELAXED);
    return 1;
}

static bool try_take(struct auto_lock *a, uint32_t mode)
{
    /* QUEUE: no stealing past waiters that asked for their turn (shfl_fast). */
    return mode == AUTO_BARGE ? barge_try(a) : shfl_fast(&a->q);
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
    a->held |= (uint8_t)(1u << to);
    lt_stat(lt_site(m), to == AUTO_QUEUE ? LT_STAT_AUTO_TO_QUEUE : LT_STAT_AUTO_TO_BARGE);
}

/* The rules of the header, for the window just closed; returns the mode to be in. */
static uint32_t choose(const struct auto_lock *a, uint32_t mode)
{
    uint64_t acq = a->acq, cont = a->cont, crowd2 = 2u * (uint64_t)a->waiters;
    uint64_t edge2 = acq * (2u * ncpus - 1u); /* crowd >= CPUs - 1/2, times 2 acq */
    if (mode == AUTO_BARGE)
        return cont * 8u >= acq && crowd2 >= edge2 ? AUTO_QUEUE : AUTO_BARGE;
    return cont * 16u < acq || crowd2 * 2u < edge2 ? AUTO_BARGE : AUTO_QUEUE;
}

/* One more acquisition in the holder's window; at its end, perhaps a switch. */
static void observe(lt_mutex_t *m, struct auto_lock *a, uint32_t mode, int contended,
                    bool may_switch)
{
    a->acq++;
    a->cont += (uint16_t)contended;
    a->waiters += __atomic_load_n(&a->waiting, __ATOMIC_RELAXED); /* relaxed: a sample */
    unsigned window = switch_every ? switch_every : WINDOW_MIN << a->shift;
    if (a->acq < window || !may_switch)
        return;
    uint32_t to = switch_every ? mode ^ 1u : choose(a, mode);
    if (mode == AUTO_BARGE)
        barge_window(m, a, a->cont != 0);
    a->acq = a->cont = 0;
    a->waiters = 0;
    if (to == mode) {
        if (a->shift)
            a->shift--;
        return;
    }
    if (a->shift < WINDOW_MAX_SHIFT)
        a->shift++;
    switch_to(m, a, to);
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
            a->held = (uint8_t)(1u << mode);
            observe(m, a, mode, contended, true);
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
        if (__atomic_load_n(&a->mode, __ATOMIC_RELAXED) == mode) { /* as in auto_lock */
            a->held = (uint8_t)(1u << mode);
            observe(m, a, mode, 0, false); /* a trylock never waits for a switch */
            return lt_acquired(m);
        }
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
    uint8_t h = a->held;
    a->held = 0;
    for (uint32_t mode = 0; mode < AUTO_MODES; mode++)
        if (h & (1u << mode))
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

/* fork (mutex.c): the lost threads' queue nodes and counts go; the holder keeps the locks it
 * holds (`held`, its own bookkeeping, complete once it held the lock). */
static void auto_fork_child(lt_mutex_t *m, int held)
{
    struct auto_lock *a = LT_STATE(m, struct auto_lock);
    uint8_t h = held ? a->held : 0;
    shfl_fork_child_any(m, h & (1u << AUTO_QUEUE));
    __atomic_store_n(&a->word, (h & (1u << AUTO_BARGE)) ? 1u : 0u, __ATOMIC_RELAXED);
    __atomic_store_n(&a->waiting, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&a->fenced, 0, __ATOMIC_RELAXED); /* nobody sleeps: stores will do */
    if (!held)
        a->held = 0;
}

const struct lt_algo lt_algo_auto = {
    .name = "auto",
    .caps = LT_CAP_SUPPORTS_COND | LT_CAP_BLOCKING | LT_CAP_OVERSUB_SAFE,
    .counts = LT_STAT_BIT(LT_STAT_PARKED) | LT_STAT_BIT(LT_STAT_AUTO_TO_QUEUE) |
              LT_STAT_BIT(LT_STAT_AUTO_TO_BARGE) | LT_STAT_BIT(LT_STAT_AUTO_FENCED) |
              LT_STAT_BIT(LT_STAT_AUTO_UNFENCED),
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
