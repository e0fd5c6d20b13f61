/* A section inside a loop that leaves the loop after an early unlock (break). */
#include "harness.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int budget = NTHREADS * ITERS / 2;
static long spent[NTHREADS];

static void *worker(void *arg)
{
    long id = (long)arg;
    int mine = 0;
    for (;;) {
        pthread_mutex_lock(&lock);
        if (budget == 0) {
            pthread_mutex_unlock(&lock);
            break;
        }
        budget--;
        mine++;
        pthread_mutex_unlock(&lock);
    }
    spent[id] = mine;
    return NULL;
}

int main(void)
{
    long total = 0;
    run_threads(worker);
    for (int i = 0; i < NTHREADS; i++)
        total += spent[i];
    printf("spent %ld, left %d\n", total, budget);
    return 0;
}
