/* Striped locks: an array of locks indexed by a hash, initialised in a loop. */
#include <pthread.h>
#include <stdio.h>

#define THREADS 4
#define ITERS 3000
#define STRIPES 16
#define BUCKETS 128

static pthread_mutex_t stripes[STRIPES];
static long buckets[BUCKETS];

static unsigned hash(unsigned x)
{
    x ^= x >> 7;
    x *= 2654435761u;
    return x ^ (x >> 13);
}

static void add(unsigned key, long v)
{
    unsigned b = hash(key) % BUCKETS;
    pthread_mutex_lock(&stripes[b % STRIPES]);
    buckets[b] += v;
    pthread_mutex_unlock(&stripes[b % STRIPES]);
}

static void *worker(void *arg)
{
    long id = (long)arg;
    for (int i = 0; i < ITERS; i++)
        add((unsigned)(i * 17 + id), i % 3 + 1);
    return NULL;
}

int main(void)
{
    for (int i = 0; i < STRIPES; i++)
        pthread_mutex_init(&stripes[i], NULL);
    pthread_t t[THREADS];
    for (long i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    long total = 0, hi = 0;
    for (int i = 0; i < BUCKETS; i++) {
        total += buckets[i];
        if (buckets[i] > hi)
            hi = buckets[i];
    }
    printf("total %ld max %ld\n", total, hi);
    return 0;
}
// CHECK: static lt_mutex_t stripes[STRIPES];
// CHECK: lt_mutex_init(&stripes[i], NULL, LT_SITE_MAIN_C_39);
