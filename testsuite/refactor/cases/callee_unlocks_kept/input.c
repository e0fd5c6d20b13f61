/* The section calls a function that releases the lock itself: kept. */
#include "harness.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long n, flushed;

static void flush_and_unlock(void)
{
    flushed++;
    pthread_mutex_unlock(&lock);
}

static void put(void)
{
    pthread_mutex_lock(&lock);
    n++;
    if (n % 100 == 0) {
        flush_and_unlock();
        return;
    }
    pthread_mutex_unlock(&lock);
}

static void *worker(void *arg)
{
    (void)arg;
    for (int i = 0; i < ITERS; i++)
        put();
    return NULL;
}

int main(void)
{
    run_threads(worker);
    printf("n %ld flushed %ld\n", n, flushed);
    return 0;
}
