/* X-macros (memcached's THREAD_STATS_FIELDS) expand to statements that use locals by name;
 * a loop variable declared with another moves into the function, its declarator cut out. */
#include "harness.h"

#define STATS_FIELDS X(gets) X(sets)

struct stats {
    pthread_mutex_t mutex;
#define X(name) long name;
    STATS_FIELDS
#undef X
    long slabs[4];
};

static struct stats per_thread[2] = {{PTHREAD_MUTEX_INITIALIZER, 0, 0, {0}},
                                     {PTHREAD_MUTEX_INITIALIZER, 0, 0, {0}}};

static void aggregate(struct stats *out)
{
    int ii, sid;
    for (ii = 0; ii < 2; ++ii) {
        pthread_mutex_lock(&per_thread[ii].mutex);
#define X(name) out->name += per_thread[ii].name;
        STATS_FIELDS
#undef X
        for (sid = 0; sid < 4; sid++)
            out->slabs[sid] += per_thread[ii].slabs[sid];
        pthread_mutex_unlock(&per_thread[ii].mutex);
    }
}

static void *worker(void *arg)
{
    long id = (long)arg;
    for (int i = 0; i < ITERS; i++) {
        struct stats *s = &per_thread[id % 2];
        pthread_mutex_lock(&s->mutex);
        s->gets++;
        s->sets += i % 2;
        s->slabs[i % 4]++;
        pthread_mutex_unlock(&s->mutex);
    }
    return NULL;
}

int main(void)
{
    struct stats total = {PTHREAD_MUTEX_INITIALIZER, 0, 0, {0}};
    run_threads(worker);
    aggregate(&total);
    printf("gets %ld sets %ld slab0 %ld\n", total.gets, total.sets, total.slabs[0]);
    return 0;
}
