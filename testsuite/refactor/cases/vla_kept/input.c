/* A variable-length array declared before the section: kept. */
#include "harness.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long total;

static void add(int n)
{
    int values[n];
    for (int i = 0; i < n; i++)
        values[i] = i;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < n; i++)
        total += values[i];
    pthread_mutex_unlock(&lock);
}

static void *worker(void *arg)
{
    (void)arg;
    for (int i = 0; i < ITERS; i++)
        add(1 + i % 5);
    return NULL;
}

int main(void)
{
    run_threads(worker);
    printf("total %ld\n", total);
    return 0;
}
