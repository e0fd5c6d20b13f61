/*
 * config.c - per-site configuration: tables registered by locktune_config.h, and the
 * environment (LOCKTUNE_ALGO, LOCKTUNE_STATS, LOCKTUNE_SPIN_NS, LOCKTUNE_GATE_TURN_NS,
 * LOCKTUNE_SERVERS, then each algorithm's own variables through its configure hook) read once at
 * start-up.
 *
 * Tables are registered from constructors, before main() and normally before any lock is
 * used; lookups afterwards are read-only.  The environment is read by the runtime's own
 * constructor (so a bad value stops the program at start-up) or by the first lock operation,
 * whichever comes first.  Site ids named by LOCKTUNE_ALGO are checked against the registered
 * tables when the first lock is bound, when every table of the program is normally registered.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "algo.h"
#include "config.h"
#include "gate.h"
#include "stats.h"
#include "wait.h"

#define MAX_TABLES 256

static const struct lt_site_config *tables[MAX_TABLES];
static unsigned table_sizes[MAX_TABLES];
static unsigned ntables;

/* LOCKTUNE_ALGO, parsed.  wait: the policy named after the algorithm (`mcs:spin`), or -1. */
struct algo_override {
    int id;
    const struct lt_algo *algo;
    int wait;
};
static const struct lt_algo *env_default;
static int env_default_wait = -1;
static struct algo_override *env_sites;
static unsigned env_nsites;

/* LOCKTUNE_SERVERS, parsed; and the CPUs the process could run on at start-up. */
static const char *env_servers_text;
static int *env_servers;
static unsigned env_nservers;
static int *usable_cpus;
static unsigned nusable;

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static pthread_once_t check_once = PTHREAD_ONCE_INIT;

void lt_config_fatal(const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line - 1, fmt, ap);
    va_end(ap);
    if (n < 0)
        n = 0;
    if (n > (int)sizeof line - 2)
        n = (int)sizeof line - 2;
    line[n] = '\n';
    char out[sizeof line + 32];
    int len = snprintf(out, sizeof out, "locktune: error: %.*s", n + 1, line);
    /* One write: the line is not interleaved with another thread's output. */
    ssize_t w = write(2, out, (size_t)(len < (int)sizeof out ? len : (int)sizeof out - 1));
    (void)w;
    exit(2);
}

/* ---- algorithm specifications: NAME or NAME:POLICY ---- */

/* The algorithm `spec` names, and in *wait the policy it names (-1: none).  NULL when it is
 * not a valid specification, with the reason in why. */
static const struct lt_algo *find_spec(const char *spec, int *wait, char *why, size_t len)
{
    char name[64];
    const char *colon = strchr(spec, ':');
    size_t n = colon ? (size_t)(colon - spec) : strlen(spec);
    *wait = -1;
    if (n >= sizeof name) {
        snprintf(why, len, "unknown algorithm '%s' (known: %s)", spec, lt_algo_names());
        return NULL;
    }
    memcpy(name, spec, n);
    name[n] = '\0';
    const struct lt_algo *a = lt_algo_find(name);
    if (!a) {
        snprintf(why, len, "unknown algorithm '%s' (known: %s)", name, lt_algo_names());
        return NULL;
    }
    if (!colon)
        return a;
    int p = lt_wait_policy_parse(colon + 1);
    if (p < 0 || !(a->waits & LT_WAIT_BIT(p))) {
        char known[64] = "";
        for (int q = 0; q < LT_WAIT_NPOLICIES; q++)
            if (a->waits & LT_WAIT_BIT(q))
                snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s",
                         known[0] ? ", " : "", lt_wait_policy_name(q));
        if (a->waits)
            snprintf(why, len, "'%s': %s waits by %s (known: %s)", spec, a->name,
                     p < 0 ? "no policy of that name" : "no such policy", known);
        else
            snprintf(why, len, "'%s': %s takes no waiting policy (it waits its own way: %s)", spec,
                     a->name, a->wait);
        return NULL;
    }
    *wait = p;
    return a;
}

/* ---- tables ---- */

