/* The goto-fail style: the error path jumps to a labelled unlock at the end. */
#include "harness.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long balance[4];
static long refused;

/* Critical section of withdraw() on &lock (input.c:10-19), extracted by locktune-extract. */
struct withdraw__cs1_ctx {
    int account;
    long amount;
};

static void *withdraw__cs1(void *lt_arg)
{
    struct withdraw__cs1_ctx *lt_ctx = lt_arg;
    int account = lt_ctx->account;
    long amount = lt_ctx->amount;

    if (balance[account] < amount)
        goto fail;
    balance[account] -= amount;
    balance[(account + 1) % 4] += amount;
    return (void *)1;
fail:
    refused++;
    return NULL;
}

static int withdraw(int account, long amount)
{
    struct withdraw__cs1_ctx lt_cs1 = {.account = account, .amount = amount};
    intptr_t lt_exit1 = (intptr_t)lt_execute(&lock, withdraw__cs1, &lt_cs1);
    if (lt_exit1 == 1) {
        return 0;
    }
    return -1;
}

static void *worker(void *arg)
{
    long id = (long)arg;
    for (int i = 0; i < ITERS; i++)
        withdraw((int)(id + i) % 4, i % 7);
    return NULL;
}

int main(void)
{
    long total = 0;
    for (int i = 0; i < 4; i++)
        balance[i] = 1000;
    run_threads(worker);
    for (int i = 0; i < 4; i++)
        total += balance[i];
    printf("total %ld (refused some: %d)\n", total, refused > 0);
    return 0;
}
