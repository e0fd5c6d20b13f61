/* Lock wrapper functions named on the command line (--lock-wrapper), defined in another
 * file around locks static to it, like memcached's item_lock(hv): the rewriter gives them
 * an accessor so that this file's sections can be extracted. */
#include <pthread.h>
#include <stdio.h>

#include "buckets.h"

#define THREADS 4
#define ITERS 3000

static long buckets[64];

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
    buckets_init();
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
// CHECK: lt_execute(lt_lock_of_bucket_lock(hv), worker__cs1, &lt_cs1);
// EXTRACTED: 1
