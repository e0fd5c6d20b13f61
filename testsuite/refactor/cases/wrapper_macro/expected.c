/* Lock wrappers written as macros (memcached's mutex_lock and THR_STATS_LOCK). */
#include "harness.h"

#define mutex_lock(x) pthread_mutex_lock(x)
#define mutex_unlock(x) pthread_mutex_unlock(x)

struct conn {
    struct worker_thread *thread;
};
struct worker_thread {
    struct {
        pthread_mutex_t mutex;
        long get_cmds;
    } stats;
};

#define THR_STATS_LOCK(c) pthread_mutex_lock(&c->thread->stats.mutex)
#define THR_STATS_UNLOCK(c) pthread_mutex_unlock(&c->thread->stats.mutex)

static pthread_mutex_t cas_lock = PTHREAD_MUTEX_INITIALIZER;
static long cas_id;
static struct worker_thread threads[2] = {{{PTHREAD_MUTEX_INITIALIZER, 0}},
                                          {{PTHREAD_MUTEX_INITIALIZER, 0}}};

/* Critical section of next_cas() on &cas_lock (input.c:28-30), extracted by locktune-extract. */
struct next_cas__cs1_ctx {
    long id;
};

static void *next_cas__cs1(void *lt_arg)
{
    struct next_cas__cs1_ctx *lt_ctx = lt_arg;
    long id;

    id = ++cas_id;
    lt_ctx->id = id;
    return NULL;
}

static long next_cas(void)
{
    long id;
    struct next_cas__cs1_ctx lt_cs1;
    lt_execute(&cas_lock, next_cas__cs1, &lt_cs1);
    id = lt_cs1.id;
    return id;
}

/* Critical section of count_get() on &c->thread->stats.mutex (input.c:36-38), extracted by
 * locktune-extract. */
struct count_get__cs1_ctx {
    struct conn *c;
};

static void *count_get__cs1(void *lt_arg)
{
    struct count_get__cs1_ctx *lt_ctx = lt_arg;
    struct conn *c = lt_ctx->c;

    c->thread->stats.get_cmds++;
    return NULL;
}

static void count_get(struct conn *c)
{
    struct count_get__cs1_ctx lt_cs1 = {.c = c};
    lt_execute(&c->thread->stats.mutex, count_get__cs1, &lt_cs1);
}

static void *worker(void *arg)
{
    long id = (long)arg;
    struct conn c = {&threads[id % 2]};
    for (int i = 0; i < ITERS; i++) {
        next_cas();
        count_get(&c);
    }
    return NULL;
}

int main(void)
{
    run_threads(worker);
    printf("cas %ld gets %ld\n", cas_id, threads[0].stats.get_cmds + threads[1].stats.get_cmds);
    return 0;
}
