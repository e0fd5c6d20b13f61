/* A trylock section nested in an extracted section: both extracted, lt_execute_trylock
 * running inside the outer function. */
#include "harness.h"

static pthread_mutex_t outer = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t inner = PTHREAD_MUTEX_INITIALIZER;
static long outer_count, inner_count, inner_busy;

static void *worker(void *arg)
{
    (void)arg;
    for (int i = 0; i < ITERS; i++) {
        pthread_mutex_lock(&outer);
        outer_count++;
        if (pthread_mutex_trylock(&inner) == 0) {
            inner_count++;
            pthread_mutex_unlock(&inner);
        } else {
            inner_busy++;
        }
        pthread_mutex_unlock(&outer);
    }
    return NULL;
}

int main(void)
{
    run_threads(worker);
    printf("outer %ld inner+busy %ld\n", outer_count, inner_count + inner_busy);
    return 0;
}
