/* Early exit without a value, and a section whose only exit is the end. */
#include "harness.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long counts[8];
static long skipped;

/* Critical section of bump() on &lock (input.c:10-17), extracted by locktune-extract. */
struct bump__cs1_ctx {
    int slot;
};

static void *bump__cs1(void *lt_arg)
{
    struct bump__cs1_ctx *lt_ctx = lt_arg;
    int slot = lt_ctx->slot;

    if (slot < 0 || slot >= 8) {
        skipped++;
        return (void *)1;
    }
    counts[slot]++;
    return NULL;
}

static void bump(int slot)
{
    struct bump__cs1_ctx lt_cs1 = {.slot = slot};
    intptr_t lt_exit1 = (intptr_t)lt_execute(&lock, bump__cs1, &lt_cs1);
    if (lt_exit1 == 1) {
        return;
    }
}

static void *worker(void *arg)
{
    long id = (long)arg;
    for (int i = 0; i < ITERS; i++)
        bump((int)(i % 10) - (int)id % 2);
    return NULL;
}

int main(void)
{
    long total = 0;
    run_threads(worker);
    for (int i = 0; i < 8; i++)
        total += counts[i];
    printf("counted %ld skipped %ld\n", total, skipped);
    return 0;
}
