/* abort() while holding the lock is fine (the process ends); exit() after the unlock is an
 * early exit like return. */
#include "harness.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long total;

static void add(long v)
{
    pthread_mutex_lock(&lock);
    if (v < 0)
        abort();
    total += v;
    if (total < 0) {
        pthread_mutex_unlock(&lock);
        fprintf(stderr, "overflow\n");
        exit(2);
    }
    pthread_mutex_unlock(&lock);
}

static void *worker(void *arg)
{
    (void)arg;
    for (int i = 0; i < ITERS; i++)
        add(i);
    return NULL;
}

int main(void)
{
    run_threads(worker);
    printf("total %ld\n", total);
    return 0;
}
