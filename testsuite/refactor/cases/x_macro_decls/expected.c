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

/* Critical section of aggregate() on &per_thread[ii].mutex (input.c:22-28), extracted by
 * locktune-extract. */
struct aggregate__cs1_ctx {
    struct stats *out;
    int ii;
};

static void *aggregate__cs1(void *lt_arg)
{
    struct aggregate__cs1_ctx *lt_ctx = lt_arg;
    struct stats *out = lt_ctx->out;
    int ii = lt_ctx->ii;
    int sid;

#define X(name) out->name += per_thread[ii].name;
    STATS_FIELDS
#undef X
    for (sid = 0; sid < 4; sid++)
        out->slabs[sid] += per_thread[ii].slabs[sid];
    return NULL;
}

static void aggregate(struct stats *out)
{
    int ii;
    for (ii = 0; ii < 2; ++ii) {
        struct aggregate__cs1_ctx lt_cs1 = {.out = out, .ii = ii};
        lt_execute(&per_thread[ii].mutex, aggregate__cs1, &lt_cs1);
    }
}

/* Critical section of worker() on &s->mutex (input.c:37-41), extracted by locktune-extract. */
struct worker__cs1_ctx {
    struct stats *s;
    int i;
};

static void *worker__cs1(void *lt_arg)
{
    struct worker__cs1_ctx *lt_ctx = lt_arg;
    struct stats *s = lt_ctx->s;
    int i = lt_ctx->i;

    s->gets++;
    s->sets += i % 2;
    s->slabs[i % 4]++;
    return NULL;
}

static void *worker(void *arg)
{
    long id = (long)arg;
    for (int i = 0; i < ITERS; i++) {
        struct stats *s = &per_thread[id % 2];
        struct worker__cs1_ctx lt_cs1 = {.s = s, .i = i};
        lt_execute(&s->mutex, worker__cs1, &lt_cs1);
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
