/* Wrappers named on the command line: STATS_LOCK()/STATS_UNLOCK() check something first, so
 * they are not recognised alone; --lock-wrapper says which lock they take. */
#include "harness.h"

static pthread_mutex_t stats_lock = PTHREAD_MUTEX_INITIALIZER;
static int stats_ready = 1;
static long curr_conns, total_conns;

__attribute__((unused)) static void STATS_LOCK(void)
{
    if (!stats_ready)
        abort();
    pthread_mutex_lock(&stats_lock);
}

__attribute__((unused)) static void STATS_UNLOCK(void)
{
    pthread_mutex_unlock(&stats_lock);
}

/* Critical section of conn_opened() on STATS_LOCK() (input.c:23-26), extracted by
 * locktune-extract. */
static void *conn_opened__cs1(void *lt_arg)
{
    (void)lt_arg;

    curr_conns++;
    total_conns++;
    return NULL;
}

static void conn_opened(void)
{
    lt_execute(&stats_lock, conn_opened__cs1, NULL);
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
