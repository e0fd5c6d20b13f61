/*
 * stats.c - per-site runtime statistics (stats.h) and the JSON report written at exit.
 *
 * Each thread counts into its own two-level table: site ids 0..65535 map to chunks of 256
 * sites allocated on first use (a chunk never moves, so the report can read a live thread's
 * counters while it runs); other ids share one "other" bucket.  A thread's counters are folded
 * into the process totals when it exits.  Counters are written by their thread only, with
 * relaxed atomic stores, and read by the reporter with relaxed atomic loads.
 *
 * fork.  The list of live tables and the totals are under reg_lock, which a thread takes to
 * join the list (its first count, which allocates its table), to allocate a chunk of its
 * table, to leave the list (its exit, which frees its table) and to write the report.  The
 * lock is held across the fork (lt_stats_prepare_fork, from thread.c's prepare handler), as
 * every global lock of the runtime is: copied held by another thread, it stayed held for ever
 * in the child, whose threads then stopped at their first count - test_rcl's fork case under
 * load: the parent's worker thread held reg_lock for its first count as the main thread
 * forked; in the child every client and servicing thread waited on it in lt_stat_add, and
 * the child never exited.  A child so finds every table of the parent's threads on the list,
 * whole, or not allocated; those of the threads it lost stay there: their counts are the
 * parent's up to the fork, which the child's report includes, as it always did.
 *
 *   a thread's table:  none --first count: calloc, link (reg_lock)--> listed
 *                      listed --exit: fold into totals, unlink, free (reg_lock)--> none
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "algo.h"
#include "config.h"
#include "stats.h"
#include "thread.h"
#include "wait.h"

#define CHUNK_SITES 256
#define NCHUNKS     256 /* direct ids 0 .. 65535 */
#define OTHER_CHUNK NCHUNKS

struct counters {
    uint64_t c[LT_STAT_N];
};

struct table {
    struct counters *chunk[NCHUNKS + 1]; /* atomic pointers: published with release */
};

struct lt_stats_thread {
    struct table t;
    struct lt_stats_thread *prev, *next; /* live list, under reg_lock */
};

int lt_stats_on;
static char *report_path;
static pid_t report_pid;
static uint64_t start_ns;

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static struct lt_stats_thread *live; /* under reg_lock */
static struct table totals;          /* exited threads, under reg_lock */

static void locate(int site, unsigned *chunk, unsigned *off)
{
    if (site >= 0 && site < NCHUNKS * CHUNK_SITES) {
        *chunk = (unsigned)site / CHUNK_SITES;
        *off = (unsigned)site % CHUNK_SITES;
    } else {
        *chunk = OTHER_CHUNK;
        *off = 0;
    }
}

static struct counters *chunk_of(struct table *t, unsigned ci)
{
    /* acquire: pairs with the release store that published the zeroed chunk. */
    struct counters *c = __atomic_load_n(&t->chunk[ci], __ATOMIC_ACQUIRE);
    if (c)
        return c;
    c = calloc(CHUNK_SITES, sizeof *c);
    if (!c)
        return NULL; /* statistics are best effort; the lock still works */
    __atomic_store_n(&t->chunk[ci], c, __ATOMIC_RELEASE);
    return c;
}

/* A thread's first count, or its first in a chunk of sites: its table joins the list, or the
 * chunk is allocated, under reg_lock - which the fork holds (the header), so a forked child
 * finds the table and its chunks on the list or not allocated at all, never allocated and
 * known only to a thread it lost (a leak in the child: LeakSanitizer's report failed the
 * child).  NULL if out of memory. */
static __attribute__((noinline)) struct counters *chunk_slow(struct lt_thread *self, unsigned ci)
{
    bool joined = false;
    struct counters *c = NULL;
    pthread_mutex_lock(&reg_lock);
    struct lt_stats_thread *st = self->stats;
    if (!st && (st = calloc(1, sizeof *st)) != NULL) {
        st->next = live;
        if (live)
            live->prev = st;
        live = st;
        self->stats = st;
        joined = true;
    }
    if (st)
        c = chunk_of(&st->t, ci);
    pthread_mutex_unlock(&reg_lock);
    if (joined)
        lt_thread_register();
    return c;
}

