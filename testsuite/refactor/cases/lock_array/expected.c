/* A striped lock table: the lock is an element chosen by index, initialised in a loop. */
#include "harness.h"

#define STRIPES 8
static pthread_mutex_t stripe_locks[STRIPES];
static long buckets[STRIPES * 4];

/* Critical section of add() on &stripe_locks[s] (input.c:11-13), extracted by locktune-extract. */
struct add__cs1_ctx {
    unsigned int s;
    unsigned int key;
    long v;
};

static void *add__cs1(void *lt_arg)
{
    struct add__cs1_ctx *lt_ctx = lt_arg;
    unsigned int s = lt_ctx->s;
    unsigned int key = lt_ctx->key;
    long v = lt_ctx->v;

    buckets[s * 4 + key / STRIPES % 4] += v;
    return NULL;
}

static void add(unsigned key, long v)
{
    unsigned s = key % STRIPES;
    struct add__cs1_ctx lt_cs1 = {.s = s, .key = key, .v = v};
    lt_execute(&stripe_locks[s], add__cs1, &lt_cs1);
}

static void *worker(void *arg)
{
    long id = (long)arg;
    for (int i = 0; i < ITERS; i++)
        add((unsigned)(i * 13 + id), 1);
    return NULL;
}

int main(void)
{
    long total = 0;
    for (int i = 0; i < STRIPES; i++)
        pthread_mutex_init(&stripe_locks[i], NULL);
    run_threads(worker);
    for (int i = 0; i < STRIPES * 4; i++)
        total += buckets[i];
    printf("total %ld\n", total);
    return 0;
}
