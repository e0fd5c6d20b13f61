/* A local struct read and filled inside the section (structs are passed by pointer). */
#include <pthread.h>
#include <stdio.h>

#define THREADS 4
#define ITERS 3000

struct sample {
    long count;
    long min, max;
    double sum;
};

static pthread_mutex_t stat_lock = PTHREAD_MUTEX_INITIALIZER;
static struct sample global = {0, 1000000, -1, 0.0};

static struct sample observe(long v)
{
    struct sample copy;
    pthread_mutex_lock(&stat_lock);
    global.count++;
    if (v < global.min)
        global.min = v;
    if (v > global.max)
        global.max = v;
    global.sum += (double)v;
    copy = global;
    pthread_mutex_unlock(&stat_lock);
    return copy;
}

static long seen[THREADS];

static void *worker(void *arg)
{
    long id = (long)arg;
    for (int i = 0; i < ITERS; i++) {
        struct sample s = observe((i * 37 + id) % 1000);
        seen[id] += s.count > 0;
    }
    return NULL;
}

int main(void)
{
    pthread_t t[THREADS];
    for (long i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    long total = 0;
    for (int i = 0; i < THREADS; i++)
        total += seen[i];
    printf("count %ld min %ld max %ld seen %ld sum %.0f\n", global.count, global.min,
           global.max, total, global.sum);
    return 0;
}
