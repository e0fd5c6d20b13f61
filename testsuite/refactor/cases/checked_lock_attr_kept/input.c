/* A checked lock in a file that makes an error-checking mutex: its lock can fail by design
 * (EDEADLK), and lt_execute has no error to hand to the check, so the section is kept.  The
 * unchecked section of the same lock is extracted. */
#include "harness.h"

static pthread_mutex_t lock;
static long count, other;

static void *worker(void *arg)
{
    (void)arg;
    for (int i = 0; i < ITERS; i++) {
        if (pthread_mutex_lock(&lock) != 0)
            abort();
        count++;
        pthread_mutex_unlock(&lock);
        pthread_mutex_lock(&lock);
        other += 2;
        pthread_mutex_unlock(&lock);
    }
    return NULL;
}

int main(void)
{
    pthread_mutexattr_t attr;
    pthread_mutexattr_init(&attr);
    pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_ERRORCHECK);
    pthread_mutex_init(&lock, &attr);
    run_threads(worker);
    printf("%ld %ld\n", count, other);
    return 0;
}
