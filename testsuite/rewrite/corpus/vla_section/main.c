/* Variable-length arrays: one declared before the section and filled inside it (its size
 * is only known at run time), one declared inside the section. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define THREADS 4
#define ITERS 2000

static pthread_mutex_t hist_lock = PTHREAD_MUTEX_INITIALIZER;
static long histogram[16];
static _Atomic long bad_sizes;

static void record(int n)
{
    int before[n];
    pthread_mutex_lock(&hist_lock);
    int scratch[n];
    memset(scratch, 0, sizeof scratch);
    for (int i = 0; i < n; i++)
        scratch[i] = (i * 7) % 16;
    for (int i = 0; i < n; i++) {
        histogram[scratch[i]]++;
        before[i] = (int)sizeof before / (int)sizeof before[0];
    }
    pthread_mutex_unlock(&hist_lock);
    for (int i = 0; i < n; i++)
        if (before[i] != n)
            bad_sizes++;
}

static void *worker(void *arg)
{
    long id = (long)arg;
    for (int i = 0; i < ITERS; i++)
        record(1 + (int)((i + id) % 20));
    return NULL;
}

int main(void)
{
    pthread_t t[THREADS];
    for (long i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    for (int i = 0; i < 16; i++)
        printf("%ld%c", histogram[i], i == 15 ? '\n' : ' ');
    printf("bad sizes %ld\n", (long)bad_sizes);
    return 0;
}
// KEPT: variable-length array
