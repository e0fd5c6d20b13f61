/* An error-checking mutex: unlocking a lock this thread does not hold is refused (EPERM)
 * instead of corrupting it. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>

#define THREADS 4
#define ITERS 2000

static pthread_mutex_t checked = PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP;
static long counter;

static void *worker(void *arg)
{
    (void)arg;
    for (int i = 0; i < ITERS; i++) {
        pthread_mutex_lock(&checked);
        counter++;
        pthread_mutex_unlock(&checked);
    }
    return NULL;
}

int main(void)
{
    int stray = pthread_mutex_unlock(&checked);
    printf("stray unlock %s\n", stray == EPERM ? "refused" : "accepted");
    pthread_t t[THREADS];
    for (long i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    printf("counter %ld\n", counter);
    return 0;
}
// NEEDS: errorcheck
// CHECK: LT_ERRORCHECK_MUTEX_INITIALIZER_NP(LT_SITE_MAIN_C_11);
