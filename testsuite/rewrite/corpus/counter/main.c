/* The simplest shape: a global counter behind a statically initialised lock. */
#include <pthread.h>
#include <stdio.h>

#define THREADS 4
#define ITERS 4000

static pthread_mutex_t counter_lock = PTHREAD_MUTEX_INITIALIZER;
static long counter;
static long sum;

static void *worker(void *arg)
{
    long id = (long)arg;
    for (int i = 0; i < ITERS; i++) {
        pthread_mutex_lock(&counter_lock);
        counter++;
        sum += id + i;
        pthread_mutex_unlock(&counter_lock);
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
    printf("counter %ld sum %ld\n", counter, sum);
    return 0;
}
// CHECK: #include "locktune.h"
// CHECK-NEXT: #include "locktune_config.h"
// CHECK: static lt_mutex_t counter_lock = LT_MUTEX_INITIALIZER(LT_SITE_MAIN_C_8);
// CHECK-NOT: pthread_mutex_
// CHECK: lt_execute(&counter_lock, worker__cs1, &lt_cs1);
// EXTRACTED: 1
