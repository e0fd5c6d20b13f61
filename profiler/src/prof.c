/*
 * prof.c - liblocktune-prof.so's life cycle: process initialisation, thread exit, fork,
 * and the end stamp at exit.  The wrappers are in interpose.c.
 *
 * Environment (set by `locktune profile`):
 *   LOCKTUNE_PROF_DIR    directory for the raw file; unset: record nothing, pass through
 *   LOCKTUNE_PMU_EVENT   "off", a libpfm4 event name, or empty for the CPU's default
 *   LOCKTUNE_PROF_CLOCK  "mono" forces CLOCK_MONOTONIC instead of the TSC
 *   LOCKTUNE_PROF_SAMPLE time 1 in N uncontended critical sections (default 16; 1 times
 *                        every one; layout.h, "Timing")
 *
 * Initialisation states:  0 (not started) -> 1 (running, in `init_thread`) -> 2 (done).
 * The first wrapper call or the constructor, whichever comes first, runs it; a lock call
 * made from inside it (by dlsym, libpfm4, backtrace) passes straight through.
 */
#define _GNU_SOURCE
#include "prof.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "clock.h"
#include "locktab.h"
#include "real.h"
#include "region.h"
#include "sites.h"
#include "spin.h"
#include "tripwire.h"

#define LTP_DEFAULT_SAMPLE 16

int ltp_clock_kind = LTP_CLOCK_MONO;
int ltp_recording;
int ltp_pmu_counting;
struct ltp_pmu_probe ltp_pmu_event;

static int init_state;
static pid_t init_thread;
static pthread_key_t exit_key;
static int exit_key_ok;
extern int ltp_site_lock_for_fork(int how);

static void on_thread_exit(void *arg)
{
    (void)arg;
    ltp_thread_retire(&ltp_tls);
}

void ltp_thread_key_set(struct ltp_tls *t)
{
    if (exit_key_ok)
        pthread_setspecific(exit_key, t);
}

/* fork(): no profiler lock may be held across it, and the child gets a file of its own.
 * The locks are only tried (fork() is async-signal-safe: a handler may fork while this very
 * thread holds one); the child, alone with its copy, frees them whatever happened. */
static __thread int fork_held_sites, fork_held_alloc; /* per forking thread */

static void before_fork(void)
{
    fork_held_sites = ltp_site_lock_for_fork(1);
    fork_held_alloc = ltp_spin_trylock(&ltp_alloc_lock, 1000);
}

static void after_fork_parent(void)
{
    if (fork_held_alloc)
        ltp_spin_unlock(&ltp_alloc_lock);
    if (fork_held_sites)
        ltp_site_lock_for_fork(0);
}

static void after_fork_child(void)
{
    ltp_alloc_lock = 0; /* no other thread exists to hold them */
    ltp_site_lock_for_fork(-1);
    ltp_thread_forget(&ltp_tls);
    if (ltp_region_fork_child() != 0)
        ltp_recording = 0;
    /* The forking thread re-registers (in the new file) at its next lock call. */
}

static void setup_pmu(void)
{
    struct ltp_raw_header *h = ltp_hdr();
    const char *ev = getenv("LOCKTUNE_PMU_EVENT");
    if (ev && strcmp(ev, "off") == 0) {
        snprintf(h->pmu_reason, sizeof h->pmu_reason, "disabled (--pmu off)");
        return;
    }
    ltp_pmu_probe(ev && *ev ? ev : NULL, 0, &ltp_pmu_event);
    snprintf(h->pmu_event, sizeof h->pmu_event, "%s", ltp_pmu_event.event);
    h->pmu_available = (uint64_t)ltp_pmu_event.available;
    h->pmu_open_errno = (uint64_t)ltp_pmu_event.open_errno;
    h->pmu_pfm_error = (uint64_t)(int64_t)ltp_pmu_event.pfm_error;
    h->pmu_type = ltp_pmu_event.type;
    h->pmu_config = ltp_pmu_event.config;
    if (!ltp_pmu_event.available) {
        snprintf(h->pmu_reason, sizeof h->pmu_reason, "%s", ltp_pmu_event.reason);
        return;
    }
    /* The event opens; per-critical-section counting also needs RDPMC from user space. */
    struct ltp_pmu_thread t;
    if (ltp_pmu_thread_open(&ltp_pmu_event, &t, h->pmu_reason, sizeof h->pmu_reason) != 0)
        return;
    ltp_pmu_thread_close(&t);
    ltp_pmu_counting = 1;
    h->flags |= LTP_RAW_PMU_COUNTING;
}

