/*
 * options.h - locktune-lockbench's command line.  Bad usage is one line on stderr, exit 2.
 */
#ifndef LB_OPTIONS_H
#define LB_OPTIONS_H

#include <stdint.h>

#include "cpus.h"

#define LB_PROG        "locktune-lockbench"
#define LB_MAX_THREADS 1024

enum lb_mode {
    LB_MODE_LOCK,       /* lock; section; unlock */
    LB_MODE_EXECUTE,    /* the section as a function, run by lt_execute */
    LB_MODE_SEQUENTIAL, /* one thread, no lock: the section's own rate */
    LB_MODE_ROUNDTRIP,  /* the core-to-core round trip alone */
    LB_MODE_INFO,       /* the configuration, the algorithm bound, the TSC rate */
};

enum lb_lock {
    LB_LOCK_PTHREAD,   /* glibc pthread_mutex_t, called directly: the baseline */
    LB_LOCK_LT,        /* lt_mutex_t through locktune.h, algorithm from LOCKTUNE_ALGO */
    LB_LOCK_TICKET,    /* the bare ticket lock of ticket.h */
    LB_LOCK_NONE,      /* no lock at all: to see the checker catch lost updates */
    LB_LOCK_CK_MCS,    /* Concurrency Kit's MCS spinlock (ck_peers.h) */
    LB_LOCK_CK_CLH,    /* Concurrency Kit's CLH spinlock */
    LB_LOCK_CK_TICKET, /* Concurrency Kit's ticket spinlock */
};

enum lb_pin {
    LB_PIN_AUTO, /* rr when threads <= CPUs, else none */
    LB_PIN_NONE, /* threads float over the CPU set */
    LB_PIN_RR,   /* thread i on CPU i mod n of the CPU set */
};

struct lb_options {
    enum lb_mode mode;
    enum lb_lock lock;
    enum lb_pin pin;
    const char *algo; /* --algo: sets LOCKTUNE_ALGO=default=NAME */
    unsigned threads;
    double duration; /* measured interval, seconds */
    double warmup;   /* before it, seconds */
    uint64_t ops;    /* per thread; 0 = run for duration */
    unsigned lines;
    uint64_t delay; /* cycles between sections */
    struct lb_cpus cpus;
    int probe;         /* round-trip probe before and after the run */
    int probe_cpus[2]; /* -1: the first two of cpus */
    unsigned long roundtrips;
    uint64_t window;        /* acquisitions per LWSS window */
    uint64_t sample_period; /* handover sampled every this many acquisitions; power of two */
    double tsc_hz;          /* 0: calibrate */
    double timeout;         /* seconds; 0: derived from the run */
    uint64_t seed;
    int json;
};

/* Parse argv into o; on bad usage print one line and exit(2). */
void lb_options_parse(int argc, char **argv, struct lb_options *o);

/* "locktune-lockbench: error: ..." on stderr, then exit(code). */
void lb_die(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3), noreturn));

const char *lb_mode_name(enum lb_mode m);
const char *lb_lock_name(enum lb_lock l);
const char *lb_pin_name(enum lb_pin p);

#endif
