/* continue after an early unlock; the loop variable is read inside the section. */
#include "harness.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long evens, odds;

/* Critical section of worker() on &lock (input.c:11-18), extracted by locktune-extract. */
struct worker__cs1_ctx {
    int i;
};

static void *worker__cs1(void *lt_arg)
{
    struct worker__cs1_ctx *lt_ctx = lt_arg;
    int i = lt_ctx->i;

    if (i % 2) {
        odds++;
        return (void *)1;
    }
    evens++;
    return NULL;
}

static void *worker(void *arg)
{
    (void)arg;
    for (int i = 0; i < ITERS; i++) {
        struct worker__cs1_ctx lt_cs1 = {.i = i};
        intptr_t lt_exit1 = (intptr_t)lt_execute(&lock, worker__cs1, &lt_cs1);
        if (lt_exit1 == 1) {
            continue;
        }
    }
    return NULL;
}

int main(void)
{
    run_threads(worker);
    printf("evens %ld odds %ld\n", evens, odds);
    return 0;
}
