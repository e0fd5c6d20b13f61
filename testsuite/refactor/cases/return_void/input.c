/* Early exit without a value, and a section whose only exit is the end. */
#include "harness.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long counts[8];
static long skipped;

static void bump(int slot)
{
    pthread_mutex_lock(&lock);
    if (slot < 0 || slot >= 8) {
        skipped++;
        pthread_mutex_unlock(&lock);
        return;
    }
    counts[slot]++;
    pthread_mutex_unlock(&lock);
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
