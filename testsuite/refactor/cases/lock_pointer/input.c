/* The lock is reached through a pointer parameter. */
#include "harness.h"

static pthread_mutex_t locks[2] = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER};
static long hits[2];

static void count(pthread_mutex_t *m, long *hit)
{
    pthread_mutex_lock(m);
    (*hit)++;
    pthread_mutex_unlock(m);
}

static void *worker(void *arg)
{
    long id = (long)arg;
    for (int i = 0; i < ITERS; i++)
        count(&locks[id % 2], &hits[id % 2]);
    return NULL;
}

int main(void)
{
    run_threads(worker);
    printf("hits %ld %ld\n", hits[0], hits[1]);
    return 0;
}
