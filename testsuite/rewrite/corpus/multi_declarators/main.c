/* Several locks in one declaration, and locks in zeroed static storage. */
#include <pthread.h>
#include <stdio.h>

#define THREADS 4
#define ITERS 3000

static pthread_mutex_t left = PTHREAD_MUTEX_INITIALIZER, right = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t zeroed_a, zeroed_b;
static long l, r, za, zb;

static void *worker(void *arg)
{
    long id = (long)arg;
    for (int i = 0; i < ITERS; i++) {
        pthread_mutex_t *m = (i + id) % 2 ? &left : &right;
        long *v = (i + id) % 2 ? &l : &r;
        pthread_mutex_lock(m);
        *v += 1;
        pthread_mutex_unlock(m);
        pthread_mutex_lock(i % 3 ? &zeroed_a : &zeroed_b);
        if (i % 3)
            za++;
        else
            zb++;
        pthread_mutex_unlock(i % 3 ? &zeroed_a : &zeroed_b);
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
    printf("left %ld right %ld za %ld zb %ld\n", l, r, za, zb);
    return 0;
}
// CHECK: static lt_mutex_t left = LT_MUTEX_INITIALIZER(LT_SITE_MAIN_C_8), right = LT_MUTEX_INITIALIZER(LT_SITE_MAIN_C_8);
// CHECK: static lt_mutex_t zeroed_a = LT_MUTEX_INITIALIZER(LT_SITE_MAIN_C_9), zeroed_b = LT_MUTEX_INITIALIZER(LT_SITE_MAIN_C_9);
