/* The lock arrives as a parameter (pthread_mutex_t *m), with the data it protects. */
#include <pthread.h>
#include <stdio.h>

#define THREADS 4
#define ITERS 3000

static void bump(pthread_mutex_t *m, long *value, long by)
{
    pthread_mutex_lock(m);
    *value += by;
    pthread_mutex_unlock(m);
}

static pthread_mutex_t even_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t odd_lock = PTHREAD_MUTEX_INITIALIZER;
static long even_total, odd_total;

static void *worker(void *arg)
{
    long id = (long)arg;
    for (int i = 0; i < ITERS; i++) {
        if (i % 2)
            bump(&odd_lock, &odd_total, i + id);
        else
            bump(&even_lock, &even_total, i - id);
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
    printf("even %ld odd %ld\n", even_total, odd_total);
    return 0;
}
// CHECK: static void bump(lt_mutex_t *m, long *value, long by)
