/* Error handling the kernel way: `goto out` leaves the section after an inner unlock. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define THREADS 4
#define ITERS 2000
#define LIMIT 12

static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static int allocated;
static long refused;

static int reserve(int n, int **out)
{
    int *buf = malloc(sizeof(int) * (size_t)n);
    int err = 0;
    if (!buf)
        return -1;
    pthread_mutex_lock(&pool_lock);
    if (allocated + n > LIMIT) {
        refused++;
        err = -2;
        pthread_mutex_unlock(&pool_lock);
        goto out;
    }
    allocated += n;
    pthread_mutex_unlock(&pool_lock);
    for (int i = 0; i < n; i++)
        buf[i] = i;
    *out = buf;
    return 0;
out:
    free(buf);
    return err;
}

static void release(int n, int *buf)
{
    pthread_mutex_lock(&pool_lock);
    allocated -= n;
    pthread_mutex_unlock(&pool_lock);
    free(buf);
}

static long ok[THREADS];

static void *worker(void *arg)
{
    long id = (long)arg;
    for (int i = 0; i < ITERS; i++) {
        int *buf = NULL;
        int n = 1 + (i % 7);
        if (reserve(n, &buf) == 0) {
            ok[id] += buf[n - 1] == n - 1;
            release(n, buf);
        }
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
    long total = 0;
    for (int i = 0; i < THREADS; i++)
        total += ok[i];
    printf("attempts %ld allocated %d\n", total + refused, allocated);
    return 0;
}
