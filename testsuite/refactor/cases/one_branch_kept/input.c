/* The lock is taken in one branch only, and released under the same condition later. */
#include "harness.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long shared, unshared;

static void update(int shared_too)
{
    if (shared_too)
        pthread_mutex_lock(&lock);
    if (shared_too)
        shared++;
    else
        unshared++;
    if (shared_too)
        pthread_mutex_unlock(&lock);
}

static void *worker(void *arg)
{
    (void)arg;
    for (int i = 0; i < ITERS; i++)
        update(1);
    return NULL;
}

int main(void)
{
    run_threads(worker);
    update(0);
    printf("shared %ld unshared %ld\n", shared, unshared);
    return 0;
}
