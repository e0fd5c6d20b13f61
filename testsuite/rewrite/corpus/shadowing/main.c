/* Inner blocks in the section declare names that shadow outer locals. */
#include <pthread.h>
#include <stdio.h>

#define THREADS 4
#define ITERS 3000

static pthread_mutex_t grid_lock = PTHREAD_MUTEX_INITIALIZER;
static long grid[4][4];

static long touch(int i)
{
    long total = i;
    int row = i % 4;
    pthread_mutex_lock(&grid_lock);
    {
        int row = (i / 4) % 4; /* shadows the outer row */
        long total = 0;        /* shadows the outer total */
        for (int c = 0; c < 4; c++)
            total += grid[row][c];
        grid[row][i % 4] += 1;
        (void)total;
    }
    total += grid[row][0] >= 0;
    pthread_mutex_unlock(&grid_lock);
    return total;
}

static long sums[THREADS];

static void *worker(void *arg)
{
    long id = (long)arg;
    for (int i = 0; i < ITERS; i++)
        sums[id] += touch(i + (int)id);
    return NULL;
}

int main(void)
{
    pthread_t t[THREADS];
    for (long i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    long total = 0, cells = 0;
    for (int i = 0; i < THREADS; i++)
        total += sums[i];
    for (int r = 0; r < 4; r++)
        for (int c = 0; c < 4; c++)
            cells += grid[r][c];
    printf("sum %ld cells %ld\n", total, cells);
    return 0;
}
