/* Lock functions used as values (a table of lock operations). */
#include <pthread.h>
#include <stdio.h>

#define THREADS 4
#define ITERS 3000

struct lock_ops {
    int (*lock)(pthread_mutex_t *);
    int (*unlock)(pthread_mutex_t *);
};

static const struct lock_ops ops = {pthread_mutex_lock, pthread_mutex_unlock};
static pthread_mutex_t op_lock = PTHREAD_MUTEX_INITIALIZER;
static long n;

static void *worker(void *arg)
{
    (void)arg;
    for (int i = 0; i < ITERS; i++) {
        ops.lock(&op_lock);
        n++;
        ops.unlock(&op_lock);
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
    printf("n %ld\n", n);
    return 0;
}
// CHECK: int (*lock)(lt_mutex_t *);
// CHECK: static const struct lock_ops ops = {lt_mutex_lock, lt_mutex_unlock};
