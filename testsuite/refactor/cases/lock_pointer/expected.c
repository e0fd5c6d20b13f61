/* The lock is reached through a pointer parameter. */
#include "harness.h"

static pthread_mutex_t locks[2] = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER};
static long hits[2];

/* Critical section of count() on m (input.c:9-11), extracted by locktune-extract. */
struct count__cs1_ctx {
    long *hit;
};

static void *count__cs1(void *lt_arg)
{
    struct count__cs1_ctx *lt_ctx = lt_arg;
    long *hit = lt_ctx->hit;

    (*hit)++;
    return NULL;
}

static void count(pthread_mutex_t *m, long *hit)
{
    struct count__cs1_ctx lt_cs1 = {.hit = hit};
    lt_execute(m, count__cs1, &lt_cs1);
}

static void *worker(void *arg)
{
    long id = (long)arg;
    for (int i = 0; i < ITERS; i++)
        count(&locks[id % 2], &hits[id % 2]);
    return NULL;
}

int main(void)
{
    run_threads(worker);
    printf("hits %ld %ld\n", hits[0], hits[1]);
    return 0;
}
