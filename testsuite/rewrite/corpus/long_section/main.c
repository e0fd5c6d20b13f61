/* A long section with comments, nested loops and a helper call: the comments and the
 * statements must come through unchanged. */
#include <pthread.h>
#include <stdio.h>

#define THREADS 4
#define ITERS 800
#define N 8

static pthread_mutex_t matrix_lock = PTHREAD_MUTEX_INITIALIZER;
static long matrix[N][N];
static long trace_history;

static long trace(void)
{
    long t = 0;
    for (int i = 0; i < N; i++)
        t += matrix[i][i];
    return t;
}

static void step(int seed)
{
    int row = seed % N;
    long before, after;
    pthread_mutex_lock(&matrix_lock);
    /* Rotate the row by one place. */
    long first = matrix[row][0];
    for (int c = 0; c < N - 1; c++)
        matrix[row][c] = matrix[row][c + 1];
    matrix[row][N - 1] = first;
    // Then bump every cell of the column the seed names.
    for (int r = 0; r < N; r++) {
        for (int c = 0; c < N; c++) {
            if (c == seed % N)
                matrix[r][c] += 1;
        }
    }
    before = trace_history;
    trace_history = trace(); /* helper called under the lock */
    after = trace_history;
    pthread_mutex_unlock(&matrix_lock);
    (void)before;
    (void)after;
}

static void *worker(void *arg)
{
    long id = (long)arg;
    for (int i = 0; i < ITERS; i++)
        step(i * 3 + (int)id);
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
    for (int r = 0; r < N; r++)
        for (int c = 0; c < N; c++)
            total += matrix[r][c];
    printf("total %ld\n", total);
    return 0;
}
// CHECK: /* Critical section of step() on &matrix_lock (main.c:{{[0-9]+}}-{{[0-9]+}}), extracted by locktune-extract. */
// CHECK: static void *step__cs1(void *lt_arg)
// CHECK: /* Rotate the row by one place. */
// CHECK: // Then bump every cell of the column the seed names.
// CHECK: trace_history = trace(); /* helper called under the lock */
// EXTRACTED: 1
