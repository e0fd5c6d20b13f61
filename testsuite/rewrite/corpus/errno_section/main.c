/* The section sets errno (strtol on bad input) and the caller reads it afterwards: errno
 * is thread-local, so a section run on another thread must carry it back. */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define THREADS 4
#define ITERS 3000

static pthread_mutex_t conv_lock = PTHREAD_MUTEX_INITIALIZER;
static long conversions;

static long convert(const char *s)
{
    long v;
    errno = 0;
    pthread_mutex_lock(&conv_lock);
    v = strtol(s, NULL, 10);
    conversions++;
    pthread_mutex_unlock(&conv_lock);
    return v;
}

static long overflows[THREADS], good[THREADS];

static void *worker(void *arg)
{
    long id = (long)arg;
    for (int i = 0; i < ITERS; i++) {
        long v = convert(i % 3 == 0 ? "99999999999999999999999" : "42");
        if (errno == ERANGE && v == LONG_MAX)
            overflows[id]++;
        else if (errno == 0 && v == 42)
            good[id]++;
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
    long o = 0, g = 0;
    for (int i = 0; i < THREADS; i++) {
        o += overflows[i];
        g += good[i];
    }
    printf("conversions %ld overflows %ld good %ld\n", conversions, o, g);
    return 0;
}
