/* Sections written on one line. */
#include "harness.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long a, b;

static void *worker(void *arg)
{
    (void)arg;
    for (int i = 0; i < ITERS; i++) {
        pthread_mutex_lock(&lock); a++; pthread_mutex_unlock(&lock);
        pthread_mutex_lock(&lock); b += a % 2; pthread_mutex_unlock(&lock); /* trailing */
    }
    return NULL;
}

int main(void)
{
    run_threads(worker);
    printf("a %ld\n", a);
    return 0;
}
