/*
 * options.c - command-line parsing for locktune-lockbench (see options.h).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cs.h"
#include "options.h"

static const char usage[] =
    "Usage: " LB_PROG " [OPTIONS]\n"
    "\n"
    "  The lock microbenchmark of the RCL paper: THREADS threads repeatedly run a critical\n"
    "  section that read-modify-writes LINES shared, non-contiguous cache lines (dependent\n"
    "  accesses), with DELAY cycles of work between sections.  Prints throughput, per-thread\n"
    "  fairness, distinct threads per window of acquisitions and handover latency.\n"
    "\n"
    "What runs:\n"
    "  --mode lock|execute|sequential|roundtrip|info\n"
    "                        lock: lock, section, unlock (default); execute: the section as a\n"
    "                        function run by lt_execute (delegating algorithms want this);\n"
    "                        sequential: one thread, no lock (the section's own rate);\n"
    "                        roundtrip: the core-to-core round trip alone; info: the setup\n"
    "  --lock pthread|lt|ticket|none|ck-mcs|ck-clh|ck-ticket\n"
    "                        pthread: glibc pthread_mutex_t called directly (default);\n"
    "                        lt: lt_mutex_t with the algorithm LOCKTUNE_ALGO names;\n"
    "                        ticket: a bare ticket lock; none: no lock (the check must fail);\n"
    "                        ck-*: Concurrency Kit's spinlocks, the peers (libck-dev)\n"
    "  --algo NAME           run lt with algorithm NAME (sets LOCKTUNE_ALGO=default=NAME)\n"
    "\n"
    "Workload:\n"
    "  --threads N           threads (default 2)\n"
    "  --duration SECONDS    measured interval (default 1)\n"
    "  --warmup SECONDS      before the measured interval (default min(0.2, duration/5))\n"
    "  --ops N               instead of a duration: N sections per thread, all measured\n"
    "  --lines K             shared cache lines per section, 0-1024 (default 1)\n"
    "  --delay CYCLES        TSC cycles of work between sections (default 100)\n"
    "\n"
    "Placement:\n"
    "  --pin auto|none|rr    rr: thread i on the i-th CPU (mod n); none: float; auto: rr when\n"
    "                        threads <= CPUs, else none (default)\n"
    "  --cpus LIST           the CPUs to use, e.g. 0-3,6 (default: all usable)\n"
    "  --probe-cpus A,B      the round-trip probe's CPUs (default: the first two)\n"
    "  --no-probe            no round-trip probe before and after the run\n"
    "  --roundtrips N        round trips per probe (default 20000; 200000 in roundtrip mode)\n"
    "\n"
    "Measurement:\n"
    "  --window W            acquisitions per distinct-thread window (default 1000)\n"
    "  --sample-period P     sample the handover every P acquisitions, a power of two (64)\n"
    "  --tsc-hz HZ           TSC rate (default: calibrated at start, 50 ms)\n"
    "  --timeout SECONDS     give up (exit 1) if the run has not finished by then\n"
    "  --seed N              shuffle of the shared lines (default 1)\n"
    "  --json                one JSON document on stdout (default: a short summary)\n"
    "  -h, --help            this help\n"
    "\n"
    "Exit status: 0 ok, 1 the run failed (lost updates, a stuck thread), 2 bad usage or an\n"
    "algorithm this liblocktune does not have.\n";

void lb_die(int code, const char *fmt, ...)
{
    va_list ap;
    fflush(stdout);
    fputs(LB_PROG ": error: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(code);
}

static const char *const mode_names[] = {"lock", "execute", "sequential", "roundtrip", "info"};
static const char *const lock_names[] = {"pthread", "lt",     "ticket",   "none",
                                         "ck-mcs",  "ck-clh", "ck-ticket"};
static const char *const pin_names[] = {"auto", "none", "rr"};

const char *lb_mode_name(enum lb_mode m)
{
    return mode_names[m];
}

const char *lb_lock_name(enum lb_lock l)
{
    return lock_names[l];
}

const char *lb_pin_name(enum lb_pin p)
{
    return pin_names[p];
}

static int choice(const char *opt, const char *arg, const char *const *names, int n)
{
    for (int i = 0; i < n; i++)
        if (strcmp(arg, names[i]) == 0)
            return i;
    char list[128] = "";
    for (int i = 0; i < n; i++) {
        strcat(list, names[i]);
        if (i + 1 < n)
            strcat(list, "|");
    }
    lb_die(2, "%s: expected %s, got '%s'", opt, list, arg);
}

static uint64_t integer(const char *opt, const char *arg, uint64_t lo, uint64_t hi)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(arg, &end, 10);
    if (arg[0] == '-' || arg[0] == '\0' || *end || errno || v < lo || v > hi)
        lb_die(2, "%s: expected an integer from %llu to %llu, got '%s'", opt,
               (unsigned long long)lo, (unsigned long long)hi, arg);
    return v;
}

static double seconds(const char *opt, const char *arg, double lo, double hi)
{
    char *end;
    errno = 0;
    double v = strtod(arg, &end);
    if (arg[0] == '\0' || *end || errno || !isfinite(v) || v < lo || v > hi)
        lb_die(2, "%s: expected a number from %g to %g, got '%s'", opt, lo, hi, arg);
    return v;
}

enum {
    OPT_MODE = 256,
    OPT_LOCK,
    OPT_ALGO,
    OPT_THREADS,
    OPT_DURATION,
    OPT_WARMUP,
    OPT_OPS,
    OPT_LINES,
    OPT_DELAY,
    OPT_PIN,
    OPT_CPUS,
    OPT_PROBE_CPUS,
    OPT_NO_PROBE,
    OPT_ROUNDTRIPS,
    OPT_WINDOW,
    OPT_SAMPLE,
    OPT_TSC,
    OPT_TIMEOUT,
    OPT_SEED,
    OPT_JSON,
};

static const struct option longopts[] = {
    {"mode", required_argument, NULL, OPT_MODE},
    {"lock", required_argument, NULL, OPT_LOCK},
    {"algo", required_argument, NULL, OPT_ALGO},
    {"threads", required_argument, NULL, OPT_THREADS},
    {"duration", required_argument, NULL, OPT_DURATION},
    {"warmup", required_argument, NULL, OPT_WARMUP},
    {"ops", required_argument, NULL, OPT_OPS},
    {"lines", required_argument, NULL, OPT_LINES},
    {"delay", required_argument, NULL, OPT_DELAY},
    {"pin", required_argument, NULL, OPT_PIN},
    {"cpus", required_argument, NULL, OPT_CPUS},
    {"probe-cpus", required_argument, NULL, OPT_PROBE_CPUS},
    {"no-probe", no_argument, NULL, OPT_NO_PROBE},
    {"roundtrips", required_argument, NULL, OPT_ROUNDTRIPS},
    {"window", required_argument, NULL, OPT_WINDOW},
    {"sample-period", required_argument, NULL, OPT_SAMPLE},
    {"tsc-hz", required_argument, NULL, OPT_TSC},
    {"timeout", required_argument, NULL, OPT_TIMEOUT},
    {"seed", required_argument, NULL, OPT_SEED},
    {"json", no_argument, NULL, OPT_JSON},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

static int usable_cpu(const struct lb_cpus *usable, int cpu)
{
    for (int i = 0; i < usable->n; i++)
        if (usable->cpu[i] == cpu)
            return 1;
    return 0;
}

void lb_options_parse(int argc, char **argv, struct lb_options *o)
{
    memset(o, 0, sizeof *o);
    o->mode = LB_MODE_LOCK;
    o->lock = LB_LOCK_PTHREAD;
    o->pin = LB_PIN_AUTO;
    o->threads = 2;
    o->duration = 1.0;
    o->warmup = -1;
    o->lines = 1;
    o->delay = 100;
    o->probe = 1;
    o->probe_cpus[0] = o->probe_cpus[1] = -1;
    o->window = 1000;
    o->sample_period = 64;
    o->seed = 1;
    const char *cpus_arg = NULL, *probe_arg = NULL;

    opterr = 0;
    int c, duration_set = 0, threads_set = 0;
    while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        const char *opt = optind > 0 && optind <= argc ? argv[optind - 1] : "?";
        switch (c) {
        case 'h':
            fputs(usage, stdout);
            exit(0);
        case OPT_MODE:
            o->mode = (enum lb_mode)choice("--mode", optarg, mode_names, 5);
            break;
        case OPT_LOCK:
            o->lock = (enum lb_lock)choice("--lock", optarg, lock_names, 7);
            break;
        case OPT_ALGO:
            if (optarg[0] == '\0' || strpbrk(optarg, ",= "))
                lb_die(2, "--algo: expected an algorithm name, got '%s'", optarg);
            o->algo = optarg;
            break;
        case OPT_THREADS:
            o->threads = (unsigned)integer("--threads", optarg, 1, LB_MAX_THREADS);
            threads_set = 1;
            break;
        case OPT_DURATION:
            o->duration = seconds("--duration", optarg, 0.001, 86400);
            duration_set = 1;
            break;
        case OPT_WARMUP:
            o->warmup = seconds("--warmup", optarg, 0, 3600);
            break;
        case OPT_OPS:
            o->ops = integer("--ops", optarg, 1, UINT64_C(1) << 40);
            break;
        case OPT_LINES:
            o->lines = (unsigned)integer("--lines", optarg, 0, LB_MAX_LINES);
            break;
        case OPT_DELAY:
            o->delay = integer("--delay", optarg, 0, UINT64_C(1) << 40);
            break;
        case OPT_PIN:
            o->pin = (enum lb_pin)choice("--pin", optarg, pin_names, 3);
            break;
        case OPT_CPUS:
            cpus_arg = optarg;
            break;
        case OPT_PROBE_CPUS:
            probe_arg = optarg;
            break;
        case OPT_NO_PROBE:
            o->probe = 0;
            break;
        case OPT_ROUNDTRIPS:
            o->roundtrips = integer("--roundtrips", optarg, 1, UINT64_C(1) << 32);
            break;
        case OPT_WINDOW:
            o->window = integer("--window", optarg, 2, 100000);
            break;
        case OPT_SAMPLE:
            o->sample_period = integer("--sample-period", optarg, 1, UINT64_C(1) << 30);
            if (o->sample_period & (o->sample_period - 1))
                lb_die(2, "--sample-period: expected a power of two, got '%s'", optarg);
            break;
        case OPT_TSC:
            o->tsc_hz = seconds("--tsc-hz", optarg, 1e6, 1e11);
            break;
        case OPT_TIMEOUT:
            o->timeout = seconds("--timeout", optarg, 1, 86400);
            break;
        case OPT_SEED:
            o->seed = integer("--seed", optarg, 0, UINT64_MAX);
            break;
        case OPT_JSON:
            o->json = 1;
            break;
        case ':':
            lb_die(2, "%s: requires a value", opt);
        default:
            if (optopt && optopt < 256)
                lb_die(2, "unknown option '-%c' (see --help)", optopt);
            lb_die(2, "unknown option '%s' (see --help)", opt);
        }
    }
    if (optind < argc)
        lb_die(2, "unexpected argument '%s' (see --help)", argv[optind]);
    if (o->ops && duration_set)
        lb_die(2, "--ops and --duration exclude each other");
    if (o->algo && o->lock != LB_LOCK_LT && o->lock != LB_LOCK_PTHREAD)
        lb_die(2, "--algo applies to --lock lt, not --lock %s", lock_names[o->lock]);
    if (o->algo)
        o->lock = LB_LOCK_LT;
#ifndef LB_HAVE_CK
    if (o->lock >= LB_LOCK_CK_MCS)
        lb_die(2,
               "--lock %s: this locktune-lockbench was built without Concurrency Kit "
               "(libck-dev: scripts/bootstrap installs it)",
               lock_names[o->lock]);
#endif
    if (o->mode == LB_MODE_SEQUENTIAL) {
        if (threads_set && o->threads != 1)
            lb_die(2, "--mode sequential runs one thread, not --threads %u", o->threads);
        o->threads = 1;
        o->lock = LB_LOCK_NONE;
    }
    if (o->warmup < 0)
        o->warmup = o->ops ? 0 : fmin(0.2, o->duration / 5);

    struct lb_cpus usable;
    if (lb_cpus_usable(&usable) != 0 || usable.n == 0)
        lb_die(1, "cannot read this process's CPU affinity: %s", strerror(errno));
    char why[160];
    if (cpus_arg) {
        if (lb_cpus_parse(cpus_arg, &o->cpus, why, sizeof why) != 0)
            lb_die(2, "--cpus: %s", why);
        for (int i = 0; i < o->cpus.n; i++)
            if (!usable_cpu(&usable, o->cpus.cpu[i]))
                lb_die(2, "--cpus: CPU %d is not available to this process (%d usable)",
                       o->cpus.cpu[i], usable.n);
    } else {
        o->cpus = usable;
    }
    if (probe_arg) {
        struct lb_cpus p;
        if (lb_cpus_parse(probe_arg, &p, why, sizeof why) != 0)
            lb_die(2, "--probe-cpus: %s", why);
        if (p.n != 2 || p.cpu[0] == p.cpu[1])
            lb_die(2, "--probe-cpus: expected two different CPUs, got '%s'", probe_arg);
        for (int i = 0; i < 2; i++)
            if (!usable_cpu(&usable, p.cpu[i]))
                lb_die(2, "--probe-cpus: CPU %d is not available to this process", p.cpu[i]);
        o->probe_cpus[0] = p.cpu[0];
        o->probe_cpus[1] = p.cpu[1];
    } else {
        const struct lb_cpus *from = o->cpus.n >= 2 ? &o->cpus : &usable;
        o->probe_cpus[0] = from->cpu[0];
        o->probe_cpus[1] = from->n >= 2 ? from->cpu[1] : from->cpu[0];
    }
    if (o->roundtrips == 0)
        o->roundtrips = o->mode == LB_MODE_ROUNDTRIP ? 200000 : 20000;
    if (o->pin == LB_PIN_AUTO)
        o->pin = o->threads <= (unsigned)o->cpus.n ? LB_PIN_RR : LB_PIN_NONE;
}
