/* A call in the section may set errno, and the function reads errno after the section: the
 * value is carried back to the caller's thread. */
#include "harness.h"

#include <errno.h>
#include <stdlib.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static const char *inputs[] = {"12", "99999999999999999999999", "7", "x"};
static long parsed, overflows;

static long parse(int i)
{
    long v;
    errno = 0;
    pthread_mutex_lock(&lock);
    v = strtol(inputs[i % 4], NULL, 10);
    parsed++;
    pthread_mutex_unlock(&lock);
    if (errno == ERANGE)
        overflows++;
    return v;
}

static void *worker(void *arg)
{
    (void)arg;
    for (int i = 0; i < ITERS; i++)
        parse(i);
    return NULL;
}

int main(void)
{
    run_threads(worker);
    printf("parsed %ld overflows %d\n", parsed, overflows > 0);
    return 0;
}
