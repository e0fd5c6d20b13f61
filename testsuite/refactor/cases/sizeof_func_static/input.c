/* sizeof, __func__, a static local and shadowing keep their meaning in the extracted code. */
#include "harness.h"

#include <string.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long count = 0; /* shadowed below */
static char where[32];

static long tally(int v)
{
    static long calls;
    long count = v;  /* shadows the global */
    char tag[8];
    short width = 0;
    pthread_mutex_lock(&lock);
    calls++;
    count += calls;
    strncpy(where, __func__, sizeof where - 1);
    memset(tag, 'x', sizeof tag);
    tag[sizeof tag - 1] = 0;
    count += (long)sizeof(width) + (long)sizeof tag + (long)strlen(tag);
    pthread_mutex_unlock(&lock);
    return count;
}

static void *worker(void *arg)
{
    (void)arg;
    for (int i = 0; i < ITERS; i++)
        tally(i);
    return NULL;
}

int main(void)
{
    run_threads(worker);
    printf("%s %d %ld\n", where, tally(0) > NTHREADS * ITERS, count);
    return 0;
}
