/* A function-local static used in the section: it is not a context field, it stays the
 * one object it is. */
#include <pthread.h>
#include <stdio.h>

#define THREADS 4
#define ITERS 3000

static pthread_mutex_t seq_lock = PTHREAD_MUTEX_INITIALIZER;

static long next_id(void)
{
    static long last;
    long id;
    pthread_mutex_lock(&seq_lock);
    id = ++last;
    pthread_mutex_unlock(&seq_lock);
    return id;
}

static long maxima[THREADS];

static void *worker(void *arg)
{
    long id = (long)arg;
    for (int i = 0; i < ITERS; i++) {
        long v = next_id();
        if (v > maxima[id])
            maxima[id] = v;
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
    long top = 0;
    for (int i = 0; i < THREADS; i++)
        if (maxima[i] > top)
            top = maxima[i];
    printf("last id %ld next %ld\n", top, next_id());
    return 0;
}
