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

static long next_cas(void)
{
    long id;
    mutex_lock(&cas_lock);
    id = ++cas_id;
    mutex_unlock(&cas_lock);
    return id;
}

static void count_get(struct conn *c)
{
    THR_STATS_LOCK(c);
    c->thread->stats.get_cmds++;
    THR_STATS_UNLOCK(c);
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
