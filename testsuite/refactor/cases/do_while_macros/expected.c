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

/* Critical section of worker() on &(items_lock) (input.c:25-27), extracted by locktune-extract. */
struct worker__cs1_ctx {
    long id;
};

static void *worker__cs1(void *lt_arg)
{
    struct worker__cs1_ctx *lt_ctx = lt_arg;
    long id = lt_ctx->id;

    items += id + 1;
    return NULL;
}

/* Critical section of worker() on &stats_lock (input.c:28-35), extracted by locktune-extract. */
struct worker__cs2_ctx {
    int i;
};

static void *worker__cs2(void *lt_arg)
{
    struct worker__cs2_ctx *lt_ctx = lt_arg;
    int i = lt_ctx->i;

    if (i % 100 == 0) {
        early++;
        return (void *)1;
    }
    stats_calls++;
    return NULL;
}

static void *worker(void *arg)
{
    long id = (long)arg;
    for (int i = 0; i < ITERS; i++) {
        struct worker__cs1_ctx lt_cs1 = {.id = id};
        lt_execute(&(items_lock), worker__cs1, &lt_cs1);
        struct worker__cs2_ctx lt_cs2 = {.i = i};
        intptr_t lt_exit2 = (intptr_t)lt_execute(&stats_lock, worker__cs2, &lt_cs2);
        if (lt_exit2 == 1) {
            continue;
        }
    }
    return NULL;
}

int main(void)
{
    run_threads(worker);
    printf("items %ld stats %ld early %ld\n", items, stats_calls, early);
    return 0;
}
