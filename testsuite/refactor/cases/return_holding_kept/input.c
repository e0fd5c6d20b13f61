/* A function that returns with the lock held on one path (the caller unlocks). */
#include "harness.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long items;

static int reserve(int n)
{
    pthread_mutex_lock(&lock);
    if (items + n > 1000000)
        return 1; /* still holding: the caller releases */
    items += n;
    pthread_mutex_unlock(&lock);
    return 0;
}

static void *worker(void *arg)
{
    (void)arg;
    for (int i = 0; i < ITERS; i++)
        if (reserve(1))
            pthread_mutex_unlock(&lock);
    return NULL;
}

int main(void)
{
    run_threads(worker);
    printf("items %ld\n", items);
    return 0;
}
