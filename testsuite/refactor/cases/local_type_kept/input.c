/* A section that uses a type declared inside its function: the function above it could not
 * name it, so the section is kept. */
#include "harness.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long total;

static void add(int a, int b)
{
    struct local {
        int a, b;
    } pair = {a, b};
    pthread_mutex_lock(&lock);
    total += pair.a + pair.b;
    pthread_mutex_unlock(&lock);
}

static void *worker(void *arg)
{
    (void)arg;
    for (int i = 0; i < ITERS; i++)
        add(i, 1);
    return NULL;
}

int main(void)
{
    run_threads(worker);
    printf("total %ld\n", total);
    return 0;
}
