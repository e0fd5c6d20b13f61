/* The code after an early unlock uses a variable declared inside the section. */
#include "harness.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long values[8], rejected;

static long update(int slot, long v)
{
    pthread_mutex_lock(&lock);
    {
        long old = values[slot];
        if (old > 1000) {
            rejected++;
            pthread_mutex_unlock(&lock);
            return old % 7; /* old is declared in the section */
        }
        values[slot] = old + v;
    }
    pthread_mutex_unlock(&lock);
    return 0;
}

static void *worker(void *arg)
{
    long id = (long)arg, sum = 0;
    for (int i = 0; i < ITERS; i++)
        sum += update((int)((i + id) % 8), 1);
    return (void *)sum;
}

int main(void)
{
    long total = 0;
    run_threads(worker);
    for (int i = 0; i < 8; i++)
        total += values[i];
    printf("total %ld rejected>0 %d\n", total, rejected > 0);
    return 0;
}
