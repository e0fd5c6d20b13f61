/* Lock wrapper functions named on the command line (--lock-wrapper): the lock is computed
 * from the argument, like memcached's item_lock(hv). */
#include <pthread.h>
#include <stdio.h>

#define THREADS 4
#define ITERS 3000
#define LOCKS 8

static pthread_mutex_t bucket_locks[LOCKS];
static long buckets[64];

void bucket_lock(unsigned hv);
void bucket_unlock(unsigned hv);

void bucket_lock(unsigned hv)
{
    pthread_mutex_lock(&bucket_locks[hv % LOCKS]);
}

void bucket_unlock(unsigned hv)
{
    pthread_mutex_unlock(&bucket_locks[hv % LOCKS]);
}

static void *worker(void *arg)
{
    long id = (long)arg;
    for (int i = 0; i < ITERS; i++) {
        unsigned hv = (unsigned)(i * 11 + id);
        bucket_lock(hv);
        buckets[hv % 64] += 1;
        bucket_unlock(hv);
    }
    return NULL;
}

int main(void)
{
    for (int i = 0; i < LOCKS; i++)
        pthread_mutex_init(&bucket_locks[i], NULL);
    pthread_t t[THREADS];
    for (long i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    long total = 0;
    for (int i = 0; i < 64; i++)
        total += buckets[i] * (i + 1);
    printf("weighted %ld\n", total);
    return 0;
}
// LOCKTUNE-ARGS: --lock-wrapper bucket_lock=lock --lock-wrapper bucket_unlock=unlock
