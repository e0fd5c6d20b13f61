/* A struct declared in the section and used after it is copied back. */
#include "harness.h"

struct pair {
    long lo, hi;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct pair range = {0, 0};

static long widen(long v)
{
    pthread_mutex_lock(&lock);
    if (v < range.lo)
        range.lo = v;
    if (v > range.hi)
        range.hi = v;
    struct pair snapshot = range;
    pthread_mutex_unlock(&lock);
    return snapshot.hi - snapshot.lo;
}

static void *worker(void *arg)
{
    long id = (long)arg, width = 0;
    for (int i = 0; i < ITERS; i++)
        width = widen(id * 1000 + i);
    return (void *)width;
}

int main(void)
{
    run_threads(worker);
    printf("range %ld..%ld\n", range.lo, range.hi);
    return 0;
}
