/*
 * wordcount - a legacy-style parallel word count, modelled on Phoenix's word_count.
 *
 *   wordcount [-t THREADS] [-n WORDS] [-v VOCABULARY] [-c CHUNK] [-l LOCKS] [-k TOP]
 *
 * The input is a text of WORDS words drawn from a VOCABULARY-word lexicon with a skewed,
 * Zipf-like frequency (generated in memory from a fixed seed, so that every run counts the
 * same text).  As in Phoenix, workers ask a splitter for the next chunk of about CHUNK words
 * (cut at a word boundary) and "emit" every word they find into one shared hash table.
 *
 * Locks:
 *   table_locks[] HOT.  The shared word table: NBUCKETS chains of malloc'd entries, kept in
 *                 move-to-front order, behind LOCKS stripe locks (an array; one stripe by
 *                 default, that is one global table lock).  Every word takes one: the stripe's
 *                 lock, the bucket head, the entries walked on the chain and the stripe's
 *                 counters are each a different cache line, scattered over megabytes.
 *   tq.lock       WARM.  The splitter (Phoenix's task queue): once per chunk; hot when CHUNK
 *                 is small.
 *   stats_lock    COLD.  Merges each worker's own counts at its end.
 *
 * Output (identical for every thread count, stripe count and interleaving; the program checks
 * the table against the counts kept while the text was generated: total, distinct words and
 * a hash sum over all occurrences):
 *   result: words=N distinct=D chunks=C checksum=0x... top=WORD:COUNT,...
 *   stats: threads=T locks=L time=SECONDS longest_chain=N
 *   throughput: WORDS_PER_SECOND ops/s
 * Exit status: 0 when the self-check passes, 1 when it fails, 2 on bad usage.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define LOCKSTATS_MAIN /* this file holds lockstats.h's tables */
#include "lockstats.h"

#define MAX_THREADS 1024
#define MAX_LOCKS   1024
#define NBUCKETS    16384 /* a power of two */
#define MAX_WORD    64

struct entry {
    struct entry *next;
    uint64_t hash;
    long count;
    size_t len;
    char word[];
};

/* Counters of one stripe of the table, under its lock. */
struct stripe {
    long words;
    long distinct;
};

struct task_queue {
    pthread_mutex_t lock;
    const char *cursor, *end;
    size_t chunk_bytes;
    long chunks;
};

static pthread_mutex_t table_locks[MAX_LOCKS];
static struct entry *buckets[NBUCKETS];
static struct stripe stripes[MAX_LOCKS];
static int nlocks = 1;

static struct task_queue tq;

static pthread_mutex_t stats_lock = PTHREAD_MUTEX_INITIALIZER;
static long tokenized; /* words the workers found, under stats_lock */

static const char *const syllables[32] = {
    "ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo", "ba", "de", "fi", "go", "hu", "ja", "ke", "li",
    "ma", "no", "pi", "qu", "re", "so", "tu", "va", "we", "xi", "yo", "ze", "an", "el", "is", "or"};

static _Noreturn void die(const char *what)
{
    fprintf(stderr, "wordcount: %s: %s\n", what, strerror(errno));
    exit(1);
}

static uint64_t splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

static uint64_t word_hash(const char *w, size_t len)
{
    uint64_t h = 0xcbf29ce484222325u;
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)w[i]) * 0x100000001b3u;
    return h;
}

/* Lexicon word number i: its base-32 digits as syllables, so different numbers spell
 * different words and frequent (small) numbers are short words. */
static size_t spell(long i, char *out)
{
    char digits[16];
    int n = 0;
    size_t len = 0;
    do {
        digits[n++] = (char)(i % 32);
        i /= 32;
    } while (i > 0);
    while (n > 0) {
        const char *s = syllables[(int)digits[--n]];
        out[len++] = s[0];
        out[len++] = s[1];
    }
    return len;
}

