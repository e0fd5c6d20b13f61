/* Locking code inside #if blocks (a build option), both branches kept consistent. */
#include <pthread.h>
#include <stdio.h>

#define THREADS 4
#define ITERS 3000
#define USE_FINE_LOCKS 1

#if USE_FINE_LOCKS
static pthread_mutex_t lock_a = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t lock_b = PTHREAD_MUTEX_INITIALIZER;
#define LOCK_FOR(x) ((x) % 2 ? &lock_a : &lock_b)
#else
static pthread_mutex_t big_lock = PTHREAD_MUTEX_INITIALIZER;
#define LOCK_FOR(x) (&big_lock)
#endif

static long a, b;

static void *worker(void *arg)
{
    long id = (long)arg;
    for (int i = 0; i < ITERS; i++) {
        int k = i + (int)id;
        pthread_mutex_lock(LOCK_FOR(k));
#if USE_FINE_LOCKS
        if (k % 2)
            a++;
        else
            b++;
#else
        a += k % 2;
        b += !(k % 2);
#endif
        pthread_mutex_unlock(LOCK_FOR(k));
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
    printf("a %ld b %ld\n", a, b);
    return 0;
}
// CHECK: static lt_mutex_t lock_a = LT_MUTEX_INITIALIZER(LT_SITE_MAIN_C_10);
// CHECK: static lt_mutex_t big_lock = LT_MUTEX_INITIALIZER(LT_SITE_MAIN_C_14);
