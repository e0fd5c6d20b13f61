/*
 * locktune-lockbench - the lock microbenchmark (RCL paper §5.3, digest-rcl.md §7.2).
 *
 * THREADS threads loop { enter the lock; the section of cs.h; leave; DELAY cycles of work }.
 * The run has three phases, announced through one read-mostly word:
 *
 *   WARMUP ──(--warmup s)──▶ MEASURE ──(--duration s)──▶ STOP
 *                            snapshot A                   snapshot B
 *
 * Each thread publishes its operation count in a line of its own after every section; the main
 * thread reads the counts at A and B, so throughput and fairness cover a window in which every
 * thread was already running (ShflLock/load-control practice: read the counters twice while the
 * threads run).  With --ops N every thread does N sections and the whole run is measured.
 *
 * What is measured beside throughput, without adding shared-memory traffic to the lock:
 *   - the admission order, from the rank each section reads off the head line (order.h);
 *   - handover latency: on one acquisition in P the previous holder stamps the TSC just before
 *     leaving and the next one just after entering, both in the head line the section touches
 *     anyway (cs.h); a handover is a sampled acquisition whose previous holder was another thread;
 *   - CPU time and context switches (getrusage) over the measured interval;
 *   - a core-to-core round trip just before and just after the run (roundtrip.h).
 * At the end every shared line's counter must equal the number of sections run.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "ck_peers.h"
#include "cpus.h"
#include "cs.h"
#include "json.h"
#include "locktune.h"
#include "options.h"
#include "order.h"
#include "roundtrip.h"
#include "stats.h"
#include "ticket.h"
#include "tsc.h"

#define SCHEMA         "locktune-lockbench/1"
#define ORDER_BUDGET   (UINT64_C(1) << 22) /* ranks noted, all threads together */
#define ORDER_CAP_MAX  (UINT64_C(1) << 16) /* ranks noted per thread */
#define HANDOVER_CAP   4096                /* latencies kept per thread */
#define CALIBRATE_SECS 0.05

enum { PHASE_WARMUP, PHASE_MEASURE, PHASE_STOP };

/* Each lock, and the phase word, on 128 bytes of its own (a pair of lines: the adjacent-line
 * prefetcher moves lines in pairs). */
static struct {
    _Alignas(128) _Atomic unsigned v;
} phase;
static struct {
    _Alignas(128) pthread_mutex_t m;
} plock = {PTHREAD_MUTEX_INITIALIZER};
static struct {
    _Alignas(128) lt_mutex_t m;
} ltlock;
static struct {
    _Alignas(128) struct lb_ticket t;
} tlock;
#ifdef LB_HAVE_CK
static struct lb_ck_locks cklocks;
static struct lb_ck_node *cknodes; /* one per worker */
#endif

struct worker {
    _Alignas(128) _Atomic uint64_t ops; /* published after every section */
    unsigned id;
    int cpu; /* pinned CPU, or -1 */
    pthread_t thread;
    uint64_t total;          /* sections run, all phases */
    uint64_t handovers;      /* sampled acquisitions whose previous holder was another thread */
    uint64_t same_owner;     /* ...and those where it was this thread again */
    uint64_t skewed;         /* handovers whose TSC stamps went backwards (cross-core skew) */
    uint64_t t_begin, t_end; /* TSC around the loop (--ops runs are timed by these) */
    struct lb_order_rec order;
    struct lb_reservoir handover;
};

static struct lb_options opt;
static struct lb_shared shared;
static struct lb_order order;
static struct worker *workers;
static pthread_barrier_t start;
static uint64_t ops_target; /* UINT64_MAX: run until STOP */
static volatile unsigned timeout_secs;

/* The section behind a function pointer the compiler cannot see through: what execute mode
 * costs the locks that have no lt_execute of their own. */
static void *(*volatile cs_indirect)(void *) = lb_cs;

static void check_rc(const char *what, int r)
{
    if (__builtin_expect(r != 0, 0))
        lb_die(1, "%s failed: %s", what, strerror(r));
}

