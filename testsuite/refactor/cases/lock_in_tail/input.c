/* A section inside the code that follows another section's early unlock: both extracted,
 * the second one's call site replayed at the first one's dispatch. */
#include "harness.h"

static pthread_mutex_t queue_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t stats_lock = PTHREAD_MUTEX_INITIALIZER;
static long queued, rejected;

static int enqueue(long n)
{
    pthread_mutex_lock(&queue_lock);
    if (queued + n > NTHREADS * ITERS / 2) {
        pthread_mutex_unlock(&queue_lock);
        pthread_mutex_lock(&stats_lock);
        rejected += n;
        pthread_mutex_unlock(&stats_lock);
        return -1;
    }
    queued += n;
    pthread_mutex_unlock(&queue_lock);
    return 0;
}

static void *worker(void *arg)
{
    (void)arg;
    for (int i = 0; i < ITERS; i++)
        enqueue(1);
    return NULL;
}

int main(void)
{
    run_threads(worker);
    printf("queued %ld rejected %ld\n", queued, rejected);
    return 0;
}
