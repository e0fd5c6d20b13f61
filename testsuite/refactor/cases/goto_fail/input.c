/* The goto-fail style: the error path jumps to a labelled unlock at the end. */
#include "harness.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long balance[4];
static long refused;

static int withdraw(int account, long amount)
{
    pthread_mutex_lock(&lock);
    if (balance[account] < amount)
        goto fail;
    balance[account] -= amount;
    balance[(account + 1) % 4] += amount;
    pthread_mutex_unlock(&lock);
    return 0;
fail:
    refused++;
    pthread_mutex_unlock(&lock);
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