static int is_word_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/*
 * The input text: sentences of 4 to 15 words, capitalised, with commas, full stops and line
 * breaks.  Also returns what a correct count must find: the total, the number of distinct
 * words and the sum of the words' hashes over all occurrences.
 */
static char *make_text(long nwords, long vocabulary, size_t *size, long *distinct,
                       uint64_t *hash_sum)
{
    size_t cap = (size_t)nwords * 12 + 64, len = 0;
    char *text = malloc(cap);
    unsigned char *seen = calloc((size_t)vocabulary, 1);
    uint64_t seed = 2011;
    long sentence = 0;

    if (text == NULL || seen == NULL)
        die("malloc");
    *distinct = 0;
    *hash_sum = 0;
    for (long w = 0; w < nwords; w++) {
        double u = (double)(splitmix64(&seed) >> 11) * (1.0 / 9007199254740992.0);
        long i = (long)((double)vocabulary * u * u * u); /* skewed towards the first words */
        char word[MAX_WORD];
        size_t n = spell(i, word);

        if (!seen[i]) {
            seen[i] = 1;
            ++*distinct;
        }
        *hash_sum += word_hash(word, n);
        if (len + n + 4 > cap) {
            cap *= 2;
            char *bigger = realloc(text, cap);
            if (bigger == NULL)
                die("realloc");
            text = bigger;
        }
        if (sentence == 0) {
            sentence = 4 + (long)(splitmix64(&seed) % 12);
            word[0] = (char)(word[0] - 'a' + 'A');
        }
        memcpy(text + len, word, n);
        len += n;
        if (--sentence == 0)
            text[len++] = '.';
        else if (splitmix64(&seed) % 9 == 0)
            text[len++] = ',';
        text[len++] = splitmix64(&seed) % 13 == 0 ? '\n' : ' ';
    }
    free(seen);
    *size = len;
    return text;
}

/* Phoenix's splitter: the next chunk of about tq.chunk_bytes, ending at a word boundary. */
static int next_chunk(struct task_queue *q, const char **start, size_t *len)
{
    const char *stop;

    pthread_mutex_lock(&q->lock);
    if (q->cursor == q->end) {
        pthread_mutex_unlock(&q->lock);
        return 0;
    }
    stop = q->end - q->cursor > (long)q->chunk_bytes ? q->cursor + q->chunk_bytes : q->end;
    while (stop < q->end && is_word_char(*stop))
        stop++;
    *start = q->cursor;
    *len = (size_t)(stop - q->cursor);
    q->cursor = stop;
    q->chunks++;
    pthread_mutex_unlock(&q->lock);
    return 1;
}

/* Count one occurrence of the (lower-case) word. */
static void emit(const char *word, size_t len, uint64_t hash)
{
    size_t b = hash & (NBUCKETS - 1);
    int s = (int)(b % (size_t)nlocks);
    struct entry *e, *prev = NULL;

    pthread_mutex_lock(&table_locks[s]);
    for (e = buckets[b]; e != NULL; prev = e, e = e->next) {
        if (e->hash == hash && e->len == len && memcmp(e->word, word, len) == 0) {
            e->count++;
            stripes[s].words++;
            if (prev != NULL) { /* move to front: frequent words stay near the head */
                prev->next = e->next;
                e->next = buckets[b];
                buckets[b] = e;
            }
            pthread_mutex_unlock(&table_locks[s]);
            return;
        }
    }
    e = malloc(sizeof *e + len + 1);
    if (e == NULL) {
        pthread_mutex_unlock(&table_locks[s]);
        die("malloc");
    }
    e->hash = hash;
    e->count = 1;
    e->len = len;
    memcpy(e->word, word, len);
    e->word[len] = '\0';
    e->next = buckets[b];
    buckets[b] = e;
    stripes[s].words++;
    stripes[s].distinct++;
    pthread_mutex_unlock(&table_locks[s]);
}

