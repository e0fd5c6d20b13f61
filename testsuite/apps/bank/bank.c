/*
 * bank - a legacy-style lock-bound program: threads move money between accounts.
 *
 *   bank [THREADS] [TRANSFERS_PER_THREAD]
 *
 * Every transfer takes the global ledger lock (hot: a shared journal and totals, poor
 * locality) and then the two account locks in address order.  The output is deterministic:
 * the total is conserved and the journal holds exactly THREADS * TRANSFERS entries.  The last
 * line is the throughput, in the format every bundled app uses: `throughput: N ops/s`.
 */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define ACCOUNTS 64
#define JOURNAL  4096

struct account {
    pthread_mutex_t lock;
    long balance;
};

static struct account accounts[ACCOUNTS];
static pthread_mutex_t ledger_lock = PTHREAD_MUTEX_INITIALIZER;
static long journal[JOURNAL];
static long journal_entries;
static long moved_total;

struct worker {
    pthread_t thread;
    unsigned seed;
    long transfers;
};

static void transfer(int from, int to, long amount)
{
    struct account *a = &accounts[from < to ? from : to];
    struct account *b = &accounts[from < to ? to : from];

    pthread_mutex_lock(&ledger_lock);
    journal[journal_entries % JOURNAL] += amount;
    journal_entries++;
    moved_total += amount;
    pthread_mutex_unlock(&ledger_lock);

    pthread_mutex_lock(&a->lock);
    pthread_mutex_lock(&b->lock);
    accounts[from].balance -= amount;
    accounts[to].balance += amount;
    pthread_mutex_unlock(&b->lock);
    pthread_mutex_unlock(&a->lock);
}

static void *run(void *arg)
{
    struct worker *w = arg;
    for (long i = 0; i < w->transfers; i++) {
        int from = rand_r(&w->seed) % ACCOUNTS;
        int to = rand_r(&w->seed) % ACCOUNTS;
        if (from == to)
            to = (to + 1) % ACCOUNTS;
        transfer(from, to, 1 + rand_r(&w->seed) % 100);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int threads = argc > 1 ? atoi(argv[1]) : 4;
    long transfers = argc > 2 ? atol(argv[2]) : 100000;
    if (threads < 1 || transfers < 0) {
        fprintf(stderr, "usage: bank [THREADS] [TRANSFERS_PER_THREAD]\n");
        return 2;
    }
    for (int i = 0; i < ACCOUNTS; i++) {
        pthread_mutex_init(&accounts[i].lock, NULL);
        accounts[i].balance = 1000;
    }
    struct worker *w = calloc((size_t)threads, sizeof *w);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 0; i < threads; i++) {
        w[i].seed = 12345u + (unsigned)i;
        w[i].transfers = transfers;
        pthread_create(&w[i].thread, NULL, run, &w[i]);
    }
    for (int i = 0; i < threads; i++)
        pthread_join(w[i].thread, NULL);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double elapsed = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
    long total = 0;
    for (int i = 0; i < ACCOUNTS; i++)
        total += accounts[i].balance;
    printf("total %ld (expected %ld), journal entries %ld, moved %ld\n", total, 1000L * ACCOUNTS,
           journal_entries, moved_total);
    printf("throughput: %.0f ops/s\n", elapsed > 0 ? (double)journal_entries / elapsed : 0.0);
    free(w);
    return total == 1000L * ACCOUNTS && journal_entries == (long)threads * transfers ? 0 : 1;
}
