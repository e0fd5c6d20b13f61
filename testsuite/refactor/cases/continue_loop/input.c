/* continue after an early unlock; the loop variable is read inside the section. */
#include "harness.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long evens, odds;

static void *worker(void *arg)
{
    (void)arg;
    for (int i = 0; i < ITERS; i++) {
        pthread_mutex_lock(&lock);
        if (i % 2) {
            odds++;
            pthread_mutex_unlock(&lock);
            continue;
        }
        evens++;
        pthread_mutex_unlock(&lock);
    }
    return NULL;
}

int main(void)
{
    run_threads(worker);
    printf("evens %ld odds %ld\n", evens, odds);
    return 0;
}
