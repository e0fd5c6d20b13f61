/* Locks that are struct fields: through a pointer, through a struct, and nested. */
#include "harness.h"

struct stats {
    pthread_mutex_t mutex;
    long gets, sets;
};

struct thread {
    int id;
    struct stats stats;
};

static struct thread threads[2] = {
    {0, {PTHREAD_MUTEX_INITIALIZER, 0, 0}},
    {1, {PTHREAD_MUTEX_INITIALIZER, 0, 0}},
};

static void record(struct thread *t, int set)
{
    pthread_mutex_lock(&t->stats.mutex);
    if (set)
        t->stats.sets++;
    else
        t->stats.gets++;
    pthread_mutex_unlock(&t->stats.mutex);
}

static long total(int which)
{
    long sum;
    pthread_mutex_lock(&threads[which].stats.mutex);
    sum = threads[which].stats.gets + threads[which].stats.sets;
    pthread_mutex_unlock(&threads[which].stats.mutex);
    return sum;
}

static void *worker(void *arg)
{
    long id = (long)arg;
    for (int i = 0; i < ITERS; i++)
        record(&threads[(id + i) % 2], i % 3 == 0);
    return NULL;
}

int main(void)
{
    run_threads(worker);
    printf("totals %ld %ld\n", total(0), total(1));
    return 0;
}