static const struct lt_site_config *find_site(int id)
{
    for (unsigned t = 0; t < ntables; t++)
        for (unsigned i = 0; i < table_sizes[t]; i++)
            if (tables[t][i].id == id)
                return &tables[t][i];
    return NULL;
}

static int same_entry(const struct lt_site_config *a, const struct lt_site_config *b)
{
    return a->id == b->id && a->line == b->line && a->server == b->server &&
           strcmp(a->file ? a->file : "", b->file ? b->file : "") == 0 &&
           strcmp(a->algorithm ? a->algorithm : "", b->algorithm ? b->algorithm : "") == 0;
}

LT_API void lt_config_register(const struct lt_site_config *sites, unsigned count)
{
    for (unsigned i = 0; i < ntables; i++)
        if (tables[i] == sites ||
            (table_sizes[i] == count && memcmp(tables[i], sites, count * sizeof *sites) == 0))
            return; /* the same header, included by another translation unit */
    for (unsigned i = 0; i < count; i++) {
        const struct lt_site_config *s = &sites[i];
        const char *file = s->file ? s->file : "?";
        if (s->id <= 0)
            lt_config_fatal("locktune_config.h: entry %s:%d has site id %d; ids start at 1", file,
                            s->line, s->id);
        char why[512];
        int wait;
        if (!s->algorithm)
            lt_config_fatal("locktune_config.h: site %d (%s:%d): no algorithm (known: %s)", s->id,
                            file, s->line, lt_algo_names());
        if (!find_spec(s->algorithm, &wait, why, sizeof why))
            lt_config_fatal("locktune_config.h: site %d (%s:%d): %s", s->id, file, s->line, why);
        const struct lt_site_config *prev = find_site(s->id);
        for (unsigned j = 0; !prev && j < i; j++)
            if (sites[j].id == s->id)
                prev = &sites[j];
        if (prev && !same_entry(prev, s))
            lt_config_fatal("locktune_config.h: site id %d is given twice (%s:%d and %s:%d)", s->id,
                            prev->file ? prev->file : "?", prev->line, file, s->line);
    }
    if (ntables == MAX_TABLES)
        lt_config_fatal("more than %d locktune_config.h tables registered", MAX_TABLES);
    tables[ntables] = sites;
    table_sizes[ntables] = count;
    ntables++;
}

const struct lt_site_config *lt_config_site(int id)
{
    return id > 0 ? find_site(id) : NULL;
}

void lt_config_foreach(void (*fn)(const struct lt_site_config *, void *), void *arg)
{
    for (unsigned t = 0; t < ntables; t++)
        for (unsigned i = 0; i < table_sizes[t]; i++)
            if (find_site(tables[t][i].id) == &tables[t][i]) /* first entry of each id */
                fn(&tables[t][i], arg);
}

const char *lt_site_describe(int id, char *buf, unsigned len)
{
    const struct lt_site_config *s = lt_config_site(id);
    if (s)
        snprintf(buf, len, "site %d (%s:%d %s)", id, s->file ? s->file : "?", s->line,
                 s->name ? s->name : "");
    else if (id == LT_SITE_UNKNOWN)
        snprintf(buf, len, "site 0 (no site)");
    else
        snprintf(buf, len, "site %d (not in locktune_config.h)", id);
    return buf;
}

/* The site's algorithm and named policy (-1: none), first match wins (config.h). */
static const struct lt_algo *site_spec(int id, int *wait)
{
    for (unsigned i = 0; i < env_nsites; i++)
        if (env_sites[i].id == id) {
            *wait = env_sites[i].wait;
            return env_sites[i].algo;
        }
    if (env_default) {
        *wait = env_default_wait;
        return env_default;
    }
    const struct lt_site_config *s = lt_config_site(id);
    char why[512];
    const struct lt_algo *a =
        s && s->algorithm ? find_spec(s->algorithm, wait, why, sizeof why) : NULL;
    if (a)
        return a;
    *wait = -1;
    return &lt_algo_posix;
}

const struct lt_algo *lt_site_algo(int id)
{
    int wait;
    return site_spec(id, &wait);
}

