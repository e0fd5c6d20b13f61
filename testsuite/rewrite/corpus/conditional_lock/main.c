/* The lock is taken on one branch only and released under the same condition later: not
 * a section the rewriter can prove, so it is kept. */
#include <pthread.h>
#include <stdio.h>

#define THREADS 4
#define ITERS 3000

static pthread_mutex_t shared_lock = PTHREAD_MUTEX_INITIALIZER;
static long shared_total;
static long private_total[THREADS];

static void add(long id, int shared, long v)
{
    if (shared)
        pthread_mutex_lock(&shared_lock);
    if (shared)
        shared_total += v;
    else
        private_total[id] += v;
    if (shared)
        pthread_mutex_unlock(&shared_lock);
}

static void *worker(void *arg)
{
    long id = (long)arg;
    for (int i = 0; i < ITERS; i++)
        add(id, i % 4 != 0, i);
    return NULL;
}

int main(void)
{
    pthread_t t[THREADS];
    for (long i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    long p = 0;
    for (int i = 0; i < THREADS; i++)
        p += private_total[i];
    printf("shared %ld private %ld\n", shared_total, p);
    return 0;
}
// KEPT: branch
// CHECK: lt_mutex_lock(&shared_lock);
