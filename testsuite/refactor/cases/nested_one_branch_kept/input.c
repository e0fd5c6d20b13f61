/* An inner lock taken in one branch only: kept, and the outer section with it (nothing proves
 * the inner lock is released inside it on every path). */
#include "harness.h"

static pthread_mutex_t outer = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t inner = PTHREAD_MUTEX_INITIALIZER;
static long outer_count, inner_count;

static void *worker(void *arg)
{
    (void)arg;
    for (int i = 0; i < ITERS; i++) {
        int both = i % 2;
        pthread_mutex_lock(&outer);
        outer_count++;
        if (both)
            pthread_mutex_lock(&inner);
        inner_count += both;
        if (both)
            pthread_mutex_unlock(&inner);
        pthread_mutex_unlock(&outer);
    }
    return NULL;
}

int main(void)
{
    run_threads(worker);
    printf("outer %ld inner %ld\n", outer_count, inner_count);
    return 0;
}