void lt_stat_add(int site, enum lt_stat s, uint64_t n)
{
    struct lt_thread *self = &lt_thread_self;
    struct lt_stats_thread *st = self->stats;
    unsigned ci, off;
    locate(site, &ci, &off);
    /* acquire: as chunk_of's (this thread published it: program order anyway). */
    struct counters *c = st ? __atomic_load_n(&st->t.chunk[ci], __ATOMIC_ACQUIRE) : NULL;
    if (!c && !(c = chunk_slow(self, ci)))
        return; /* statistics are best effort; the lock still works */
    uint64_t *p = &c[off].c[s];
    /* relaxed: this thread is the only writer; the reporter only needs a recent value. */
    __atomic_store_n(p, *p + n, __ATOMIC_RELAXED);
}

void lt_stats_prepare_fork(void)
{
    pthread_mutex_lock(&reg_lock); /* no thread is half-way onto or off the list at the fork */
}

void lt_stats_parent_after_fork(void)
{
    pthread_mutex_unlock(&reg_lock);
}

void lt_stats_fork_child(void)
{
    pthread_mutex_unlock(&reg_lock); /* taken by this thread in lt_stats_prepare_fork */
}

static void add_table(struct table *dst, struct table *src)
{
    for (unsigned ci = 0; ci <= NCHUNKS; ci++) {
        struct counters *s = __atomic_load_n(&src->chunk[ci], __ATOMIC_ACQUIRE);
        if (!s)
            continue;
        struct counters *d = chunk_of(dst, ci);
        if (!d)
            continue;
        for (unsigned i = 0; i < CHUNK_SITES; i++)
            for (unsigned k = 0; k < LT_STAT_N; k++)
                d[i].c[k] += __atomic_load_n(&s[i].c[k], __ATOMIC_RELAXED);
    }
}

void lt_stats_thread_exit(void)
{
    struct lt_stats_thread *st = lt_thread_self.stats;
    if (!st)
        return;
    lt_thread_self.stats = NULL;
    pthread_mutex_lock(&reg_lock);
    add_table(&totals, &st->t);
    if (st->prev)
        st->prev->next = st->next;
    else
        live = st->next;
    if (st->next)
        st->next->prev = st->prev;
    /* Freed under the lock too: a fork finds the table on the list or freed (chunk_slow). */
    for (unsigned ci = 0; ci <= NCHUNKS; ci++)
        free(st->t.chunk[ci]);
    free(st);
    pthread_mutex_unlock(&reg_lock);
}

/* ---- the report ---- */

static void json_string(FILE *f, const char *s)
{
    if (!s) {
        fputs("null", f);
        return;
    }
    fputc('"', f);
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            fprintf(f, "\\%c", ch);
        else if (ch < 0x20)
            fprintf(f, "\\u%04x", ch);
        else
            fputc(ch, f);
    }
    fputc('"', f);
}

static void json_counter(FILE *f, const char *key, const struct counters *c, enum lt_stat s,
                         int known)
{
    if (known)
        fprintf(f, ", \"%s\": %llu", key, (unsigned long long)(c ? c->c[s] : 0));
    else
        fprintf(f, ", \"%s\": null", key);
}

static int nonzero(const struct counters *c)
{
    for (unsigned k = 0; k < LT_STAT_N; k++)
        if (c->c[k])
            return 1;
    return 0;
}