static void note_handover(struct worker *w, const struct lb_cs_ctx *c)
{
    if (c->release_owner == LB_NO_OWNER)
        return; /* the very first acquisition */
    if (c->release_owner == w->id) {
        w->same_owner++;
        return;
    }
    w->handovers++;
    if (c->entry_tsc < c->release_tsc) {
        w->skewed++;
        return;
    }
    uint64_t d = c->entry_tsc - c->release_tsc;
    lb_reservoir_add(&w->handover, d > UINT32_MAX ? UINT32_MAX : (uint32_t)d);
}

/* Concurrency Kit's locks (ck_peers.h); never reached without LB_HAVE_CK (options.c refuses). */
static inline __attribute__((always_inline)) void ck_lock(struct worker *w, enum lb_lock lock)
{
#ifdef LB_HAVE_CK
    struct lb_ck_node *n = &cknodes[w->id];
    if (lock == LB_LOCK_CK_MCS)
        ck_spinlock_mcs_lock(&cklocks.mcs, &n->mcs);
    else if (lock == LB_LOCK_CK_CLH)
        ck_spinlock_clh_lock(&cklocks.clh, n->clh);
    else
        ck_spinlock_ticket_lock(&cklocks.ticket);
#else
    (void)w, (void)lock;
    abort();
#endif
}

static inline __attribute__((always_inline)) void ck_unlock(struct worker *w, enum lb_lock lock)
{
#ifdef LB_HAVE_CK
    struct lb_ck_node *n = &cknodes[w->id];
    if (lock == LB_LOCK_CK_MCS)
        ck_spinlock_mcs_unlock(&cklocks.mcs, &n->mcs);
    else if (lock == LB_LOCK_CK_CLH)
        ck_spinlock_clh_unlock(&n->clh);
    else
        ck_spinlock_ticket_unlock(&cklocks.ticket);
#else
    (void)w, (void)lock;
    abort();
#endif
}

