/* trylock with a fallback: when the shared table is busy, count locally and merge later. */
#include <pthread.h>
#include <stdio.h>

#define THREADS 4
#define ITERS 4000

static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
static long table_total;

static void *worker(void *arg)
{
    long pending = 0;
    (void)arg;
    for (int i = 0; i < ITERS; i++) {
        pending++;
        if (pthread_mutex_trylock(&table_lock) == 0) {
            table_total += pending;
            pending = 0;
            pthread_mutex_unlock(&table_lock);
        }
    }
    pthread_mutex_lock(&table_lock);
    table_total += pending;
    pthread_mutex_unlock(&table_lock);
    return NULL;
}

int main(void)
{
    pthread_t t[THREADS];
    for (long i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    printf("total %ld\n", table_total);
    return 0;
}
// CHECK: if (lt_execute_trylock(&table_lock, worker__cs1, &lt_cs1, &lt_res1) == 0) {
