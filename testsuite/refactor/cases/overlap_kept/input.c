/* Hand-over-hand: B is taken inside A's section and released after it.  Neither section is
 * block-structured with respect to the other: both are kept. */
#include "harness.h"

static pthread_mutex_t a = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t b = PTHREAD_MUTEX_INITIALIZER;
static long in_a, in_b;

static void *worker(void *arg)
{
    (void)arg;
    for (int i = 0; i < ITERS; i++) {
        pthread_mutex_lock(&a);
        in_a++;
        pthread_mutex_lock(&b);
        pthread_mutex_unlock(&a);
        in_b++;
        pthread_mutex_unlock(&b);
    }
    return NULL;
}

int main(void)
{
    run_threads(worker);
    printf("%ld %ld\n", in_a, in_b);
    return 0;
}
