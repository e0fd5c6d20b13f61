/*
 * thread.c - thread records: allocation, recycling, slot chunks (see thread.h, layout.h).
 *
 * Records and chunks live in the raw file's arena and are handed out under ltp_alloc_lock,
 * which also guards the free list and the header's thread counters.  A thread takes a
 * record when it starts (or at its first lock call) and gives it back from its TSD
 * destructor; the next thread to start adopts it and adds to its counters.
 */
#define _GNU_SOURCE
#include "thread.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "clock.h"
#include "prof.h"
#include "sites.h"
#include "spin.h"
#include "tripwire.h"

__thread struct ltp_tls ltp_tls __attribute__((tls_model("initial-exec")));
int ltp_alloc_lock;
uint32_t ltp_sample_period = 1;
int64_t ltp_sample_bias;
int64_t ltp_sample_bias_hold;
uint32_t ltp_sample_bias_rounds;
int64_t ltp_timed_bias;

static struct ltp_raw_record *record_acquire(void)
{
    struct ltp_raw_header *h = ltp_hdr();
    struct ltp_raw_record *r = NULL;
    uint64_t off;
    ltp_spin_lock(&ltp_alloc_lock);
    if (h->free_records) {
        r = ltp_at(h->free_records);
        h->free_records = r->free_next;
        r->free_next = 0;
    } else if ((off = ltp_region_alloc(sizeof(struct ltp_raw_record))) != 0) {
        r = ltp_at(off);
        r->next = h->records;
        h->records = off;
    }
    if (r) {
        r->serial = ++h->next_serial;
        r->occupants++;
        if (++h->threads_live > h->threads_max_live)
            h->threads_max_live = h->threads_live;
    } else {
        h->threads_untracked++;
    }
    ltp_spin_unlock(&ltp_alloc_lock);
    return r;
}

static void record_release(struct ltp_raw_record *r)
{
    struct ltp_raw_header *h = ltp_hdr();
    ltp_spin_lock(&ltp_alloc_lock);
    r->serial = 0;
    r->tid = 0;
    r->free_next = h->free_records;
    h->free_records = (uint64_t)((char *)r - ltp_base);
    h->threads_live--;
    ltp_spin_unlock(&ltp_alloc_lock);
}

int ltp_thread_register(struct ltp_tls *t)
{
    int saved = ltp_busy_enter();
    struct ltp_raw_record *r = record_acquire();
    if (!r) {
        ltp_busy_exit(saved);
        t->mode = LTP_MODE_OFF;
        return -1;
    }
    t->rec = r;
    for (int i = 0; i < LTP_CHUNKS; i++) /* an adopted record keeps its chunks */
        t->chunk[i] = r->chunk[i] ? ltp_at((uint64_t)r->chunk[i] * 64) : NULL;
    t->serial = r->serial;
    t->depth = 0;
    t->countdown = ltp_sample_period;
    t->rng = 0;
    t->tripwire = ltp_tripwire_thread();
    t->switches = t->entry_switches = 0;
    r->tid = (uint64_t)syscall(SYS_gettid);
    r->start_ticks = r->last_ticks = ltp_now();
    t->pmu.fd = -1;
    if (ltp_pmu_counting) {
        char why[256];
        if (ltp_pmu_thread_open(&ltp_pmu_event, &t->pmu, why, sizeof why) != 0)
            __atomic_fetch_add(&ltp_hdr()->pmu_thread_failures, 1, __ATOMIC_RELAXED);
    }
    ltp_thread_key_set(t);
    ltp_busy_exit(saved);
    t->mode = LTP_MODE_ACTIVE;
    return 0;
}

struct ltp_tls *ltp_thread_slow(struct ltp_tls *t)
{
    if (t->mode != LTP_MODE_NEW)
        return NULL; /* BUSY, OFF or DEAD: pass through */
    if (!ltp_global_init() || !ltp_recording) {
        /* Not recording in this process (yet: the initialising thread itself). */
        if (ltp_global_done())
            t->mode = LTP_MODE_OFF;
        return NULL;
    }
    return ltp_thread_register(t) == 0 ? t : NULL;
}

static void close_outer(struct ltp_tls *t, uint64_t now)
{
    if (t->depth > 0)
        t->rec->cs_outer += ltp_elapsed(t->outer_start, now, &t->rec->clock_noise);
    t->depth = 0;
}

void ltp_sched_read(struct ltp_raw_record *r, uint64_t tid)
{
    char path[64], buf[128];
    if (tid)
        snprintf(path, sizeof path, "/proc/self/task/%llu/schedstat", (unsigned long long)tid);
    else
        snprintf(path, sizeof path, "/proc/thread-self/schedstat");
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return;
    buf[n] = '\0';
    char *end;
    unsigned long long cpu = strtoull(buf, &end, 10), delay = strtoull(end, &end, 10);
    if (end == buf)
        return;
    r->cpu_ns += cpu;
    r->run_delay_ns += delay;
    r->sched_reads++;
}

void ltp_thread_retire(struct ltp_tls *t)
{
    if (t->mode != LTP_MODE_ACTIVE)
        return;
    t->mode = LTP_MODE_BUSY;
    uint64_t now = ltp_now();
    struct ltp_raw_record *r = t->rec;
    close_outer(t, now);
    r->time += ltp_elapsed(r->start_ticks, now, &r->clock_noise);
    r->start_ticks = 0;
    r->last_ticks = now;
    ltp_sched_read(r, 0);
    ltp_pmu_thread_close(&t->pmu);
    record_release(r);
    t->rec = NULL;
    t->mode = LTP_MODE_DEAD;
}

void ltp_thread_forget(struct ltp_tls *t)
{
    /* After fork(), in the child: the record belongs to the parent's file.  Start over. */
    ltp_pmu_thread_close(&t->pmu);
    memset(t, 0, sizeof *t);
    t->pmu.fd = -1;
}

struct ltp_raw_slot *ltp_slot_slow(struct ltp_tls *t, uint32_t site)
{
    uint32_t i = site / LTP_SLOTS_PER_CHUNK;
    if (!t->chunk[i]) {
        int saved = ltp_busy_enter();
        ltp_spin_lock(&ltp_alloc_lock);
        uint64_t off = ltp_region_alloc(LTP_SLOTS_PER_CHUNK * sizeof(struct ltp_raw_slot));
        ltp_spin_unlock(&ltp_alloc_lock);
        ltp_busy_exit(saved);
        if (!off)
            return NULL;
        t->rec->chunk[i] = (uint32_t)(off / 64);
        t->chunk[i] = ltp_at(off);
    }
    return ltp_slot(t, site);
}

/* track.h ltp_callsite: caller `ra` is not the last one seen in slot s. */
struct ltp_raw_callsite *ltp_callsite_slow(struct ltp_raw_slot *s, uint64_t ra)
{
    for (uint64_t i = 0; i < LTP_CALLSITE_OTHER; i++) {
        struct ltp_raw_callsite *c = &s->callsite[i];
        if (c->ra == ra) {
            s->callsite_hint = i;
            return c;
        }
        if (c->ra == 0) { /* a new caller: resolved once, here */
            c->module = ltp_site_module_of((const void *)(uintptr_t)ra, &c->vaddr);
            c->ra = ra;
            s->callsite_hint = i;
            return c;
        }
    }
    return &s->callsite[LTP_CALLSITE_OTHER]; /* the table is full: "other callers" */
}
