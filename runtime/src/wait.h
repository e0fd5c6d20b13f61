/*
 * wait.h - how a thread waits: the waiting policies every algorithm uses.
 *
 *   LT_WAIT_SPIN   PAUSE in a loop.  Once a wait has lasted the spin budget, the waiter also
 *                  yields the CPU between polls: with more threads than CPUs the thread it waits
 *                  for may be waiting for this very CPU.  It never sleeps in the kernel, so a
 *                  FIFO lock on this policy still collapses when threads outnumber CPUs (the
 *                  successor it hands to may be descheduled); the yield only keeps the machine
 *                  usable meanwhile.
 *   LT_WAIT_PARK   spin-then-park: PAUSE for the spin budget, then sleep on a futex until a
 *                  waker changes the wait word.  Needs a word per waiter (a queue node).
 *   LT_WAIT_YIELD  sched_yield() between polls from the first poll.
 *
 * The spin budget is what a parked waiter costs on this machine: the time from FUTEX_WAKE until
 * the woken thread runs, while the waker keeps its CPU (measured once per process by
 * lt_wait_calibrate(), median of 31 hand-overs).  Spinning that long before parking costs at
 * most twice the optimum (Karlin et al.; the Malthusian paper, section 5.1).  LOCKTUNE_SPIN_NS
 * overrides it.
 *
 * A wait word for LT_WAIT_PARK holds LT_WAITING while its owner waits, LT_PARKED while it
 * sleeps, and any other value (chosen by the algorithm) once granted:
 *
 *   WAITING --(waiter: budget spent, CAS)--> PARKED --futex_wait--.
 *      |                                        |                 |
 *      +--(waker: XCHG to v)--> v <--(waker: XCHG to v, then futex_wake)
 *
 * The waker's exchange reads the old value, so it knows whether to wake (no lost wake-up: the
 * kernel re-checks the word before sleeping).
 */
#ifndef LT_WAIT_H
#define LT_WAIT_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

enum lt_wait_policy {
    LT_WAIT_SPIN,
    LT_WAIT_PARK,
    LT_WAIT_YIELD,
};

enum {
    LT_WAITING = 0,
    LT_PARKED = 1,
    LT_GRANTED = 2, /* first value an algorithm may use for "granted" */
};

/* The polite-spin instruction. */
static inline void lt_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield" ::: "memory");
#else
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
#endif
}

/* Monotonic nanoseconds (vDSO clock_gettime: ~20 ns). */
static inline uint64_t lt_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The state of one busy-wait. */
struct lt_spin {
    uint32_t polls;
    uint8_t over; /* the spin budget is spent */
    uint64_t start_ns;
};
#define LT_SPIN_INIT                                                                               \
    {                                                                                              \
        0, 0, 0                                                                                    \
    }

bool lt_spin_check(struct lt_spin *s, enum lt_wait_policy p);

/* One poll of a busy-wait under policy p.  Returns true once the spin budget is spent (an
 * LT_WAIT_PARK caller then parks; the others have already yielded as their policy says). */
static inline bool lt_spin_poll(struct lt_spin *s, enum lt_wait_policy p)
{
    lt_cpu_relax();
    if (p == LT_WAIT_YIELD || (++s->polls & 15) == 0)
        return lt_spin_check(s, p); /* the clock is read once every 16 polls */
    return s->over;
}

/* Wait until *w is neither LT_WAITING nor LT_PARKED, under policy p; returns that value with
 * acquire order.  `site` is for the statistics (parked waits). */
uint32_t lt_wait_word(uint32_t *w, enum lt_wait_policy p, int site);

/* Sleep while *w == parked (the caller has just moved *w there by CAS).  Counts a park. */
void lt_park(uint32_t *w, uint32_t parked, int site);

/* FUTEX_WAKE the waiter sleeping on w (out of line: the system call is the slow path). */
void lt_wake_parked(uint32_t *w);

/* Grant a waiter that waits in lt_wait_word: store v with release order, and wake the waiter
 * if it sleeps.  Returns true when a wake-up system call was needed. */
static inline bool lt_wake_word(uint32_t *w, uint32_t v)
{
    /* release: the new owner sees everything the granter wrote in its critical section. */
    if (__atomic_exchange_n(w, v, __ATOMIC_RELEASE) != LT_PARKED)
        return false;
    lt_wake_parked(w);
    return true;
}

/* The spin budget in ns, and where it came from ("calibrated", "LOCKTUNE_SPIN_NS", "default"). */
uint64_t lt_spin_budget_ns(void);
const char *lt_spin_budget_source(void);
/* Measure the park/unpark cost once (later calls return at once).  Called when the first lock
 * is bound to an algorithm that waits in the runtime (not `posix`). */
void lt_wait_calibrate(void);
/* LOCKTUNE_SPIN_NS (config.c): fixes the budget and disables calibration. */
void lt_wait_set_budget(uint64_t ns, const char *source);
/* The calibration's measure: median FUTEX_WAKE-to-running latency, ns (0: not measured). */
uint64_t lt_wait_unpark_ns(void);

#endif
