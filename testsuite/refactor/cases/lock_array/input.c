/* A striped lock table: the lock is an element chosen by index, initialised in a loop. */
#include "harness.h"

#define STRIPES 8
static pthread_mutex_t stripe_locks[STRIPES];
static long buckets[STRIPES * 4];

static void add(unsigned key, long v)
{
    unsigned s = key % STRIPES;
    pthread_mutex_lock(&stripe_locks[s]);
    buckets[s * 4 + key / STRIPES % 4] += v;
    pthread_mutex_unlock(&stripe_locks[s]);
}

static void *worker(void *arg)
{
    long id = (long)arg;
    for (int i = 0; i < ITERS; i++)
        add((unsigned)(i * 13 + id), 1);
    return NULL;
}

int main(void)
{
    long total = 0;
    for (int i = 0; i < STRIPES; i++)
        pthread_mutex_init(&stripe_locks[i], NULL);
    run_threads(worker);
    for (int i = 0; i < STRIPES * 4; i++)
        total += buckets[i];
    printf("total %ld\n", total);
    return 0;
}
