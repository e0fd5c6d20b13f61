/* An inner section kept (a trylock that needs its caller's thread) inside an extracted outer
 * section: its calls move into the outer function, balanced there, and the outer section
 * runs on the caller's thread too. */
#include "harness.h"

static pthread_mutex_t outer = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t inner = PTHREAD_MUTEX_INITIALIZER;
static _Thread_local long mine;
static long outer_count, inner_count, per_thread[NTHREADS];

static void *worker(void *arg)
{
    long id = (long)arg;
    for (int i = 0; i < ITERS; i++) {
        pthread_mutex_lock(&outer);
        outer_count++;
        if (pthread_mutex_trylock(&inner) == 0) {
            mine++;
            inner_count++;
            pthread_mutex_unlock(&inner);
        }
        pthread_mutex_unlock(&outer);
    }
    per_thread[id] = mine;
    return NULL;
}

int main(void)
{
    long total = 0;
    run_threads(worker);
    for (int i = 0; i < NTHREADS; i++)
        total += per_thread[i];
    printf("outer %ld inner %ld mine %ld\n", outer_count, inner_count, total);
    return 0;
}
