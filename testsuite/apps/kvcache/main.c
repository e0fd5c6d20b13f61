/*
 * kvcache - a legacy-style key-value cache, modelled on memcached 1.4 (one global cache lock
 * over the hash table and the LRU lists), driven by its own load.
 *
 *   kvcache [-t THREADS] [-n REQUESTS] [-k KEYS] [-g GET_PERCENT] [-m MEGABYTES] [-v VALUE_MAX]
 *
 * Each worker thread plays both sides of a connection: it writes text-protocol requests
 * ("get KEY", "set KEY 0 0 LEN" + data), parses and executes them as the server, and reads
 * the reply as the client.  Requests number 0 to REQUESTS-1 are split among the workers; the
 * request number alone picks the command and the key (uniform over KEYS keys, GET_PERCENT
 * gets), as memaslap does.  A client that misses a key fetches the value from the "backing
 * store" (a function of the key) and stores it, as a cache-aside client does.
 *
 * Locks (see items.c, slabs.c, thread.c):
 *   cache_lock          HOT.  Hash table, LRU lists, eviction counts; once per get, twice per
 *                       set; a get touches about eight scattered cache lines under it.
 *   slabs_lock          WARM, nested inside cache_lock: the slab allocator, on every set.
 *   stats_lock          WARM, nested inside cache_lock: global item counts, on every set.
 *   thread_stats.mutex  one per worker: taken on every request but only by its owner
 *                       (uncontended), and by the main thread at the end.
 *   init_lock           COLD, with init_cond: workers register at start-up.
 * Locks are taken through memcached's wrapper macros mutex_lock() / STATS_LOCK().
 *
 * Output: the served values are always the key's value, hit or miss, so what the clients see
 * does not depend on threads or timing; neither does the final content of the cache while
 * nothing is evicted (the default memory holds every key).
 *   result: requests=N gets=N sets=N keys=K served=0x... items=N bytes=N contents=0x...
 *           (items, bytes and contents only when nothing was evicted)
 *   stats: threads=T time=SECONDS hit_ratio=F evictions=N fills=N outofmemory=N items=N
 *   throughput: REQUESTS_PER_SECOND ops/s
 * The program checks every value served, the LRU lists and hash chains, and the counts.
 * Exit status: 0 when the self-check passes, 1 when it fails, 2 on bad usage.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define LOCKSTATS_MAIN /* this file holds lockstats.h's tables */
#include "kvcache.h"

#define MAX_THREADS 1024
#define MAX_TOKENS  8

struct settings settings;
struct stats stats;

static long nrequests = 2000000, nkeys = 32768, get_percent = 90, value_max = 256;
static uint32_t *value_hashes; /* per key: hash() of its value */

struct worker {
    int index;
    long first, last; /* request numbers [first, last) */
    uint64_t served;  /* sum of hash() of every value served to a get */
    uint64_t bad_values;
    uint64_t failed_sets;
};

typedef struct token_s {
    char *value;
    size_t length;
} token_t;

static uint64_t splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

/* Request number i: its key and whether it is a get. */
static long request_key(long i, int *is_get)
{
    uint64_t state = (uint64_t)i * 0xd1342543de82ef95u + 7;
    uint64_t r = splitmix64(&state);
    *is_get = (long)((r >> 40) % 100) < get_percent;
    return (long)((r & 0xffffffffu) % (uint64_t)nkeys);
}

static size_t key_name(long k, char *out)
{
    static const char hex[] = "0123456789abcdef";
    memcpy(out, "key:", 4);
    for (int i = 0; i < 8; i++)
        out[4 + i] = hex[(k >> (28 - 4 * i)) & 15];
    return 12;
}

/* The backing store: key k's value is a slice of 16 to value_max letters of this text. */
#define BACKING_SIZE 65536
static char backing[BACKING_SIZE + VALUE_MAX];

static void backing_init(void)
{
    uint64_t state = 0x5bd1e9955bd1e995u;
    for (size_t i = 0; i < sizeof backing; i++)
        backing[i] = (char)('a' + splitmix64(&state) % 26);
}

static size_t value_of(long k, const char **value)
{
    uint64_t state = (uint64_t)k ^ 0x5bd1e9955bd1e995u;
    uint64_t r = splitmix64(&state);
    *value = &backing[(r >> 16) % BACKING_SIZE];
    return 16 + (size_t)((r & 0xffff) % (uint64_t)(value_max - 15));
}

static long parse_key(const char *key, size_t nkey)
{
    long k = 0;
    if (nkey != 12 || memcmp(key, "key:", 4) != 0)
        return -1;
    for (size_t i = 4; i < nkey; i++) {
        char c = key[i];
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (d < 0)
            return -1;
        k = k * 16 + d;
    }
    return k;
}

