/* A section that uses a thread-local variable runs on its caller's thread. */
#include "harness.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static _Thread_local long mine;
static long total, per_thread[NTHREADS];

/* Critical section of worker() on &lock (input.c:12-15), extracted by locktune-extract. */
static void *worker__cs1(void *lt_arg)
{
    (void)lt_arg;

    mine++;
    total++;
    return NULL;
}

static void *worker(void *arg)
{
    long id = (long)arg;
    for (int i = 0; i < ITERS; i++) {
        lt_execute_ex(&lock, worker__cs1, NULL, LT_EXEC_ON_CALLER);
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
