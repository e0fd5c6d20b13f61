/* A thread-local variable used inside the section: it must be the calling thread's. */
#include <pthread.h>
#include <stdio.h>

#define THREADS 4
#define ITERS 3000

static pthread_mutex_t total_lock = PTHREAD_MUTEX_INITIALIZER;
static __thread long my_calls;
static long total_calls;
static long per_thread[THREADS];

static void *worker(void *arg)
{
    long id = (long)arg;
    for (int i = 0; i < ITERS; i++) {
        pthread_mutex_lock(&total_lock);
        my_calls++;
        total_calls++;
        pthread_mutex_unlock(&total_lock);
    }
    per_thread[id] = my_calls;
    return NULL;
}

int main(void)
{
    pthread_t t[THREADS];
    for (long i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    for (int i = 0; i < THREADS; i++)
        printf("thread %d calls %ld\n", i, per_thread[i]);
    printf("total %ld main %ld\n", total_calls, my_calls);
    return 0;
}
// CHECK: lt_execute_ex(&total_lock, worker__cs1, NULL, LT_EXEC_ON_CALLER);
