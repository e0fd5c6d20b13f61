/* A reader-writer lock beside a mutex: the rwlock is not retargeted, the mutex is. */
#include <pthread.h>
#include <stdio.h>

#define THREADS 4
#define ITERS 3000

static pthread_rwlock_t table_rw = PTHREAD_RWLOCK_INITIALIZER;
static pthread_mutex_t stats_lock = PTHREAD_MUTEX_INITIALIZER;
static long table[16];
static long lookups, updates;

static void *worker(void *arg)
{
    long id = (long)arg;
    for (int i = 0; i < ITERS; i++) {
        if (i % 8 == 0) {
            pthread_rwlock_wrlock(&table_rw);
            table[(i + id) % 16]++;
            pthread_rwlock_unlock(&table_rw);
            pthread_mutex_lock(&stats_lock);
            updates++;
            pthread_mutex_unlock(&stats_lock);
        } else {
            pthread_rwlock_rdlock(&table_rw);
            long v = table[i % 16];
            pthread_rwlock_unlock(&table_rw);
            pthread_mutex_lock(&stats_lock);
            lookups += v >= 0;
            pthread_mutex_unlock(&stats_lock);
        }
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
    for (int i = 0; i < 16; i++)
        total += table[i];
    printf("lookups %ld updates %ld total %ld\n", lookups, updates, total);
    return 0;
}
// CHECK: static pthread_rwlock_t table_rw = PTHREAD_RWLOCK_INITIALIZER;
// CHECK: pthread_rwlock_wrlock(&table_rw);
