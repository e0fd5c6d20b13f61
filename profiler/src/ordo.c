/*
 * ordo.c - measure the TSC rate and the Ordo boundary (see ordo.h).
 *
 * For an ordered pair of CPUs (c0, c1): a thread on c1 answers each numbered request from
 * a thread on c0 with its own TSC; c0 reads its TSC the moment the answer arrives.
 * delta(c0, c1) = min over runs of (c0's TSC - c1's TSC) = one-way delay + clock offset.
 * The true offset between the two clocks is below max(delta(c0, c1), delta(c1, c0)), and
 * the boundary is the largest such value over the pairs measured (all pairs up to 8 CPUs;
 * beyond, every CPU against CPU 0, so the measurement stays within seconds).
 */
#define _GNU_SOURCE
#include "ordo.h"

#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "spin.h"

struct channel {
    _Alignas(64) uint64_t request; /* run number asked for by c0 */
    _Alignas(64) uint64_t answer;  /* run number answered by c1 */
    uint64_t tsc;                  /* c1's TSC, written before `answer` */
    int runs, cpu;
    int failed;
};

static int pin(int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Spin until *word == want; give up after `limit` seconds (the partner was never run). */
static int await(uint64_t *word, uint64_t want, double limit)
{
    double start = 0;
    for (unsigned i = 1;; i++) {
        /* acquire: the partner's TSC store is visible once its answer is */
        if (__atomic_load_n(word, __ATOMIC_ACQUIRE) == want)
            return 0;
        ltp_cpu_relax();
        if ((i & 0xfffff) == 0) {
            if (start == 0)
                start = now_s();
            else if (now_s() - start > limit)
                return -1;
        }
    }
}

static void *answerer(void *arg)
{
    struct channel *ch = arg;
    if (pin(ch->cpu) != 0) {
        __atomic_store_n(&ch->failed, 1, __ATOMIC_RELEASE);
        return NULL;
    }
    for (int i = 1; i <= ch->runs; i++) {
        if (await(&ch->request, (uint64_t)i, 2.0) != 0) {
            __atomic_store_n(&ch->failed, 1, __ATOMIC_RELEASE);
            return NULL;
        }
        ch->tsc = ltp_now();
        __atomic_store_n(&ch->answer, (uint64_t)i, __ATOMIC_RELEASE); /* publish tsc */
    }
    return NULL;
}

/* delta(c0, c1) in cycles (may be negative), or INT64_MAX when it could not be measured. */
static int64_t one_way(int c0, int c1, int runs)
{
    static struct channel ch;
    memset(&ch, 0, sizeof ch);
    ch.runs = runs;
    ch.cpu = c1;
    pthread_t th;
    if (pthread_create(&th, NULL, answerer, &ch) != 0)
        return INT64_MAX;
    int64_t best = INT64_MAX;
    if (pin(c0) == 0) {
        for (int i = 1; i <= runs && !__atomic_load_n(&ch.failed, __ATOMIC_ACQUIRE); i++) {
            __atomic_store_n(&ch.request, (uint64_t)i, __ATOMIC_RELEASE);
            if (await(&ch.answer, (uint64_t)i, 2.0) != 0)
                break;
            int64_t d = (int64_t)(ltp_now() - ch.tsc);
            if (d < best)
                best = d;
        }
    }
    __atomic_store_n(&ch.failed, 1, __ATOMIC_RELEASE);
    __atomic_store_n(&ch.request, (uint64_t)runs + 1, __ATOMIC_RELEASE);
    pthread_join(th, NULL);
    return best;
}

int ltp_clock_measure(struct ltp_clock_probe *p, int runs)
{
    memset(p, 0, sizeof *p);
    p->invariant = ltp_tsc_invariant();
    p->runs = runs;
#if LTP_HAVE_TSC
    ltp_clock_kind = LTP_CLOCK_TSC;
    struct timespec a, b, pause = {0, 50 * 1000 * 1000};
    clock_gettime(CLOCK_MONOTONIC_RAW, &a);
    uint64_t t0 = __rdtsc();
    nanosleep(&pause, NULL);
    uint64_t t1 = __rdtsc();
    clock_gettime(CLOCK_MONOTONIC_RAW, &b);
    double secs = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) * 1e-9;
    p->hz = secs > 0 ? (double)(t1 - t0) / secs : 0;
#else
    return 0;
#endif
    cpu_set_t allowed;
    if (sched_getaffinity(0, sizeof allowed, &allowed) != 0)
        return 0;
    int cpu[CPU_SETSIZE], n = 0;
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &allowed))
            cpu[n++] = c;
    p->cpus = n;
    int64_t boundary = 0;
    for (int i = 0; i < n; i++) {
        for (int j = i + 1; j < n; j++) {
            if (n > 8 && i != 0)
                break;
            int64_t d01 = one_way(cpu[i], cpu[j], runs), d10 = one_way(cpu[j], cpu[i], runs);
            if (d01 == INT64_MAX || d10 == INT64_MAX) {
                snprintf(p->error, sizeof p->error,
                         "CPUs %d and %d could not be measured (pinning failed, or a thread "
                         "was not scheduled for 2 s)",
                         cpu[i], cpu[j]);
                continue;
            }
            p->pairs += 2;
            int64_t d = d01 > d10 ? d01 : d10;
            if (d > boundary)
                boundary = d;
        }
    }
    sched_setaffinity(0, sizeof allowed, &allowed);
    p->boundary = (uint64_t)boundary;
    return 0;
}