/* The measured loop, specialised by the compiler for each (lock, mode) pair. */
static inline __attribute__((always_inline)) void
run_loop(struct worker *w, const enum lb_lock lock, const enum lb_mode mode)
{
    struct lb_cs_ctx c = {
        .sh = &shared,
        .tid = w->id,
        .sample_mask = opt.sample_period - 1,
        .release_owner = LB_NO_OWNER,
    };
    const uint64_t target = ops_target, delay = opt.delay, mask = opt.sample_period - 1;
    uint64_t n = 0;
    for (;;) {
        /* relaxed: the phase is a hint to stop and to start sampling; nothing is published
         * through it (the counts are read through their own atomics, the rest after join). */
        unsigned ph = atomic_load_explicit(&phase.v, memory_order_relaxed);
        if (ph == PHASE_STOP || n == target)
            break;
        if (mode == LB_MODE_EXECUTE) {
            switch (lock) {
            case LB_LOCK_LT:
                lt_execute(&ltlock.m, lb_cs, &c);
                break;
            case LB_LOCK_PTHREAD:
                check_rc("pthread_mutex_lock", pthread_mutex_lock(&plock.m));
                cs_indirect(&c);
                check_rc("pthread_mutex_unlock", pthread_mutex_unlock(&plock.m));
                break;
            case LB_LOCK_TICKET:
                lb_ticket_lock(&tlock.t);
                cs_indirect(&c);
                lb_ticket_unlock(&tlock.t);
                break;
            case LB_LOCK_CK_MCS:
            case LB_LOCK_CK_CLH:
            case LB_LOCK_CK_TICKET:
                ck_lock(w, lock);
                cs_indirect(&c);
                ck_unlock(w, lock);
                break;
            case LB_LOCK_NONE:
                cs_indirect(&c);
                break;
            }
        } else {
            switch (lock) {
            case LB_LOCK_LT:
                check_rc("lt_mutex_lock", lt_mutex_lock(&ltlock.m));
                lb_cs_run(&c);
                check_rc("lt_mutex_unlock", lt_mutex_unlock(&ltlock.m));
                break;
            case LB_LOCK_PTHREAD:
                check_rc("pthread_mutex_lock", pthread_mutex_lock(&plock.m));
                lb_cs_run(&c);
                check_rc("pthread_mutex_unlock", pthread_mutex_unlock(&plock.m));
                break;
            case LB_LOCK_TICKET:
                lb_ticket_lock(&tlock.t);
                lb_cs_run(&c);
                lb_ticket_unlock(&tlock.t);
                break;
            case LB_LOCK_CK_MCS:
            case LB_LOCK_CK_CLH:
            case LB_LOCK_CK_TICKET:
                ck_lock(w, lock);
                lb_cs_run(&c);
                ck_unlock(w, lock);
                break;
            case LB_LOCK_NONE:
                lb_cs_run(&c);
                break;
            }
        }
        n++;
        /* relaxed: a count read by the main thread for throughput; it orders nothing. */
        atomic_store_explicit(&w->ops, n, memory_order_relaxed);
        lb_order_note(&w->order, c.seq);
        if ((c.seq & mask) == 0 && ph == PHASE_MEASURE)
            note_handover(w, &c);
        lb_delay(delay);
    }
    w->total = n;
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    pthread_barrier_wait(&start);
    w->t_begin = lb_tsc_ordered();
    const int exec = opt.mode == LB_MODE_EXECUTE;
    switch (opt.lock) {
    case LB_LOCK_LT:
        exec ? run_loop(w, LB_LOCK_LT, LB_MODE_EXECUTE) : run_loop(w, LB_LOCK_LT, LB_MODE_LOCK);
        break;
    case LB_LOCK_PTHREAD:
        exec ? run_loop(w, LB_LOCK_PTHREAD, LB_MODE_EXECUTE)
             : run_loop(w, LB_LOCK_PTHREAD, LB_MODE_LOCK);
        break;
    case LB_LOCK_TICKET:
        exec ? run_loop(w, LB_LOCK_TICKET, LB_MODE_EXECUTE)
             : run_loop(w, LB_LOCK_TICKET, LB_MODE_LOCK);
        break;
    case LB_LOCK_NONE:
        exec ? run_loop(w, LB_LOCK_NONE, LB_MODE_EXECUTE) : run_loop(w, LB_LOCK_NONE, LB_MODE_LOCK);
        break;
    case LB_LOCK_CK_MCS:
        exec ? run_loop(w, LB_LOCK_CK_MCS, LB_MODE_EXECUTE)
             : run_loop(w, LB_LOCK_CK_MCS, LB_MODE_LOCK);
        break;
    case LB_LOCK_CK_CLH:
        exec ? run_loop(w, LB_LOCK_CK_CLH, LB_MODE_EXECUTE)
             : run_loop(w, LB_LOCK_CK_CLH, LB_MODE_LOCK);
        break;
    case LB_LOCK_CK_TICKET:
        exec ? run_loop(w, LB_LOCK_CK_TICKET, LB_MODE_EXECUTE)
             : run_loop(w, LB_LOCK_CK_TICKET, LB_MODE_LOCK);
        break;
    }
    w->t_end = lb_tsc_ordered();
    return NULL;
}

/* ---- the run ------------------------------------------------------------------------------- */

struct snapshot {
    double t;
    uint64_t *ops;
    struct rusage ru;
};

static void snap(struct snapshot *s)
{
    for (unsigned i = 0; i < opt.threads; i++)
        s->ops[i] = atomic_load_explicit(&workers[i].ops, memory_order_relaxed);
    s->t = lb_now();
    getrusage(RUSAGE_SELF, &s->ru);
}

