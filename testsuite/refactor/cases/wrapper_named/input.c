/* Wrappers named on the command line: STATS_LOCK()/STATS_UNLOCK() check something first, so
 * they are not recognised alone; --lock-wrapper says which lock they take. */
#include "harness.h"

static pthread_mutex_t stats_lock = PTHREAD_MUTEX_INITIALIZER;
static int stats_ready = 1;
static long curr_conns, total_conns;

static void STATS_LOCK(void)
{
    if (!stats_ready)
        abort();
    pthread_mutex_lock(&stats_lock);
}

static void STATS_UNLOCK(void)
{
    pthread_mutex_unlock(&stats_lock);
}

static void conn_opened(void)
{
    STATS_LOCK();
    curr_conns++;
    total_conns++;
    STATS_UNLOCK();
}

static void *worker(void *arg)
{
    (void)arg;
    for (int i = 0; i < ITERS; i++)
        conn_opened();
    return NULL;
}

int main(void)
{
    run_threads(worker);
    printf("conns %ld %ld\n", curr_conns, total_conns);
    return 0;
}
