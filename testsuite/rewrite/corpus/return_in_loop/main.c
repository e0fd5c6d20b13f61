/* `return` with a value from inside a loop in the section, after the inner unlock. */
#include <pthread.h>
#include <stdio.h>

#define THREADS 4
#define ITERS 3000
#define CELLS 40

static pthread_mutex_t cells_lock = PTHREAD_MUTEX_INITIALIZER;
static int cells[CELLS];

static int claim_cell(int from)
{
    pthread_mutex_lock(&cells_lock);
    for (int k = 0; k < CELLS; k++) {
        int i = (from + k) % CELLS;
        if (cells[i] < 1000000) {
            cells[i]++;
            pthread_mutex_unlock(&cells_lock);
            return i;
        }
    }
    pthread_mutex_unlock(&cells_lock);
    return -1;
}

static long claimed[THREADS];

static void *worker(void *arg)
{
    long id = (long)arg;
    for (int i = 0; i < ITERS; i++)
        claimed[id] += claim_cell(i + (int)id) >= 0;
    return NULL;
}

int main(void)
{
    pthread_t t[THREADS];
    for (long i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    long total = 0, sum = 0;
    for (int i = 0; i < THREADS; i++)
        total += claimed[i];
    for (int i = 0; i < CELLS; i++)
        sum += cells[i];
    printf("claimed %ld sum %ld\n", total, sum);
    return 0;
}
