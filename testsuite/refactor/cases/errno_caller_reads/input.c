/* The section calls a library function that sets errno; the caller of the function reads
 * errno after it returns.  errno is carried back whoever reads it. */
#include "harness.h"

#include <errno.h>
#include <limits.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long conversions;

static long convert(const char *s)
{
    long v;
    pthread_mutex_lock(&lock);
    v = strtol(s, NULL, 10);
    conversions++;
    pthread_mutex_unlock(&lock);
    return v;
}

static long overflows[NTHREADS];

static void *worker(void *arg)
{
    long id = (long)arg;
    for (int i = 0; i < ITERS; i++) {
        errno = 0;
        long v = convert(i % 3 ? "42" : "99999999999999999999999");
        if (errno == ERANGE && v == LONG_MAX)
            overflows[id]++;
    }
    return NULL;
}

int main(void)
{
    long total = 0;
    run_threads(worker);
    for (int i = 0; i < NTHREADS; i++)
        total += overflows[i];
    printf("conversions %ld overflows %ld\n", conversions, total);
    return 0;
}
