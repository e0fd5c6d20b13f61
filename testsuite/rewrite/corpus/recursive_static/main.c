/* A statically initialised recursive mutex (glibc's _NP initialiser). */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>

#define THREADS 4
#define ITERS 2000

static pthread_mutex_t env_lock = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static long reads, writes;

static long get(int k)
{
    long v;
    pthread_mutex_lock(&env_lock);
    reads++;
    v = k * 2;
    pthread_mutex_unlock(&env_lock);
    return v;
}

static void set_from(int k)
{
    pthread_mutex_lock(&env_lock);
    writes += get(k) > 0; /* re-enters env_lock */
    pthread_mutex_unlock(&env_lock);
}

static void *worker(void *arg)
{
    (void)arg;
    for (int i = 0; i < ITERS; i++)
        set_from(i + 1);
    return NULL;
}

int main(void)
{
    pthread_t t[THREADS];
    for (long i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    printf("reads %ld writes %ld\n", reads, writes);
    return 0;
}
// NEEDS: recursive
// CHECK: #define _GNU_SOURCE
// CHECK: #include <stdio.h>
// CHECK-NEXT: #include "locktune.h"
// CHECK: static lt_mutex_t env_lock = LT_RECURSIVE_MUTEX_INITIALIZER_NP(LT_SITE_MAIN_C_9);