enum lt_wait_policy lt_site_wait(int id)
{
    int wait;
    const struct lt_algo *a = site_spec(id, &wait);
    return wait >= 0 ? (enum lt_wait_policy)wait : a->wait_default;
}

/* ---- environment ---- */

static char *trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    char *e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1]))
        *--e = '\0';
    return s;
}

static void parse_algo(const char *value)
{
    char *copy = strdup(value);
    if (!copy)
        lt_config_fatal("LOCKTUNE_ALGO: out of memory");
    unsigned n = 1;
    for (const char *p = value; *p; p++)
        n += *p == ',';
    env_sites = calloc(n, sizeof *env_sites);
    if (!env_sites)
        lt_config_fatal("LOCKTUNE_ALGO: out of memory");
    char *save = NULL;
    for (char *item = strtok_r(copy, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(item, '=');
        if (!eq)
            lt_config_fatal("LOCKTUNE_ALGO='%s': '%s' is not KEY=ALGORITHM[:POLICY] (e.g. "
                            "default=mcs,12=shfl-block,13=mcs:spin)",
                            value, trim(item));
        *eq = '\0';
        char *key = trim(item), *name = trim(eq + 1);
        char why[512];
        int wait;
        const struct lt_algo *a = find_spec(name, &wait, why, sizeof why);
        if (!a)
            lt_config_fatal("LOCKTUNE_ALGO='%s': %s", value, why);
        if (strcmp(key, "default") == 0) {
            env_default = a;
            env_default_wait = wait;
            continue;
        }
        char *end;
        errno = 0;
        long id = strtol(key, &end, 10);
        if (*key == '\0' || *end != '\0' || errno || id <= 0 || id > INT_MAX)
            lt_config_fatal(
                "LOCKTUNE_ALGO='%s': '%s' is neither 'default' nor a site id (a number >= 1)",
                value, key);
        unsigned i = 0;
        while (i < env_nsites && env_sites[i].id != (int)id)
            i++;
        env_sites[i].id = (int)id;
        env_sites[i].algo = a;
        env_sites[i].wait = wait;
        if (i == env_nsites)
            env_nsites++;
    }
    free(copy);
}

static void parse_spin(const char *value)
{
    char *end;
    errno = 0;
    unsigned long long ns = strtoull(value, &end, 10);
    if (*value == '\0' || *end != '\0' || errno || ns == 0 || ns > 100000000ull || *value == '-')
        lt_config_fatal(
            "LOCKTUNE_SPIN_NS='%s': expected a spin budget in nanoseconds, 1 to 100000000", value);
    lt_wait_set_budget(ns, "LOCKTUNE_SPIN_NS");
}

static void parse_gate_turn(const char *value)
{
    char *end;
    errno = 0;
    unsigned long long ns = strtoull(value, &end, 10);
    if (*value == '\0' || *end != '\0' || errno || ns == 0 || ns > 60000000000ull || *value == '-')
        lt_config_fatal("LOCKTUNE_GATE_TURN_NS='%s': expected a patience per passive waiter in "
                        "nanoseconds, 1 to 60000000000",
                        value);
    lt_gate_set_turn(ns);
}

static void parse_stats(const char *value)
{
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", value);
    char *slash = strrchr(dir, '/');
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else if (slash == dir)
        dir[1] = '\0';
    else
        *slash = '\0';
    if (access(dir, W_OK | X_OK) != 0)
        lt_config_fatal("LOCKTUNE_STATS='%s': directory %s is not writable (%s)", value, dir,
                        strerror(errno));
    lt_stats_enable(value);
}

static void read_usable_cpus(void)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) != 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        for (long c = 0; c < n && c < CPU_SETSIZE; c++)
            CPU_SET((int)c, &set);
    }
    usable_cpus = calloc(CPU_SETSIZE, sizeof *usable_cpus);
    if (!usable_cpus)
        lt_config_fatal("out of memory");
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &set))
            usable_cpus[nusable++] = c;
}

