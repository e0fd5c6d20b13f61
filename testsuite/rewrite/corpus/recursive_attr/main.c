/* A recursive mutex made with a mutex attribute: a function re-enters its own lock. */
#include <pthread.h>
#include <stdio.h>

#define THREADS 4
#define ITERS 2000

static pthread_mutex_t tree_lock;
static long nodes;

static long count_down(int depth)
{
    long n;
    pthread_mutex_lock(&tree_lock);
    nodes++;
    n = depth > 0 ? 1 + count_down(depth - 1) : 1;
    pthread_mutex_unlock(&tree_lock);
    return n;
}

static long visited[THREADS];

static void *worker(void *arg)
{
    long id = (long)arg;
    for (int i = 0; i < ITERS; i++)
        visited[id] += count_down(i % 4);
    return NULL;
}

int main(void)
{
    pthread_mutexattr_t attr;
    pthread_mutexattr_init(&attr);
    pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
    pthread_mutex_init(&tree_lock, &attr);
    pthread_mutexattr_destroy(&attr);
    pthread_t t[THREADS];
    for (long i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    long total = 0;
    for (int i = 0; i < THREADS; i++)
        total += visited[i];
    printf("nodes %ld visited %ld\n", nodes, total);
    return 0;
}
// NEEDS: recursive
// CHECK: lt_mutex_init(&tree_lock, &attr, LT_SITE_MAIN_C_36);
