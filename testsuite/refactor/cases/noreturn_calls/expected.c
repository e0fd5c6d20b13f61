/* abort() while holding the lock is fine (the process ends); exit() after the unlock is an
 * early exit like return. */
#include "harness.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long total;

/* Critical section of add() on &lock (input.c:10-19), extracted by locktune-extract. */
struct add__cs1_ctx {
    long v;
};

static void *add__cs1(void *lt_arg)
{
    struct add__cs1_ctx *lt_ctx = lt_arg;
    long v = lt_ctx->v;

    if (v < 0)
        abort();
    total += v;
    if (total < 0) {
        return (void *)1;
    }
    return NULL;
}

static void add(long v)
{
    struct add__cs1_ctx lt_cs1 = {.v = v};
    intptr_t lt_exit1 = (intptr_t)lt_execute(&lock, add__cs1, &lt_cs1);
    if (lt_exit1 == 1) {
        fprintf(stderr, "overflow\n");
        exit(2);
    }
}

static void *worker(void *arg)
{
    (void)arg;
    for (int i = 0; i < ITERS; i++)
        add(i);
    return NULL;
}

int main(void)
{
    run_threads(worker);
    printf("total %ld\n", total);
    return 0;
}
