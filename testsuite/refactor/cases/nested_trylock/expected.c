/* A trylock section nested in an extracted section: both extracted, lt_execute_trylock
 * running inside the outer function. */
#include "harness.h"

static pthread_mutex_t outer = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t inner = PTHREAD_MUTEX_INITIALIZER;
static long outer_count, inner_count, inner_busy;

/* Critical section of worker() on &inner (input.c:15-17), extracted by locktune-extract. */
static void *worker__cs2(void *lt_arg)
{
    (void)lt_arg;

    inner_count++;
    return NULL;
}

/* Critical section of worker() on &outer (input.c:13-21), extracted by locktune-extract. */
static void *worker__cs1(void *lt_arg)
{
    (void)lt_arg;

    outer_count++;
    void *lt_res2;
    if (lt_execute_trylock(&inner, worker__cs2, NULL, &lt_res2) == 0) {
    } else {
        inner_busy++;
    }
    return NULL;
}

static void *worker(void *arg)
{
    (void)arg;
    for (int i = 0; i < ITERS; i++) {
        lt_execute(&outer, worker__cs1, NULL);
    }
    return NULL;
}

int main(void)
{
    run_threads(worker);
    printf("outer %ld inner+busy %ld\n", outer_count, inner_count + inner_busy);
    return 0;
}