static void *worker(void *arg)
{
    const char *chunk;
    size_t len;
    long words = 0;

    (void)arg;
    while (next_chunk(&tq, &chunk, &len)) {
        size_t i = 0;
        while (i < len) {
            char word[MAX_WORD];
            size_t n = 0;
            uint64_t h = 0xcbf29ce484222325u;
            while (i < len && !is_word_char(chunk[i]))
                i++;
            while (i < len && is_word_char(chunk[i])) {
                char c = chunk[i++];
                if (c >= 'A' && c <= 'Z')
                    c = (char)(c - 'A' + 'a');
                if (n < MAX_WORD) {
                    word[n++] = c;
                    h = (h ^ (unsigned char)c) * 0x100000001b3u;
                }
            }
            if (n > 0) {
                emit(word, n, h);
                words++;
            }
        }
    }

    pthread_mutex_lock(&stats_lock);
    tokenized += words;
    pthread_mutex_unlock(&stats_lock);
    return NULL;
}

static int by_count(const void *a, const void *b)
{
    const struct entry *x = *(const struct entry *const *)a, *y = *(const struct entry *const *)b;
    if (x->count != y->count)
        return x->count > y->count ? -1 : 1;
    return strcmp(x->word, y->word);
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
        fprintf(stderr, "wordcount: %s must be an integer in [%ld, %ld], not '%s'\n", what, min,
                max, s);
        exit(2);
    }
    return v;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: wordcount [-t THREADS] [-n WORDS] [-v VOCABULARY] [-c CHUNK] [-l LOCKS] "
               "[-k TOP]\n"
               "  -t THREADS     worker threads (default 4)\n"
               "  -n WORDS       words in the generated text (default 6000000)\n"
               "  -v VOCABULARY  distinct words to draw from (default 65536)\n"
               "  -c CHUNK       words per splitter chunk; smaller makes the splitter hotter "
               "(default 256)\n"
               "  -l LOCKS       stripe locks over the word table; more makes it cooler "
               "(default 1)\n"
               "  -k TOP         most frequent words to print (default 5)\n");
}