/* Is the item's value the value of its key? (for the consistency walk) */
static int item_valid(const item *it)
{
    const char *expect;
    long k = parse_key(ITEM_key(it), it->nkey);
    if (k < 0 || k >= nkeys)
        return 0;
    size_t len = value_of(k, &expect);
    return len == it->nbytes && memcmp(expect, ITEM_data(it), len) == 0;
}

/* memcached's tokenize_command: split at spaces, in place. */
static size_t tokenize_command(char *command, token_t *tokens, size_t max_tokens)
{
    size_t ntokens = 0;
    char *s = command, *e = command;
    for (; ntokens < max_tokens - 1; e++) {
        if (*e == ' ' || *e == '\0') {
            if (s != e) {
                tokens[ntokens].value = s;
                tokens[ntokens].length = (size_t)(e - s);
                ntokens++;
            }
            if (*e == '\0')
                break;
            *e = '\0';
            s = e + 1;
        }
    }
    tokens[ntokens].value = *e == '\0' ? NULL : e;
    tokens[ntokens].length = 0;
    return ntokens + 1;
}

/*
 * The server side: execute one request (a command line, and for a set the data that follows
 * it) and write the reply into out.  Returns the reply's length.
 */
static size_t process_command(struct thread_stats *ts, char *command, const char *data, char *out)
{
    token_t tokens[MAX_TOKENS];
    size_t ntokens = tokenize_command(command, tokens, MAX_TOKENS);

    if (ntokens == 3 && strcmp(tokens[0].value, "get") == 0) {
        const char *key = tokens[1].value;
        size_t nkey = tokens[1].length, nbytes = 0;
        size_t head = (size_t)sprintf(out, "VALUE %s 0 ", key);
        char *value = out + head + 6;
        int found = item_get(key, nkey, value, VALUE_MAX, &nbytes);

        mutex_lock(&ts->mutex);
        ts->get_cmds++;
        if (found > 0) {
            ts->get_hits++;
            ts->bytes_written += nbytes;
        } else {
            ts->get_misses++;
        }
        mutex_unlock(&ts->mutex);
        if (found <= 0)
            return (size_t)sprintf(out,
                                   found == 0 ? "END\r\n" : "SERVER_ERROR object too large\r\n");
        char len[7];
        int n = snprintf(len, sizeof len, "%-4zu\r\n", nbytes); /* fixed width: 6 bytes */
        if (n != 6)
            return (size_t)sprintf(out, "SERVER_ERROR bad length\r\n");
        memcpy(out + head, len, 6);
        memcpy(value + nbytes, "\r\nEND\r\n", 7);
        return head + 6 + nbytes + 7;
    }
    if (ntokens == 6 && strcmp(tokens[0].value, "set") == 0) {
        char *end;
        long vlen = strtol(tokens[4].value, &end, 10);
        int fill = strcmp(tokens[2].value, "1") == 0; /* flags 1: a fill after a miss */
        if (*end != '\0' || vlen < 0 || vlen > VALUE_MAX)
            return (size_t)sprintf(out, "CLIENT_ERROR bad data chunk\r\n");
        item *it = item_alloc(tokens[1].value, tokens[1].length, (size_t)vlen);
        if (it == NULL)
            return (size_t)sprintf(out, "SERVER_ERROR out of memory storing object\r\n");
        memcpy(ITEM_data(it), data, (size_t)vlen);
        item_store(it);

        mutex_lock(&ts->mutex);
        if (fill)
            ts->fills++;
        else
            ts->set_cmds++;
        ts->bytes_read += (uint64_t)vlen;
        mutex_unlock(&ts->mutex);
        return (size_t)sprintf(out, "STORED\r\n");
    }
    return (size_t)sprintf(out, "ERROR\r\n");
}

/* The client side of a set (flags 1 marks a fill after a miss). */
static int client_set(struct thread_stats *ts, long k, int flags, char *command, char *out)
{
    char key[16];
    const char *value;
    size_t nkey = key_name(k, key), len = value_of(k, &value);
    sprintf(command, "set %.*s %d 0 %zu", (int)nkey, key, flags, len);
    process_command(ts, command, value, out);
    return strncmp(out, "STORED\r\n", 8) == 0;
}

