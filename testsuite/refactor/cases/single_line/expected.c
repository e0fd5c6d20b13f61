/* Sections written on one line. */
#include "harness.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long a, b;

/* Critical section of worker() on &lock (input.c:11), extracted by locktune-extract. */
static void *worker__cs1(void *lt_arg)
{
    (void)lt_arg;

    a++;
    return NULL;
}

/* Critical section of worker() on &lock (input.c:12), extracted by locktune-extract. */
static void *worker__cs2(void *lt_arg)
{
    (void)lt_arg;

    b += a % 2;
    return NULL;
}

static void *worker(void *arg)
{
    (void)arg;
    for (int i = 0; i < ITERS; i++) {
        lt_execute(&lock, worker__cs1, NULL);
        lt_execute(&lock, worker__cs2, NULL); /* trailing */
    }
    return NULL;
}

int main(void)
{
    run_threads(worker);
    printf("a %ld\n", a);
    return 0;
}
