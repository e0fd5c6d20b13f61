/* A trylock section stays as calls; the sections beside it are extracted. */
#include "harness.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long done_, skipped, total;

static void *worker(void *arg)
{
    (void)arg;
    for (int i = 0; i < ITERS; i++) {
        if (pthread_mutex_trylock(&lock) == 0) {
            done_++;
            pthread_mutex_unlock(&lock);
        } else {
            pthread_mutex_lock(&lock);
            skipped++;
            pthread_mutex_unlock(&lock);
        }
        pthread_mutex_lock(&lock);
        total++;
        pthread_mutex_unlock(&lock);
    }
    return NULL;
}

int main(void)
{
    run_threads(worker);
    printf("total %ld %ld\n", done_ + skipped, total);
    return 0;
}
