/* Lock macros written do { ... } while (0), and macros of macros. */
#include "harness.h"

#define mutex_lock(m) pthread_mutex_lock(m)
#define mutex_unlock(m) pthread_mutex_unlock(m)
#define LOCK(x) mutex_lock(&(x))
#define UNLOCK(x) mutex_unlock(&(x))
#define STATS_LOCK()                                                                            \
    do {                                                                                        \
        pthread_mutex_lock(&stats_lock);                                                        \
    } while (0)
#define STATS_UNLOCK()                                                                          \
    do {                                                                                        \
        pthread_mutex_unlock(&stats_lock);                                                      \
    } while (0)

static pthread_mutex_t stats_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t items_lock = PTHREAD_MUTEX_INITIALIZER;
static long items, stats_calls, early;

static void *worker(void *arg)
{
    long id = (long)arg;
    for (int i = 0; i < ITERS; i++) {
        LOCK(items_lock);
        items += id + 1;
        UNLOCK(items_lock);
        STATS_LOCK();
        if (i % 100 == 0) {
            early++;
            STATS_UNLOCK();
            continue;
        }
        stats_calls++;
        STATS_UNLOCK();
    }
    return NULL;
}

int main(void)
{
    run_threads(worker);
    printf("items %ld stats %ld early %ld\n", items, stats_calls, early);
    return 0;
}
