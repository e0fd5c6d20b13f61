/* A section that uses a thread-local variable runs on its caller's thread. */
#include "harness.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static _Thread_local long mine;
static long total, per_thread[NTHREADS];

static void *worker(void *arg)
{
    long id = (long)arg;
    for (int i = 0; i < ITERS; i++) {
        pthread_mutex_lock(&lock);
        mine++;
        total++;
        pthread_mutex_unlock(&lock);
    }
    per_thread[id] = mine;
    return NULL;
}

int main(void)
{
    run_threads(worker);
    for (int i = 0; i < NTHREADS; i++)
        printf("thread %d: %ld\n", i, per_thread[i]);
    printf("total %ld\n", total);
    return 0;
}
