/* The section changes a variable its lock expression uses: kept. */
#include "harness.h"

static pthread_mutex_t locks[4] = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER,
                                   PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER};
static long counts[4];

static void *worker(void *arg)
{
    (void)arg;
    for (int i = 0; i < ITERS; i++) {
        int k = i % 4;
        pthread_mutex_lock(&locks[k]);
        counts[k]++;
        k = k + 0; /* looks harmless, but the unlock below reads k again */
        pthread_mutex_unlock(&locks[k]);
    }
    return NULL;
}

int main(void)
{
    run_threads(worker);
    printf("%ld %ld %ld %ld\n", counts[0], counts[1], counts[2], counts[3]);
    return 0;
}
