/* Trylock sections run by lt_execute_trylock: the success branch of the if, or the code after
 * the if when the failure branch leaves; one that needs the caller's thread is kept. */
#include "harness.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static _Thread_local long mine;
static long done_, skipped, total, owned;

static int reassign(long v)
{
    long ret;
    if (pthread_mutex_trylock(&lock) != 0) {
        /* busy: the caller tries again */
        return -1;
    }
    ret = total += v;
    pthread_mutex_unlock(&lock);
    return (int)(ret % 2);
}

static void *worker(void *arg)
{
    (void)arg;
    for (int i = 0; i < ITERS; i++) {
        if (pthread_mutex_trylock(&lock) == 0) {
            done_++;
            pthread_mutex_unlock(&lock);
        } else {
            pthread_mutex_lock(&lock);
            skipped++;
            pthread_mutex_unlock(&lock);
        }
        while (reassign(1) < 0)
            ;
        if (!pthread_mutex_trylock(&lock)) {
            mine++;
            owned++;
            pthread_mutex_unlock(&lock);
        }
    }
    return NULL;
}

int main(void)
{
    run_threads(worker);
    printf("total %ld %ld\n", done_ + skipped, total);
    return 0;
}
