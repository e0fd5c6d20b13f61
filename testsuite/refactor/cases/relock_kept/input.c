/* A lock taken in a loop and released after it (a recursive mutex): kept. */
#include "harness.h"

static pthread_mutex_t lock;
static long depth_total;

static void nest(int depth)
{
    for (int i = 0; i < depth; i++)
        pthread_mutex_lock(&lock);
    depth_total += depth;
    for (int i = 0; i < depth; i++)
        pthread_mutex_unlock(&lock);
}

static void *worker(void *arg)
{
    (void)arg;
    for (int i = 0; i < ITERS; i++)
        nest(1 + i % 3);
    return NULL;
}

int main(void)
{
    pthread_mutexattr_t attr;
    pthread_mutexattr_init(&attr);
    pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
    pthread_mutex_init(&lock, &attr);
    run_threads(worker);
    printf("depth %ld\n", depth_total);
    return 0;
}