static void init_process(void)
{
    if (ltp_real_resolve() != 0)
        return; /* cannot even pass through: nothing sensible to do */
    const char *dir = getenv("LOCKTUNE_PROF_DIR");
    if (!dir || !*dir)
        return;
    const char *clock = getenv("LOCKTUNE_PROF_CLOCK");
    ltp_clock_kind = ltp_tsc_invariant() && !(clock && strcmp(clock, "mono") == 0) ? LTP_CLOCK_TSC
                                                                                   : LTP_CLOCK_MONO;
    const char *sample = getenv("LOCKTUNE_PROF_SAMPLE");
    long period = sample && *sample ? strtol(sample, NULL, 10) : LTP_DEFAULT_SAMPLE;
    ltp_sample_period = period >= 1 && period <= 1000000 ? (uint32_t)period : LTP_DEFAULT_SAMPLE;
    if (ltp_region_open(dir) != 0)
        return;
    ltp_hdr()->clock = (uint64_t)ltp_clock_kind;
    ltp_hdr()->sample_period = ltp_sample_period;
    ltp_hdr()->exact_first = LTP_EXACT_FIRST;
    const char *why;
    ltp_hdr()->tripwire = ltp_tripwire_setup(&why) == 0;
    snprintf(ltp_hdr()->tripwire_reason, sizeof ltp_hdr()->tripwire_reason, "%s", why);
    ltp_sites_setup();
    exit_key_ok = pthread_key_create(&exit_key, on_thread_exit) == 0;
    pthread_atfork(before_fork, after_fork_parent, after_fork_child);
    setup_pmu();
    ltp_recording = 1;
}

int ltp_global_done(void)
{
    return __atomic_load_n(&init_state, __ATOMIC_ACQUIRE) == 2;
}

int ltp_global_init(void)
{
    int s = __atomic_load_n(&init_state, __ATOMIC_ACQUIRE);
    if (s == 2)
        return 1;
    pid_t me = (pid_t)syscall(SYS_gettid);
    int expected = 0;
    if (__atomic_compare_exchange_n(&init_state, &expected, 1, 0, __ATOMIC_ACQ_REL,
                                    __ATOMIC_ACQUIRE)) {
        init_thread = me;
        int saved = ltp_busy_enter();
        init_process();
        ltp_busy_exit(saved);
        /* release: everything init_process() set is visible to whoever sees 2 */
        __atomic_store_n(&init_state, 2, __ATOMIC_RELEASE);
        return 1;
    }
    if (init_thread == me)
        return 0;
    while (__atomic_load_n(&init_state, __ATOMIC_ACQUIRE) != 2)
        sched_yield();
    return 1;
}

__attribute__((constructor)) static void ltp_prof_start(void)
{
    struct ltp_tls *t = ltp_enter(); /* initialise the process, register the main thread */
    if (t && ltp_recording) {
        /* before the program runs a line: no other thread exists yet */
        ltp_sample_calibrate(t);
        ltp_hdr()->sample_bias = (uint64_t)ltp_sample_bias;
        ltp_hdr()->sample_bias_hold = (uint64_t)ltp_sample_bias_hold;
        ltp_hdr()->sample_bias_rounds = ltp_sample_bias_rounds;
        ltp_hdr()->timed_bias = (uint64_t)ltp_timed_bias;
    }
}

__attribute__((destructor)) static void ltp_prof_stop(void)
{
    if (!ltp_recording || !ltp_base)
        return;
    struct ltp_raw_header *h = ltp_hdr();
    h->end_ticks = ltp_now();
    h->end_mono_ns = ltp_mono_ns();
    /* The threads still alive: their time on and off a CPU so far (layout.h, "Timing"). */
    int saved = ltp_busy_enter();
    /* Only try: exit() may come from a signal handler that interrupted this very thread
     * while it held the lock. */
    if (ltp_spin_trylock(&ltp_alloc_lock, 1000)) {
        for (uint64_t o = h->records; o; o = ((struct ltp_raw_record *)ltp_at(o))->next) {
            struct ltp_raw_record *r = ltp_at(o);
            if (r->serial && r->tid)
                ltp_sched_read(r, r->tid);
        }
        ltp_spin_unlock(&ltp_alloc_lock);
    }
    ltp_busy_exit(saved);
    __atomic_fetch_or(&h->flags, LTP_RAW_FINISHED, __ATOMIC_RELEASE);
}