static void sleep_until(double t)
{
    struct timespec ts = {.tv_sec = (time_t)t, .tv_nsec = (long)((t - (double)(time_t)t) * 1e9)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
        ;
}

static void on_alarm(int sig)
{
    (void)sig;
    char msg[200];
    int n = snprintf(msg, sizeof msg,
                     LB_PROG ": error: the run did not finish within %u s (a thread is stuck: "
                             "a lost wake-up or a deadlock in the lock?)\n",
                     timeout_secs);
    if (write(2, msg, (size_t)n) < 0)
        _exit(1);
    _exit(1);
}

static double tv(const struct timeval *t)
{
    return (double)t->tv_sec + (double)t->tv_usec * 1e-6;
}

/* The algorithm LOCKTUNE_ALGO asks for by default ("default=NAME"), or NULL. */
static const char *requested_algorithm(char *buf, size_t len)
{
    const char *env = getenv("LOCKTUNE_ALGO");
    if (env == NULL)
        return NULL;
    for (const char *p = env; *p;) {
        const char *end = strchr(p, ',');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        if (n > 8 && strncmp(p, "default=", 8) == 0 && n - 8 < len) {
            memcpy(buf, p + 8, n - 8);
            buf[n - 8] = '\0';
            return buf;
        }
        p += n + (end != NULL);
    }
    return NULL;
}

static void json_rt(struct lb_json *j, const char *key, const struct lb_rt *rt)
{
    lb_json_open(j, key, '{');
    lb_json_bool(j, "ok", rt->ok);
    lb_json_open(j, "cpus", '[');
    lb_json_i64(j, NULL, rt->cpu_a);
    lb_json_i64(j, NULL, rt->cpu_b);
    lb_json_close(j, ']');
    if (rt->ok) {
        lb_json_double(j, "ns_median", rt->ns_median);
        lb_json_double(j, "ns_min", rt->ns_min);
        lb_json_double(j, "ns_max", rt->ns_max);
        lb_json_double(j, "cycles_median", rt->cycles_median);
        lb_json_u64(j, "batches", rt->batches);
        lb_json_u64(j, "round_trips_per_batch", rt->per_batch);
    } else {
        lb_json_str(j, "why", rt->why);
    }
    lb_json_close(j, '}');
}

static void json_config(struct lb_json *j, const char *algorithm, const char *requested,
                        double tsc_hz)
{
    lb_json_str(j, "schema", SCHEMA);
    lb_json_open(j, "config", '{');
    lb_json_str(j, "mode", lb_mode_name(opt.mode));
    lb_json_str(j, "lock", lb_lock_name(opt.lock));
    lb_json_str(j, "algorithm", algorithm);
    lb_json_str(j, "algorithm_requested", requested);
    lb_json_u64(j, "threads", opt.threads);
    if (opt.ops) {
        lb_json_null(j, "duration_s");
        lb_json_u64(j, "ops_per_thread", opt.ops);
    } else {
        lb_json_double(j, "duration_s", opt.duration);
        lb_json_null(j, "ops_per_thread");
    }
    lb_json_double(j, "warmup_s", opt.warmup);
    lb_json_u64(j, "lines", opt.lines);
    lb_json_u64(j, "delay_cycles", opt.delay);
    lb_json_double(j, "delay_ns", (double)opt.delay / tsc_hz * 1e9);
    lb_json_str(j, "pin", lb_pin_name(opt.pin));
    lb_json_open(j, "cpus", '[');
    for (int i = 0; i < opt.cpus.n; i++)
        lb_json_i64(j, NULL, opt.cpus.cpu[i]);
    lb_json_close(j, ']');
    lb_json_u64(j, "window", opt.window);
    lb_json_u64(j, "sample_period", opt.sample_period);
    lb_json_u64(j, "seed", opt.seed);
    lb_json_close(j, '}');
    lb_json_open(j, "tsc", '{');
    lb_json_double(j, "hz", tsc_hz);
    lb_json_bool(j, "calibrated", opt.tsc_hz == 0);
    lb_json_bool(j, "hardware", LB_HAVE_TSC);
    lb_json_close(j, '}');
}

static void probe(struct lb_rt *rt, double tsc_hz)
{
    lb_roundtrip(opt.probe_cpus[0], opt.probe_cpus[1], opt.roundtrips, 10, tsc_hz, rt);
}

static int mode_roundtrip(double tsc_hz)
{
    struct lb_rt rt;
    lb_roundtrip(opt.probe_cpus[0], opt.probe_cpus[1], opt.roundtrips, 20, tsc_hz, &rt);
    if (opt.json) {
        struct lb_json j;
        lb_json_init(&j, stdout);
        lb_json_open(&j, NULL, '{');
        json_config(&j, NULL, NULL, tsc_hz);
        json_rt(&j, "roundtrip", &rt);
        lb_json_close(&j, '}');
    } else if (rt.ok) {
        printf("round trip CPU %d <-> CPU %d: %.1f ns median (%.1f-%.1f over %u batches of %lu), "
               "%.0f cycles\n",
               rt.cpu_a, rt.cpu_b, rt.ns_median, rt.ns_min, rt.ns_max, rt.batches, rt.per_batch,
               rt.cycles_median);
    }
    if (!rt.ok)
        lb_die(1, "round trip CPU %d <-> CPU %d: %s", rt.cpu_a, rt.cpu_b, rt.why);
    return 0;
}

static int mode_info(double tsc_hz, const char *algorithm, const char *requested)
{
    struct lb_cpus usable;
    lb_cpus_usable(&usable);
    if (!opt.json) {
        printf("lock %s, algorithm %s, TSC %.0f Hz, %d usable CPUs\n", lb_lock_name(opt.lock),
               algorithm ? algorithm : "-", tsc_hz, usable.n);
        return 0;
    }
    struct lb_json j;
    lb_json_init(&j, stdout);
    lb_json_open(&j, NULL, '{');
    json_config(&j, algorithm, requested, tsc_hz);
    lb_json_open(&j, "info", '{');
    lb_json_str(&j, "algorithm", algorithm);
    lb_json_u64(&j, "lt_mutex_bytes", sizeof(lt_mutex_t));
    lb_json_u64(&j, "pthread_mutex_bytes", sizeof(pthread_mutex_t));
    lb_json_open(&j, "usable_cpus", '[');
    for (int i = 0; i < usable.n; i++)
        lb_json_i64(&j, NULL, usable.cpu[i]);
    lb_json_close(&j, ']');
    lb_json_close(&j, '}');
    lb_json_close(&j, '}');
    return 0;
}

int main(int argc, char **argv)
{
    lb_options_parse(argc, argv, &opt);

    /* --algo: liblocktune may read LOCKTUNE_ALGO before main, so set it and start again. */
    if (opt.algo) {
        char want[256];
        snprintf(want, sizeof want, "default=%s", opt.algo);
        const char *cur = getenv("LOCKTUNE_ALGO");
        if (cur == NULL || strcmp(cur, want) != 0) {
            setenv("LOCKTUNE_ALGO", want, 1);
            execv("/proc/self/exe", argv);
            lb_die(1, "cannot run /proc/self/exe again with LOCKTUNE_ALGO=%s: %s", want,
                   strerror(errno));
        }
    }

    double tsc_hz = opt.tsc_hz ? opt.tsc_hz : lb_tsc_calibrate(CALIBRATE_SECS);
    if (opt.mode == LB_MODE_ROUNDTRIP)
        return mode_roundtrip(tsc_hz);

    /* Bind the lt lock now, so that an unknown algorithm is a usage error before any work. */
    char reqbuf[128];
    const char *requested = NULL, *algorithm = NULL;
    if (opt.lock == LB_LOCK_LT) {
        check_rc("lt_mutex_init", lt_mutex_init(&ltlock.m, NULL, LT_SITE_UNKNOWN));
        algorithm = lt_mutex_algorithm(&ltlock.m);
        requested = requested_algorithm(reqbuf, sizeof reqbuf);
        /* NAME:POLICY binds NAME under that waiting policy (docs/config.md). */
        size_t base = requested ? strcspn(requested, ":") : 0;
        if (requested && (algorithm == NULL || strlen(algorithm) != base ||
                          strncmp(requested, algorithm, base) != 0))
            lb_die(2,
                   "LOCKTUNE_ALGO asks for algorithm '%s' but liblocktune bound '%s': this "
                   "liblocktune has no algorithm '%s'",
                   requested, algorithm ? algorithm : "(none)", requested);
    }
    if (opt.mode == LB_MODE_INFO)
        return mode_info(tsc_hz, algorithm, requested);

    if ((uint64_t)opt.threads * 4 * opt.window > (UINT64_C(1) << 25))
        lb_die(2,
               "--window %" PRIu64 " with %u threads needs too much memory (4 windows of "
               "ranks per thread); use a smaller window",
               opt.window, opt.threads);
    if (lb_shared_init(&shared, opt.lines, opt.seed) != 0)
        lb_die(1, "out of memory for %u shared lines", opt.lines);
    lb_order_init(&order, opt.window);
    workers = aligned_alloc(128, opt.threads * sizeof *workers);
#ifdef LB_HAVE_CK
    cknodes = aligned_alloc(128, opt.threads * sizeof *cknodes);
    if (!cknodes || lb_ck_init(&cklocks, cknodes, opt.threads) != 0)
        lb_die(1, "out of memory");
#endif
    uint64_t *snap_a = calloc(opt.threads, sizeof *snap_a);
    uint64_t *snap_b = calloc(opt.threads, sizeof *snap_b);
    uint64_t *measured = calloc(opt.threads, sizeof *measured);
    if (workers == NULL || snap_a == NULL || snap_b == NULL || measured == NULL)
        lb_die(1, "out of memory for %u threads", opt.threads);
    memset(workers, 0, opt.threads * sizeof *workers);
    size_t cap = ORDER_BUDGET / opt.threads;
    cap = cap > ORDER_CAP_MAX ? ORDER_CAP_MAX : cap;
    for (unsigned i = 0; i < opt.threads; i++) {
        workers[i].id = i;
        workers[i].cpu = opt.pin == LB_PIN_RR ? opt.cpus.cpu[i % (unsigned)opt.cpus.n] : -1;
        if (lb_order_rec_init(&workers[i].order, &order, cap) != 0 ||
            lb_reservoir_init(&workers[i].handover, HANDOVER_CAP, 0x9e3779b97f4a7c15u * (i + 1)))
            lb_die(1, "out of memory for %u threads' samples", opt.threads);
    }
    ops_target = opt.ops ? opt.ops : UINT64_MAX;

    struct lb_rt before = {0}, after = {0};
    if (opt.probe)
        probe(&before, tsc_hz);

    timeout_secs = (unsigned)(opt.timeout ? opt.timeout
                              : opt.ops   ? 300
                                          : opt.warmup + opt.duration + 60);
    signal(SIGALRM, on_alarm);
    alarm(timeout_secs);

    atomic_store_explicit(&phase.v, opt.ops ? PHASE_MEASURE : PHASE_WARMUP, memory_order_relaxed);
    check_rc("pthread_barrier_init", pthread_barrier_init(&start, NULL, opt.threads + 1));
    for (unsigned i = 0; i < opt.threads; i++) {
        int r =
            lb_cpus_thread(&workers[i].thread, workers[i].cpu, &opt.cpus, worker_main, &workers[i]);
        if (r != 0)
            lb_die(1, "cannot start thread %u of %u%s: %s", i + 1, opt.threads,
                   workers[i].cpu >= 0 ? " (pinning)" : "", strerror(r));
    }
    struct snapshot a = {.ops = snap_a}, b = {.ops = snap_b};
    pthread_barrier_wait(&start);
    double t_go = lb_now();
    if (opt.ops) {
        getrusage(RUSAGE_SELF, &a.ru); /* the counts stay 0: every section is measured */
        a.t = t_go;
        for (unsigned i = 0; i < opt.threads; i++)
            pthread_join(workers[i].thread, NULL);
        snap(&b);
    } else {
        sleep_until(t_go + opt.warmup);
        /* relaxed: see run_loop. */
        atomic_store_explicit(&phase.v, PHASE_MEASURE, memory_order_relaxed);
        snap(&a);
        sleep_until(a.t + opt.duration);
        snap(&b);
        atomic_store_explicit(&phase.v, PHASE_STOP, memory_order_relaxed);
        for (unsigned i = 0; i < opt.threads; i++)
            pthread_join(workers[i].thread, NULL);
    }
    alarm(0);
    if (opt.probe)
        probe(&after, tsc_hz);

    /* ---- results ---- */
    uint64_t total_all = 0, ops = 0, from = 0, to = 0;
    for (unsigned i = 0; i < opt.threads; i++) {
        total_all += workers[i].total;
        measured[i] = snap_b[i] - snap_a[i];
        ops += measured[i];
        from += snap_a[i];
        to += snap_b[i];
    }
    double elapsed = b.t - a.t;
    if (opt.ops) { /* from the first thread's start to the last one's end */
        uint64_t t0 = UINT64_MAX, t1 = 0;
        for (unsigned i = 0; i < opt.threads; i++) {
            t0 = workers[i].t_begin < t0 ? workers[i].t_begin : t0;
            t1 = workers[i].t_end > t1 ? workers[i].t_end : t1;
        }
        elapsed = (double)(t1 - t0) / tsc_hz;
    }
    double thr = ops / elapsed;
    double cycles_per_op = elapsed * tsc_hz / (double)ops;
    /* The RCL paper's "execution time of a critical section": per thread, the time from one
     * section's start to the next one's, less its own delay (it includes the waiting). */
    double latency = cycles_per_op * opt.threads - (double)opt.delay;

    int bad_line;
    uint64_t bad_value;
    int ok = lb_shared_check(&shared, total_all, &bad_line, &bad_value) == 0;

    struct lb_lwss lw;
    {
        struct lb_order_rec *recs = malloc(opt.threads * sizeof *recs);
        if (recs == NULL)
            lb_die(1, "out of memory");
        for (unsigned i = 0; i < opt.threads; i++)
            recs[i] = workers[i].order;
        if (lb_order_analyse(&order, recs, opt.threads, from, to, &lw) != 0)
            lb_die(1, "out of memory analysing the acquisition order");
        free(recs);
    }

    struct lb_reservoir *res = malloc(opt.threads * sizeof *res);
    if (res == NULL)
        lb_die(1, "out of memory");
    uint64_t handovers = 0, same = 0, skewed = 0;
    for (unsigned i = 0; i < opt.threads; i++) {
        res[i] = workers[i].handover;
        handovers += workers[i].handovers;
        same += workers[i].same_owner;
        skewed += workers[i].skewed;
    }
    struct lb_quantiles hq;
    if (lb_quantiles(res, opt.threads, &hq) != 0)
        lb_die(1, "out of memory");
    free(res);

    double cpu_user = tv(&b.ru.ru_utime) - tv(&a.ru.ru_utime);
    double cpu_sys = tv(&b.ru.ru_stime) - tv(&a.ru.ru_stime);

    if (opt.json) {
        struct lb_json j;
        lb_json_init(&j, stdout);
        lb_json_open(&j, NULL, '{');
        json_config(&j, algorithm, requested, tsc_hz);

        lb_json_open(&j, "run", '{');
        lb_json_double(&j, "elapsed_s", elapsed);
        lb_json_u64(&j, "ops", ops);
        lb_json_u64(&j, "ops_all_phases", total_all);
        lb_json_double(&j, "throughput_ops_s", thr);
        lb_json_double(&j, "ns_per_op", 1e9 / thr);
        lb_json_double(&j, "cycles_per_op", cycles_per_op);
        lb_json_double(&j, "cs_latency_cycles", latency);
        lb_json_open(&j, "per_thread_ops", '[');
        for (unsigned i = 0; i < opt.threads; i++)
            lb_json_u64(&j, NULL, measured[i]);
        lb_json_close(&j, ']');
        lb_json_close(&j, '}');

        lb_json_open(&j, "fairness", '{');
        lb_json_double(&j, "rsd", lb_rsd(measured, opt.threads));
        lb_json_double(&j, "gini", lb_gini(measured, opt.threads));
        lb_json_double(&j, "min_max_ratio", lb_min_max_ratio(measured, opt.threads));
        lb_json_double(&j, "fairness_factor", lb_fairness_factor(measured, opt.threads));
        lb_json_close(&j, '}');

        lb_json_open(&j, "distinct_threads", '{');
        lb_json_u64(&j, "window", opt.window);
        lb_json_u64(&j, "windows", lw.windows);
        if (lw.windows) {
            lb_json_double(&j, "mean", lw.mean);
            lb_json_u64(&j, "min", lw.min);
            lb_json_u64(&j, "max", lw.max);
        } else {
            lb_json_null(&j, "mean");
            lb_json_null(&j, "min");
            lb_json_null(&j, "max");
        }
        lb_json_u64(&j, "sampling_stride", lw.stride);
        lb_json_u64(&j, "incomplete_windows", lw.incomplete);
        lb_json_u64(&j, "duplicate_ranks", lw.duplicates);
        lb_json_close(&j, '}');

        lb_json_open(&j, "handover", '{');
        lb_json_u64(&j, "sampled", handovers + same);
        lb_json_u64(&j, "handovers", handovers);
        lb_json_u64(&j, "same_thread", same);
        lb_json_double(&j, "same_thread_fraction",
                       handovers + same ? (double)same / (double)(handovers + same) : 0);
        lb_json_u64(&j, "clock_skewed", skewed);
        const char *units[2] = {"cycles", "ns"};
        for (int u = 0; u < 2; u++) {
            double k = u ? 1e9 / tsc_hz : 1;
            lb_json_open(&j, units[u], '{');
            if (hq.samples) {
                lb_json_double(&j, "min", hq.min * k);
                lb_json_double(&j, "median", hq.p50 * k);
                lb_json_double(&j, "mean", hq.mean * k);
                lb_json_double(&j, "p90", hq.p90 * k);
                lb_json_double(&j, "p99", hq.p99 * k);
                lb_json_double(&j, "max", hq.max * k);
            }
            lb_json_close(&j, '}');
        }
        lb_json_close(&j, '}');

        lb_json_open(&j, "cpu", '{');
        lb_json_double(&j, "utilisation", (cpu_user + cpu_sys) / elapsed);
        lb_json_double(&j, "user_s", cpu_user);
        lb_json_double(&j, "system_s", cpu_sys);
        lb_json_i64(&j, "voluntary_switches", b.ru.ru_nvcsw - a.ru.ru_nvcsw);
        lb_json_i64(&j, "involuntary_switches", b.ru.ru_nivcsw - a.ru.ru_nivcsw);
        lb_json_close(&j, '}');

        if (opt.probe) {
            lb_json_open(&j, "probe", '{');
            json_rt(&j, "before", &before);
            json_rt(&j, "after", &after);
            lb_json_close(&j, '}');
        } else {
            lb_json_null(&j, "probe");
        }

        lb_json_open(&j, "check", '{');
        lb_json_bool(&j, "ok", ok);
        lb_json_u64(&j, "expected", total_all);
        if (!ok) {
            lb_json_i64(&j, "line", bad_line);
            lb_json_u64(&j, "counted", bad_value);
        }
        lb_json_close(&j, '}');
        lb_json_close(&j, '}');
    } else {
        printf("%s%s%s, %s, %u threads, %u lines, delay %" PRIu64 " cycles: %.3f M ops/s, "
               "%.1f ns/op\n",
               lb_lock_name(opt.lock), algorithm ? ":" : "", algorithm ? algorithm : "",
               lb_mode_name(opt.mode), opt.threads, opt.lines, opt.delay, thr / 1e6, 1e9 / thr);
        printf("  fairness: rsd %.3f, gini %.3f, min/max %.3f; distinct threads per %" PRIu64
               " acquisitions: %.2f\n",
               lb_rsd(measured, opt.threads), lb_gini(measured, opt.threads),
               lb_min_max_ratio(measured, opt.threads), opt.window, lw.mean);
        printf("  handover: median %.0f ns, p99 %.0f ns; same thread again %.1f%%; CPU %.2f\n",
               hq.p50 * 1e9 / tsc_hz, hq.p99 * 1e9 / tsc_hz,
               handovers + same ? 100.0 * (double)same / (double)(handovers + same) : 0.0,
               (cpu_user + cpu_sys) / elapsed);
        if (opt.probe && before.ok && after.ok)
            printf("  round trip: %.1f ns before, %.1f ns after\n", before.ns_median,
                   after.ns_median);
    }
    fflush(stdout);
    for (unsigned i = 0; i < opt.threads; i++) {
        lb_order_rec_destroy(&workers[i].order);
        lb_reservoir_destroy(&workers[i].handover);
    }
    free(workers);
    free(snap_a);
    free(snap_b);
    free(measured);
    lb_shared_destroy(&shared);
    pthread_barrier_destroy(&start);
    if (opt.lock == LB_LOCK_LT)
        lt_mutex_destroy(&ltlock.m);
    if (!ok) {
        if (bad_line < 0)
            lb_die(1,
                   "mutual exclusion failed: the head line counted %" PRIu64
                   " acquisitions, %" PRIu64 " sections ran",
                   bad_value, total_all);
        lb_die(1,
               "mutual exclusion failed: line %d of %u counted %" PRIu64 " updates, %" PRIu64
               " sections ran",
               bad_line + 1, opt.lines, bad_value, total_all);
    }
    return 0;
}
