/*
 * roundtrip.c - cache-line ping-pong between two pinned threads (see roundtrip.h).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpus.h"
#include "roundtrip.h"
#include "tsc.h"

#define STOP   UINT64_MAX
#define WARMUP 200

struct pingpong {
    _Alignas(128) _Atomic uint64_t flag; /* alone in its 128-byte pair of lines */
    char pad[128 - sizeof(uint64_t)];
    uint64_t patience; /* cycles a side waits before giving up */
    unsigned long per_batch;
    unsigned batches;
    int cpu_a, cpu_b;
    double *batch_cycles; /* ping's results, one per batch */
    int failed;
};

/* Wait until flag == want (or STOP).  0, or -1 once `patience` cycles have passed. */
static int await(struct pingpong *p, uint64_t want, uint64_t *seen)
{
    uint64_t t0 = lb_tsc();
    for (unsigned spins = 1;; spins++) {
        /* acquire: the round trip is a message; nothing rides on it, but keep it honest. */
        uint64_t v = atomic_load_explicit(&p->flag, memory_order_acquire);
        if (v == want || v == STOP) {
            *seen = v;
            return 0;
        }
        lb_relax();
        if ((spins & 1023) == 0 && lb_tsc() - t0 > p->patience)
            return -1;
    }
}

static void *pong(void *arg)
{
    struct pingpong *p = arg;
    for (uint64_t k = 0;; k++) {
        uint64_t v;
        if (await(p, 2 * k + 1, &v) != 0 || v == STOP)
            return NULL; /* ping gave up or finished */
        atomic_store_explicit(&p->flag, 2 * k + 2, memory_order_release);
    }
}

static void *ping(void *arg)
{
    struct pingpong *p = arg;
    uint64_t k = 0, v;
    for (unsigned long i = 0; i < WARMUP; i++, k++) {
        atomic_store_explicit(&p->flag, 2 * k + 1, memory_order_release);
        if (await(p, 2 * k + 2, &v) != 0)
            goto fail;
    }
    for (unsigned b = 0; b < p->batches; b++) {
        uint64_t t0 = lb_tsc_ordered();
        for (unsigned long i = 0; i < p->per_batch; i++, k++) {
            atomic_store_explicit(&p->flag, 2 * k + 1, memory_order_release);
            if (await(p, 2 * k + 2, &v) != 0)
                goto fail;
        }
        p->batch_cycles[b] = (double)(lb_tsc_ordered() - t0) / (double)p->per_batch;
    }
    atomic_store_explicit(&p->flag, STOP, memory_order_release);
    return NULL;
fail:
    p->failed = 1;
    atomic_store_explicit(&p->flag, STOP, memory_order_release);
    return NULL;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void lb_roundtrip(int cpu_a, int cpu_b, unsigned long round_trips, unsigned batches, double tsc_hz,
                  struct lb_rt *out)
{
    memset(out, 0, sizeof *out);
    out->cpu_a = cpu_a;
    out->cpu_b = cpu_b;
    if (cpu_a == cpu_b) {
        snprintf(out->why, sizeof out->why, "needs two different CPUs (got %d and %d)", cpu_a,
                 cpu_b);
        return;
    }
    if (batches == 0)
        batches = 1;
    struct pingpong *p = aligned_alloc(128, sizeof *p);
    double *cycles = calloc(batches, sizeof *cycles);
    if (p == NULL || cycles == NULL) {
        free(p);
        free(cycles);
        snprintf(out->why, sizeof out->why, "out of memory");
        return;
    }
    memset(p, 0, sizeof *p);
    atomic_init(&p->flag, 0);
    p->patience = (uint64_t)tsc_hz; /* one second */
    p->per_batch = round_trips / batches ? round_trips / batches : 1;
    p->batches = batches;
    p->batch_cycles = cycles;

    pthread_t ta, tb;
    int r = lb_cpus_thread(&tb, cpu_b, NULL, pong, p);
    if (r == 0) {
        r = lb_cpus_thread(&ta, cpu_a, NULL, ping, p);
        if (r == 0)
            pthread_join(ta, NULL);
        else
            atomic_store_explicit(&p->flag, STOP, memory_order_release);
        pthread_join(tb, NULL);
    }
    if (r != 0) {
        snprintf(out->why, sizeof out->why, "cannot run threads on CPUs %d and %d: %s", cpu_a,
                 cpu_b, strerror(r));
    } else if (p->failed) {
        snprintf(out->why, sizeof out->why,
                 "a probe thread waited more than a second (CPU %d or %d is not running it)", cpu_a,
                 cpu_b);
    } else {
        qsort(cycles, batches, sizeof *cycles, cmp_double);
        double med =
            batches % 2 ? cycles[batches / 2] : (cycles[batches / 2 - 1] + cycles[batches / 2]) / 2;
        out->ok = 1;
        out->batches = batches;
        out->per_batch = p->per_batch;
        out->cycles_median = med;
        out->ns_median = med / tsc_hz * 1e9;
        out->ns_min = cycles[0] / tsc_hz * 1e9;
        out->ns_max = cycles[batches - 1] / tsc_hz * 1e9;
    }
    free(p);
    free(cycles);
}