static void *worker(void *arg)
{
    struct worker *w = arg;
    struct thread_stats *ts = thread_stats(w->index);
    char command[64], out[VALUE_MAX + 128];
    const char *expect;

    thread_registered();
    for (long i = w->first; i < w->last; i++) {
        int is_get;
        long k = request_key(i, &is_get);
        if (!is_get) {
            if (!client_set(ts, k, 0, command, out))
                w->failed_sets++;
            continue;
        }

        char key[16];
        size_t nkey = key_name(k, key);
        sprintf(command, "get %.*s", (int)nkey, key);
        process_command(ts, command, NULL, out);
        size_t elen = value_of(k, &expect);
        if (strncmp(out, "VALUE ", 6) == 0) {
            /* "VALUE key 0 LEN   \r\n" DATA "\r\nEND\r\n" */
            char *p = out + 6 + nkey + 3, *end;
            long len = strtol(p, &end, 10);
            char *data = out + 6 + nkey + 3 + 6;
            if (len != (long)elen || memcmp(data, expect, elen) != 0 ||
                memcmp(data + len, "\r\nEND\r\n", 7) != 0)
                w->bad_values++;
        } else if (strncmp(out, "END\r\n", 5) == 0) {
            if (!client_set(ts, k, 1, command, out)) /* cache-aside: store what we fetched */
                w->failed_sets++;
        } else {
            w->bad_values++;
        }
        w->served += value_hashes[k]; /* the value checked above, or fetched */
    }
    return NULL;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static long long_arg(const char *s, long min, long max, const char *what)
{
    char *end;
    long v;
    errno = 0;
    v = strtol(s, &end, 10);
    if (errno != 0 || *s == '\0' || *end != '\0' || v < min || v > max) {
        fprintf(stderr, "kvcache: %s must be an integer in [%ld, %ld], not '%s'\n", what, min, max,
                s);
        exit(2);
    }
    return v;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: kvcache [-t THREADS] [-n REQUESTS] [-k KEYS] [-g GET_PERCENT] [-m "
               "MEGABYTES] [-v VALUE_MAX]\n"
               "  -t THREADS      worker threads (default 4)\n"
               "  -n REQUESTS     requests in all (default 2000000)\n"
               "  -k KEYS         distinct keys; more spreads the cache over more memory "
               "(default 32768)\n"
               "  -g GET_PERCENT  share of gets, the rest are sets (default 90)\n"
               "  -m MEGABYTES    cache memory; below the keys' total it evicts (default 64)\n"
               "  -v VALUE_MAX    largest value in bytes, at least 16 (default 256)\n");
}

int main(int argc, char **argv)
{
    int nthreads = 4, opt, failed = 0;
    long megabytes = 64;

    while ((opt = getopt(argc, argv, "t:n:k:g:m:v:h")) != -1) {
        switch (opt) {
        case 't':
            nthreads = (int)long_arg(optarg, 1, MAX_THREADS, "THREADS");
            break;
        case 'n':
            nrequests = long_arg(optarg, 0, 1L << 40, "REQUESTS");
            break;
        case 'k':
            nkeys = long_arg(optarg, 1, 1L << 28, "KEYS");
            break;
        case 'g':
            get_percent = long_arg(optarg, 0, 100, "GET_PERCENT");
            break;
        case 'm':
            megabytes = long_arg(optarg, 4, 1L << 20, "MEGABYTES");
            break;
        case 'v':
            value_max = long_arg(optarg, 16, VALUE_MAX, "VALUE_MAX");
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (optind != argc) {
        usage(stderr);
        return 2;
    }

    settings.maxbytes = (size_t)megabytes << 20;
    settings.num_threads = nthreads;
    settings.factor = 1.25;
    settings.hashpower = 10;
    while (settings.hashpower < 30 && (1L << settings.hashpower) < nkeys)
        settings.hashpower++;
    item_init();
    assoc_init(settings.hashpower);
    slabs_init(settings.maxbytes, settings.factor);
    thread_init(nthreads);

    /* What the clients must see, and what the cache must hold when nothing is evicted. */
    value_hashes = malloc(sizeof *value_hashes * (size_t)nkeys);
    unsigned char *touched = calloc((size_t)nkeys, 1);
    struct worker *workers = calloc((size_t)nthreads, sizeof *workers);
    void **args = calloc((size_t)nthreads, sizeof *args);
    if (value_hashes == NULL || touched == NULL || workers == NULL || args == NULL) {
        fprintf(stderr, "kvcache: calloc: %s\n", strerror(errno));
        return 1;
    }
    uint64_t expect_served = 0, expect_items = 0, expect_bytes = 0, expect_contents = 0;
    long expect_gets = 0;
    backing_init();
    for (long k = 0; k < nkeys; k++) {
        const char *value;
        size_t len = value_of(k, &value);
        value_hashes[k] = hash(value, len);
    }
    for (long i = 0; i < nrequests; i++) {
        int is_get;
        long k = request_key(i, &is_get);
        if (is_get) {
            expect_gets++;
            expect_served += value_hashes[k];
        }
        if (!touched[k]) {
            char key[16];
            const char *value;
            size_t nkey = key_name(k, key), len = value_of(k, &value);
            touched[k] = 1;
            expect_items++;
            expect_bytes += sizeof(item) + nkey + len;
            expect_contents += (uint64_t)hash(key, nkey) * 0x9e3779b97f4a7c15u ^ value_hashes[k];
        }
    }

    for (int i = 0; i < nthreads; i++) {
        workers[i].index = i;
        workers[i].first =
            nrequests / nthreads * i + (i < nrequests % nthreads ? i : nrequests % nthreads);
        workers[i].last = workers[i].first + nrequests / nthreads + (i < nrequests % nthreads);
        args[i] = &workers[i];
    }
    double t0 = now();
    threads_run(worker, args);
    double elapsed = now() - t0;
    LOCKSTATS_REPORT((uint64_t)(elapsed * 1e9), nthreads);

    /* Self-check. */
    struct thread_stats totals;
    struct cache_check check;
    uint64_t served = 0, bad_values = 0, failed_sets = 0;
    for (int i = 0; i < nthreads; i++) {
        served += workers[i].served;
        bad_values += workers[i].bad_values;
        failed_sets += workers[i].failed_sets;
    }
    threadlocal_stats_aggregate(&totals);
    item_check(&check, item_valid);
    int complete = stats.evictions == 0 && stats.outofmemory == 0;

    if (bad_values != 0 || check.bad_values != 0) {
        fprintf(stderr,
                "kvcache: self-check failed: %llu wrong values served, %llu in the "
                "cache\n",
                (unsigned long long)bad_values, (unsigned long long)check.bad_values);
        failed = 1;
    }
    if (served != expect_served) {
        fprintf(stderr, "kvcache: self-check failed: served checksum differs\n");
        failed = 1;
    }
    if (totals.get_cmds != (uint64_t)expect_gets ||
        totals.set_cmds + failed_sets < (uint64_t)(nrequests - expect_gets) ||
        totals.get_hits + totals.get_misses != totals.get_cmds ||
        stats.started_threads != nthreads) {
        fprintf(stderr,
                "kvcache: self-check failed: %llu gets counted (expected %ld), %llu sets "
                "(%llu failed), %llu hits + %llu misses, %d threads started\n",
                (unsigned long long)totals.get_cmds, expect_gets,
                (unsigned long long)totals.set_cmds, (unsigned long long)failed_sets,
                (unsigned long long)totals.get_hits, (unsigned long long)totals.get_misses,
                stats.started_threads);
        failed = 1;
    }
    if (check.bad_links != 0 || check.lru_items != check.hash_items ||
        check.lru_items != stats.curr_items || check.bytes != stats.curr_bytes) {
        fprintf(stderr,
                "kvcache: self-check failed: %llu broken LRU links, %llu items in the "
                "LRU lists, %llu in the hash table, %llu counted; %llu bytes, %llu "
                "counted\n",
                (unsigned long long)check.bad_links, (unsigned long long)check.lru_items,
                (unsigned long long)check.hash_items, (unsigned long long)stats.curr_items,
                (unsigned long long)check.bytes, (unsigned long long)stats.curr_bytes);
        failed = 1;
    }
    if (complete && (check.lru_items != expect_items || check.bytes != expect_bytes ||
                     check.contents != expect_contents || failed_sets != 0)) {
        fprintf(stderr,
                "kvcache: self-check failed: the cache holds %llu items (expected %llu) "
                "of %llu bytes (expected %llu)\n",
                (unsigned long long)check.lru_items, (unsigned long long)expect_items,
                (unsigned long long)check.bytes, (unsigned long long)expect_bytes);
        failed = 1;
    }

    printf("result: requests=%ld gets=%llu sets=%ld keys=%ld served=0x%016llx", nrequests,
           (unsigned long long)totals.get_cmds, nrequests - expect_gets, nkeys,
           (unsigned long long)served);
    if (complete)
        printf(" items=%llu bytes=%llu contents=0x%016llx", (unsigned long long)check.lru_items,
               (unsigned long long)check.bytes, (unsigned long long)check.contents);
    printf("\n");
    printf("stats: threads=%d time=%.6f hit_ratio=%.4f evictions=%llu fills=%llu "
           "outofmemory=%llu items=%llu\n",
           nthreads, elapsed,
           totals.get_cmds ? (double)totals.get_hits / (double)totals.get_cmds : 0.0,
           (unsigned long long)stats.evictions, (unsigned long long)totals.fills,
           (unsigned long long)stats.outofmemory, (unsigned long long)check.lru_items);
    printf("throughput: %.0f ops/s\n", elapsed > 0 ? (double)nrequests / elapsed : 0.0);
    free(touched);
    free(value_hashes);
    free(workers);
    free(args);
    return failed;
}
