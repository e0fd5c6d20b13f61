/* Project lock macros, recognised without help: LOCK(x)/UNLOCK(x), a do-while(0) macro
 * with a fixed lock, and a wrapper of a wrapper. */
#include <pthread.h>
#include <stdio.h>

#define THREADS 4
#define ITERS 3000

#define mutex_lock(m) pthread_mutex_lock(m)
#define mutex_unlock(m) pthread_mutex_unlock(m)
#define LOCK(x) mutex_lock(&(x))
#define UNLOCK(x) mutex_unlock(&(x))
#define STATS_LOCK() do { pthread_mutex_lock(&stats_lock); } while (0)
#define STATS_UNLOCK() do { pthread_mutex_unlock(&stats_lock); } while (0)

static pthread_mutex_t stats_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t items_lock = PTHREAD_MUTEX_INITIALIZER;
static long items, stats_calls;

static void *worker(void *arg)
{
    long id = (long)arg;
    for (int i = 0; i < ITERS; i++) {
        LOCK(items_lock);
        items += id + 1;
        UNLOCK(items_lock);
        STATS_LOCK();
        stats_calls++;
        STATS_UNLOCK();
    }
    return NULL;
}

int main(void)
{
    pthread_t t[THREADS];
    for (long i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    printf("items %ld stats %ld\n", items, stats_calls);
    return 0;
}
// CHECK: #define mutex_lock(m) lt_mutex_lock(m)
// CHECK: #define STATS_LOCK() do { lt_mutex_lock(&stats_lock); } while (0)