static const char *usable_text(char *buf, size_t len)
{
    size_t n = 0;
    buf[0] = '\0';
    for (unsigned i = 0; i < nusable && n + 16 < len; i++) {
        unsigned j = i;
        while (j + 1 < nusable && usable_cpus[j + 1] == usable_cpus[j] + 1)
            j++;
        n += (size_t)snprintf(buf + n, len - n, "%s%d", i ? "," : "", usable_cpus[i]);
        if (j > i)
            n += (size_t)snprintf(buf + n, len - n, "-%d", usable_cpus[j]);
        i = j;
    }
    return buf;
}

static void parse_servers(const char *value)
{
    char buf[256];
    env_servers_text = value;
    env_servers = calloc(strlen(value) / 2 + 1, sizeof *env_servers);
    if (!env_servers)
        lt_config_fatal("LOCKTUNE_SERVERS: out of memory");
    const char *p = value;
    for (;;) {
        while (isspace((unsigned char)*p))
            p++;
        char *end;
        errno = 0;
        long cpu = strtol(p, &end, 10);
        if (end == p || errno || cpu < 0 || cpu > INT_MAX || *p == '-' || *p == '+')
            lt_config_fatal(
                "LOCKTUNE_SERVERS='%s': expected CPU numbers separated by commas (e.g. 1 or "
                "1,3), one per server",
                value);
        int ok = 0;
        for (unsigned i = 0; i < nusable && !ok; i++)
            ok = usable_cpus[i] == (int)cpu;
        if (!ok)
            lt_config_fatal(
                "LOCKTUNE_SERVERS='%s': CPU %ld is not one this process may run on (%s)", value,
                cpu, usable_text(buf, sizeof buf));
        env_servers[env_nservers++] = (int)cpu;
        p = end;
        while (isspace((unsigned char)*p))
            p++;
        if (*p == '\0')
            break;
        if (*p != ',')
            lt_config_fatal(
                "LOCKTUNE_SERVERS='%s': expected CPU numbers separated by commas (e.g. 1 or "
                "1,3), one per server",
                value);
        p++;
    }
}

static void init_env(void)
{
    const char *v;
    read_usable_cpus();
    if ((v = getenv("LOCKTUNE_ALGO")) && *v)
        parse_algo(v);
    if ((v = getenv("LOCKTUNE_SERVERS")) && *v)
        parse_servers(v);
    if ((v = getenv("LOCKTUNE_SPIN_NS")) && *v)
        parse_spin(v);
    if ((v = getenv("LOCKTUNE_GATE_TURN_NS")) && *v)
        parse_gate_turn(v);
    if ((v = getenv("LOCKTUNE_STATS")) && *v) /* empty: unset, as for the others */
        parse_stats(v);
    for (unsigned i = 0; i < lt_nalgos; i++)
        if (lt_algos[i]->configure)
            lt_algos[i]->configure();
}

static void check_server(const struct lt_site_config *sc, void *arg)
{
    (void)arg;
    if (env_nservers == 0 || !(lt_site_algo(sc->id)->caps & LT_CAP_SERVER))
        return;
    if (sc->server >= (int)env_nservers)
        lt_config_fatal(
            "LOCKTUNE_SERVERS='%s' lists %u CPU%s (servers 0..%u), but site %d (%s:%d %s) "
            "runs on server %d",
            env_servers_text, env_nservers, env_nservers == 1 ? "" : "s", env_nservers - 1, sc->id,
            sc->file ? sc->file : "?", sc->line, sc->name ? sc->name : "", sc->server);
}

static void check_sites(void)
{
    if (ntables == 0)
        return; /* no header: any site id may be meant, none can be checked */
    for (unsigned i = 0; i < env_nsites; i++)
        if (!find_site(env_sites[i].id))
            lt_config_fatal("LOCKTUNE_ALGO: site %d is not in the program's locktune_config.h",
                            env_sites[i].id);
    lt_config_foreach(check_server, NULL);
}

const int *lt_config_servers(unsigned *n)
{
    *n = env_nservers;
    return env_servers;
}

const int *lt_config_usable_cpus(unsigned *n)
{
    *n = nusable;
    return usable_cpus;
}

void lt_runtime_init(void)
{
    pthread_once(&init_once, init_env);
}

void lt_runtime_check_sites(void)
{
    pthread_once(&check_once, check_sites);
}
