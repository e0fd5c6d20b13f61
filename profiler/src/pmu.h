/*
 * pmu.h - can this process count hardware cache misses?  (libpfm4 + perf_event_open)
 *
 * libpfm4 decides from CPUID whether a PMU is "present"; only a real perf_event_open tells
 * whether the kernel exposes it (virtual machines often do not).  ltp_pmu_probe() does both
 * and classifies a failure into a reason a person can act on.
 */
#ifndef LTP_PMU_H
#define LTP_PMU_H

#include <stdint.h>

struct ltp_pmu_probe {
    int available;      /* 1: the event opened and counted */
    char event[128];    /* event name that was tried (libpfm4 syntax) */
    char pfm_pmu[64];   /* libpfm4's name of the core PMU it detected, or "" */
    char encoding[256]; /* libpfm4's fully qualified encoding, or "" */
    uint32_t type;      /* perf_event_attr.type / .config / .config1 from libpfm4 */
    uint64_t config, config1;
    int pfm_error;         /* libpfm4 error code (0 = success) */
    int open_errno;        /* errno of perf_event_open (0 = success) */
    uint64_t sample_count; /* events counted over a small memory walk, when available */
    char reason[256];      /* empty when available */
};

/* Default event for this CPU (documented table in pmu.c); never NULL. */
const char *ltp_pmu_default_event(void);

/* Probe `event` (NULL: the default).  With `walk`, also count over an 8 MiB memory walk
 * (p->sample_count).  Returns 0 when the probe ran (see p->available). */
int ltp_pmu_probe(const char *event, int walk, struct ltp_pmu_probe *p);

/* libpfm4 version as "major.minor" of the API the library reports. */
const char *ltp_pmu_libpfm_version(void);

/*
 * Per-thread counting for the profiler: one counter per thread, opened on the thread
 * itself, read in user space with RDPMC through the perf mmap page (a read() costs about a
 * microsecond: far too much per critical section).  ltp_pmu_thread_open() fails with a
 * reason when the kernel does not let user space read the counter.
 */
struct perf_event_mmap_page;
struct ltp_pmu_thread {
    int fd; /* -1: not counting */
    struct perf_event_mmap_page *page;
};

/* Open the probed event `p` for the calling thread.  Returns 0, or -1 with `why` filled. */
int ltp_pmu_thread_open(const struct ltp_pmu_probe *p, struct ltp_pmu_thread *t, char *why,
                        unsigned long why_len);
void ltp_pmu_thread_close(struct ltp_pmu_thread *t);

/* The counter's current value (seqlock-protected read of the mmap page plus RDPMC). */
uint64_t ltp_pmu_thread_read(const struct ltp_pmu_thread *t);

#endif