static void write_site(FILE *f, int first, int id, const struct counters *c)
{
    const struct lt_site_config *sc = lt_config_site(id);
    const struct lt_algo *a = lt_site_algo(id);
    fputs(first ? "\n    {" : ",\n    {", f);
    if (id == INT_MIN)
        fputs("\"id\": null", f);
    else
        fprintf(f, "\"id\": %d", id);
    fputs(", \"file\": ", f);
    json_string(f, sc ? sc->file : NULL);
    if (sc)
        fprintf(f, ", \"line\": %d", sc->line);
    else
        fputs(", \"line\": null", f);
    fputs(", \"name\": ", f);
    json_string(f, sc ? sc->name : (id == INT_MIN ? "sites outside 0..65535" : NULL));
    fputs(", \"algorithm\": ", f);
    json_string(f, a->name);
    fputs(", \"configured_algorithm\": ", f);
    json_string(f, sc ? sc->algorithm : NULL);
    fputs(", \"wait\": ", f); /* the waiting policy, for the algorithms that take one */
    json_string(f, a->waits ? lt_wait_policy_name(lt_site_wait(id)) : NULL);
    unsigned known = a->counts;
    json_counter(f, "instances", c, LT_STAT_INSTANCES, 1);
    json_counter(f, "destroyed", c, LT_STAT_DESTROYED, 1);
    json_counter(f, "acquisitions", c, LT_STAT_ACQUIRED, 1);
    json_counter(f, "contended", c, LT_STAT_CONTENDED, 1);
    json_counter(f, "trylock_failures", c, LT_STAT_TRY_FAILED, 1);
    json_counter(f, "timeouts", c, LT_STAT_TIMEDOUT, 1);
    json_counter(f, "parked", c, LT_STAT_PARKED, known & LT_STAT_BIT(LT_STAT_PARKED));
    json_counter(f, "handovers", c, LT_STAT_HANDOVERS, known & LT_STAT_BIT(LT_STAT_HANDOVERS));
    json_counter(f, "cond_waits", c, LT_STAT_COND_WAITS, 1);
    json_counter(f, "misuse", c, LT_STAT_MISUSE, 1);
    json_counter(f, "delegated", c, LT_STAT_DELEGATED, known & LT_STAT_BIT(LT_STAT_DELEGATED));
    if (a->stats_site)
        a->stats_site(f, id == INT_MIN ? 0 : id);
    fputs(", \"posix_fallback\": {\"total\": ", f);
    uint64_t fb = c ? c->c[LT_STAT_FALLBACK_PSHARED] + c->c[LT_STAT_FALLBACK_ROBUST] +
                          c->c[LT_STAT_FALLBACK_PRIO]
                    : 0;
    fprintf(f, "%llu", (unsigned long long)fb);
    json_counter(f, "process_shared", c, LT_STAT_FALLBACK_PSHARED, 1);
    json_counter(f, "robust", c, LT_STAT_FALLBACK_ROBUST, 1);
    json_counter(f, "priority_protocol", c, LT_STAT_FALLBACK_PRIO, 1);
    fputs("}, \"algorithm_counters\": {", f);
    static const struct {
        enum lt_stat s;
        const char *key;
    } extra[] = {
        {LT_STAT_SKIPPED, "skipped_preempted"},
        {LT_STAT_CULLED, "culled"},
        {LT_STAT_REPROVISIONED, "reprovisioned"},
        {LT_STAT_FAIR_GRANTS, "fairness_grants"},
        {LT_STAT_SELF_ADMITTED, "self_admitted"},
        {LT_STAT_SESSIONS, "combining_sessions"},
        {LT_STAT_STEPPED_ASIDE, "stepped_aside"},
        {LT_STAT_ON_CALLER, "executed_on_caller"},
        {LT_STAT_AUTO_TO_QUEUE, "switches_to_queue"},
        {LT_STAT_AUTO_TO_BARGE, "switches_to_barge"},
        {LT_STAT_AUTO_FENCED, "fenced"},
        {LT_STAT_AUTO_UNFENCED, "unfenced"},
        {LT_STAT_AUTO_ON_QUEUE, "acquired_on_queue"},
        {LT_STAT_GATED, "gated"},
        {LT_STAT_GATE_TURNS, "gate_turns"},
    };
    int n = 0;
    for (unsigned i = 0; i < sizeof extra / sizeof extra[0]; i++)
        if (known & LT_STAT_BIT(extra[i].s))
            fprintf(f, "%s\"%s\": %llu", n++ ? ", " : "", extra[i].key,
                    (unsigned long long)(c ? c->c[extra[i].s] : 0));
    fputs("}}", f);
}

struct site_walk {
    FILE *f;
    int *first;
    struct table *sum;
};

static const struct counters *counters_of(struct table *t, int id)
{
    unsigned ci, off;
    locate(id, &ci, &off);
    return t->chunk[ci] ? &t->chunk[ci][off] : NULL;
}

