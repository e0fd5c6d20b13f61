/* A section nested in another (different locks); the inner one reads and writes locals
 * of the outer one. */
#include <pthread.h>
#include <stdio.h>

#define THREADS 4
#define ITERS 3000

static pthread_mutex_t outer_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t inner_lock = PTHREAD_MUTEX_INITIALIZER;
static long outer_count, inner_count, carried;

static long work(int i)
{
    long local = i % 7 + 1;
    long seen = 0;
    pthread_mutex_lock(&outer_lock);
    outer_count++;
    local *= 2;
    pthread_mutex_lock(&inner_lock);
    inner_count += local;
    seen = inner_count > 0;
    pthread_mutex_unlock(&inner_lock);
    carried += seen;
    pthread_mutex_unlock(&outer_lock);
    return local + seen;
}

static long sums[THREADS];

static void *worker(void *arg)
{
    long id = (long)arg;
    for (int i = 0; i < ITERS; i++)
        sums[id] += work(i + (int)id);
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
        total += sums[i];
    printf("outer %ld inner %ld carried %ld total %ld\n", outer_count, inner_count, carried,
           total);
    return 0;
}
