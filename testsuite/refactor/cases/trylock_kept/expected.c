/* A trylock section stays as calls; the sections beside it are extracted. */
#include "harness.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long done_, skipped, total;

/* Critical section of worker() on &lock (input.c:15-17), extracted by locktune-extract. */
static void *worker__cs2(void *lt_arg)
{
    (void)lt_arg;

    skipped++;
    return NULL;
}

/* Critical section of worker() on &lock (input.c:19-21), extracted by locktune-extract. */
static void *worker__cs3(void *lt_arg)
{
    (void)lt_arg;

    total++;
    return NULL;
}

static void *worker(void *arg)
{
    (void)arg;
    for (int i = 0; i < ITERS; i++) {
        if (pthread_mutex_trylock(&lock) == 0) {
            done_++;
            pthread_mutex_unlock(&lock);
        } else {
            lt_execute(&lock, worker__cs2, NULL);
        }
        lt_execute(&lock, worker__cs3, NULL);
    }
    return NULL;
}

int main(void)
{
    run_threads(worker);
    printf("total %ld %ld\n", done_ + skipped, total);
    return 0;
}