static void write_configured(const struct lt_site_config *sc, void *arg)
{
    struct site_walk *w = arg;
    const struct counters *c = counters_of(w->sum, sc->id);
    if (c && nonzero(c))
        return; /* written with the active sites */
    write_site(w->f, *w->first, sc->id, c);
    *w->first = 0;
}

static void free_table(struct table *t)
{
    for (unsigned ci = 0; ci <= NCHUNKS; ci++)
        free(t->chunk[ci]);
}

int lt_stats_write(void)
{
    if (!report_path)
        return 0;
    struct table sum;
    memset(&sum, 0, sizeof sum);
    pthread_mutex_lock(&reg_lock);
    add_table(&sum, &totals);
    for (struct lt_stats_thread *st = live; st; st = st->next)
        add_table(&sum, &st->t);
    pthread_mutex_unlock(&reg_lock);

    /* A forked child that exits writes beside its parent's report, never over it. */
    char path[PATH_MAX], tmp[PATH_MAX + 32];
    if (getpid() == report_pid)
        snprintf(path, sizeof path, "%s", report_path);
    else
        snprintf(path, sizeof path, "%s.%d", report_path, (int)getpid());
    snprintf(tmp, sizeof tmp, "%s.tmp%d", path, (int)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f) {
        int e = errno;
        fprintf(stderr, "locktune: error: LOCKTUNE_STATS=%s: cannot write %s: %s\n", report_path,
                tmp, strerror(e));
        free_table(&sum);
        return e;
    }
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = '\0';
    fputs("{\n  \"schema\": \"locktune-runtime-stats/1\",\n  \"program\": ", f);
    json_string(f, exe);
    fprintf(f, ",\n  \"pid\": %d,\n  \"wall_s\": %.6f,\n", (int)getpid(),
            (double)(lt_now_ns() - start_ns) / 1e9);
    fputs("  \"default_algorithm\": ", f);
    json_string(f, lt_site_algo(LT_SITE_UNKNOWN)->name);
    fprintf(f, ",\n  \"spin_budget_ns\": %llu,\n  \"spin_budget_source\": ",
            (unsigned long long)lt_spin_budget_ns());
    json_string(f, lt_spin_budget_source());
    uint64_t rt = lt_wait_unpark_ns();
    if (rt)
        fprintf(f, ",\n  \"unpark_latency_ns\": %llu", (unsigned long long)rt);
    else
        fputs(",\n  \"unpark_latency_ns\": null", f);
    fputs(",\n  \"sites\": [", f);
    int first = 1;
    for (unsigned ci = 0; ci < NCHUNKS; ci++) {
        if (!sum.chunk[ci])
            continue;
        for (unsigned i = 0; i < CHUNK_SITES; i++)
            if (nonzero(&sum.chunk[ci][i])) {
                write_site(f, first, (int)(ci * CHUNK_SITES + i), &sum.chunk[ci][i]);
                first = 0;
            }
    }
    struct site_walk w = {f, &first, &sum};
    lt_config_foreach(write_configured, &w);
    if (sum.chunk[OTHER_CHUNK] && nonzero(&sum.chunk[OTHER_CHUNK][0])) {
        write_site(f, first, INT_MIN, &sum.chunk[OTHER_CHUNK][0]);
        first = 0;
    }
    fputs(first ? "]" : "\n  ]", f);
    for (unsigned i = 0; i < lt_nalgos; i++)
        if (lt_algos[i]->stats_json) {
            fprintf(f, ",\n  \"%s\": ", lt_algos[i]->name);
            lt_algos[i]->stats_json(f);
        }
    fputs("\n}\n", f);
    free_table(&sum);
    int bad = ferror(f);
    if (fclose(f) != 0 || bad || rename(tmp, path) != 0) {
        int e = errno ? errno : EIO;
        fprintf(stderr, "locktune: error: LOCKTUNE_STATS=%s: cannot write %s: %s\n", report_path,
                path, strerror(e));
        unlink(tmp);
        return e;
    }
    return 0;
}

static void write_at_exit(void)
{
    lt_stats_write();
}

void lt_stats_enable(const char *path)
{
    report_path = strdup(path);
    if (!report_path)
        return;
    report_pid = getpid();
    start_ns = lt_now_ns();
    lt_stats_on = 1;
    atexit(write_at_exit);
}
