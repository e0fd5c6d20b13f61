/* The lock arrives through void * (a callback argument) and is cast at the call. */
#include <pthread.h>
#include <stdio.h>

#define THREADS 4
#define ITERS 3000

struct job {
    void *lock;
    long *counter;
};

static pthread_mutex_t job_lock = PTHREAD_MUTEX_INITIALIZER;
static long counter;

static void run_locked(void *lock, long *c)
{
    pthread_mutex_lock((pthread_mutex_t *)lock);
    (*c)++;
    pthread_mutex_unlock((pthread_mutex_t *)lock);
}

static void *worker(void *arg)
{
    struct job *j = arg;
    for (int i = 0; i < ITERS; i++)
        run_locked(j->lock, j->counter);
    return NULL;
}

int main(void)
{
    struct job j = {&job_lock, &counter};
    pthread_t t[THREADS];
    for (long i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, worker, &j);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    printf("counter %ld\n", counter);
    return 0;
}
// CHECK: lt_execute((lt_mutex_t *)lock, 
