/* errno set inside the section and read after it: it is carried back to the caller. */
#include "harness.h"

#include <errno.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long slots = NTHREADS * ITERS / 2;
static long busy[NTHREADS];

static int claim(void)
{
    int rc = 0;
    pthread_mutex_lock(&lock);
    if (slots == 0) {
        errno = EBUSY;
        rc = -1;
    } else {
        slots--;
        errno = 0;
    }
    pthread_mutex_unlock(&lock);
    return rc;
}

static void *worker(void *arg)
{
    long id = (long)arg;
    for (int i = 0; i < ITERS; i++)
        if (claim() < 0 && errno == EBUSY)
            busy[id]++;
    return NULL;
}

int main(void)
{
    long total = 0;
    run_threads(worker);
    for (int i = 0; i < NTHREADS; i++)
        total += busy[i];
    printf("busy %ld slots %ld\n", total, slots);
    return 0;
}