int main(int argc, char **argv)
{
    long nwords = 6000000, vocabulary = 65536, chunk_words = 256, top = 5;
    int nthreads = 4, opt, err, failed = 0;
    pthread_t *threads;

    while ((opt = getopt(argc, argv, "t:n:v:c:l:k:h")) != -1) {
        switch (opt) {
        case 't':
            nthreads = (int)long_arg(optarg, 1, MAX_THREADS, "THREADS");
            break;
        case 'n':
            nwords = long_arg(optarg, 0, 1L << 32, "WORDS");
            break;
        case 'v':
            vocabulary = long_arg(optarg, 1, 1L << 30, "VOCABULARY");
            break;
        case 'c':
            chunk_words = long_arg(optarg, 1, 1L << 30, "CHUNK");
            break;
        case 'l':
            nlocks = (int)long_arg(optarg, 1, MAX_LOCKS, "LOCKS");
            break;
        case 'k':
            top = long_arg(optarg, 0, 1000, "TOP");
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

    for (int i = 0; i < nlocks; i++) {
        if ((err = pthread_mutex_init(&table_locks[i], NULL)) != 0) {
            errno = err;
            die("pthread_mutex_init");
        }
        LOCKSTATS_NAME(&table_locks[i], "table_locks");
    }
    if ((err = pthread_mutex_init(&tq.lock, NULL)) != 0) {
        errno = err;
        die("pthread_mutex_init");
    }
    LOCKSTATS_NAME(&tq.lock, "tq.lock");
    LOCKSTATS_NAME(&stats_lock, "stats_lock");

    size_t size;
    long expect_distinct;
    uint64_t expect_hash_sum;
    char *text = make_text(nwords, vocabulary, &size, &expect_distinct, &expect_hash_sum);
    tq.cursor = text;
    tq.end = text + size;
    tq.chunk_bytes = (size_t)chunk_words * (size / (size_t)(nwords > 0 ? nwords : 1));
    if (tq.chunk_bytes == 0)
        tq.chunk_bytes = 1;

    threads = calloc((size_t)nthreads, sizeof *threads);
    if (threads == NULL)
        die("calloc");
    double t0 = now();
    for (int i = 0; i < nthreads; i++) {
        if ((err = pthread_create(&threads[i], NULL, worker, NULL)) != 0) {
            errno = err;
            die("pthread_create");
        }
    }
    for (int i = 0; i < nthreads; i++)
        pthread_join(threads[i], NULL);
    double elapsed = now() - t0;
    LOCKSTATS_REPORT((uint64_t)(elapsed * 1e9), nthreads);

    /* Collect the table: totals, checksum, longest chain; then the self-check. */
    long total = 0, entries = 0, stripe_words = 0, stripe_distinct = 0, longest = 0;
    uint64_t hash_sum = 0, checksum = 0;
    for (size_t b = 0; b < NBUCKETS; b++) {
        long chain = 0;
        for (struct entry *e = buckets[b]; e != NULL; e = e->next) {
            uint64_t mix = e->hash ^ ((uint64_t)e->count * 0x9e3779b97f4a7c15u);
            total += e->count;
            hash_sum += e->hash * (uint64_t)e->count;
            checksum += splitmix64(&mix);
            entries++;
            chain++;
        }
        longest = chain > longest ? chain : longest;
    }
    for (int s = 0; s < nlocks; s++) {
        stripe_words += stripes[s].words;
        stripe_distinct += stripes[s].distinct;
    }
    if (total != nwords || tokenized != nwords || stripe_words != nwords) {
        fprintf(stderr,
                "wordcount: self-check failed: %ld words generated, %ld tokenized, %ld in "
                "the table, %ld in the stripe counters\n",
                nwords, tokenized, total, stripe_words);
        failed = 1;
    }
    if (entries != expect_distinct || stripe_distinct != expect_distinct) {
        fprintf(stderr,
                "wordcount: self-check failed: %ld distinct words generated, %ld in the "
                "table, %ld in the stripe counters\n",
                expect_distinct, entries, stripe_distinct);
        failed = 1;
    }
    if (hash_sum != expect_hash_sum) {
        fprintf(stderr,
                "wordcount: self-check failed: word hash sum 0x%016llx, expected "
                "0x%016llx\n",
                (unsigned long long)hash_sum, (unsigned long long)expect_hash_sum);
        failed = 1;
    }

    struct entry **sorted = malloc(sizeof *sorted * (size_t)(entries > 0 ? entries : 1));
    if (sorted == NULL)
        die("malloc");
    long k = 0;
    for (size_t b = 0; b < NBUCKETS; b++)
        for (struct entry *e = buckets[b]; e != NULL && k < entries; e = e->next)
            sorted[k++] = e;
    qsort(sorted, (size_t)k, sizeof *sorted, by_count);

    printf("result: words=%ld distinct=%ld chunks=%ld checksum=0x%016llx top=", total, entries,
           tq.chunks, (unsigned long long)checksum);
    for (long i = 0; i < top && i < k; i++)
        printf("%s%s:%ld", i ? "," : "", sorted[i]->word, sorted[i]->count);
    printf("\n");
    printf("stats: threads=%d locks=%d time=%.6f longest_chain=%ld\n", nthreads, nlocks, elapsed,
           longest);
    printf("throughput: %.0f ops/s\n", elapsed > 0 ? (double)total / elapsed : 0.0);

    for (size_t b = 0; b < NBUCKETS; b++)
        while (buckets[b] != NULL) {
            struct entry *e = buckets[b];
            buckets[b] = e->next;
            free(e);
        }
    free(sorted);
    free(threads);
    free(text);
    return failed;
}
