/* counts - a known number of lock operations: THREADS x ITERS locks, plus exactly
 * TRY_FAILS trylocks that fail because the main thread holds the lock. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>

#define THREADS   4
#define ITERS     10000
#define TRY_FAILS 37

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static long counter;

static void *work(void *arg)
{
    (void)arg;
    for (int i = 0; i < ITERS; i++) {
        pthread_mutex_lock(&m);
        counter++;
        pthread_mutex_unlock(&m);
    }
    return NULL;
}

static void *try_fail(void *arg)
{
    int *fails = arg;
    for (int i = 0; i < TRY_FAILS; i++)
        if (pthread_mutex_trylock(&m) == EBUSY)
            ++*fails;
    return NULL;
}

int main(void)
{
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, work, NULL);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    int fails = 0;
    pthread_mutex_lock(&m);
    pthread_create(&t[0], NULL, try_fail, &fails);
    pthread_join(t[0], NULL);
    pthread_mutex_unlock(&m);
    printf("counter %ld fails %d\n", counter, fails);
    return counter == (long)THREADS * ITERS && fails == TRY_FAILS ? 0 : 1;
}
