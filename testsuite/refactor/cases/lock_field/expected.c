/* Locks that are struct fields: through a pointer, through a struct, and nested. */
#include "harness.h"

struct stats {
    pthread_mutex_t mutex;
    long gets, sets;
};

struct thread {
    int id;
    struct stats stats;
};

static struct thread threads[2] = {
    {0, {PTHREAD_MUTEX_INITIALIZER, 0, 0}},
    {1, {PTHREAD_MUTEX_INITIALIZER, 0, 0}},
};

/* Critical section of record() on &t->stats.mutex (input.c:21-26), extracted by
 * locktune-extract. */
struct record__cs1_ctx {
    int set;
    struct thread *t;
};

static void *record__cs1(void *lt_arg)
{
    struct record__cs1_ctx *lt_ctx = lt_arg;
    int set = lt_ctx->set;
    struct thread *t = lt_ctx->t;

    if (set)
        t->stats.sets++;
    else
        t->stats.gets++;
    return NULL;
}

static void record(struct thread *t, int set)
{
    struct record__cs1_ctx lt_cs1 = {.set = set, .t = t};
    lt_execute(&t->stats.mutex, record__cs1, &lt_cs1);
}

/* Critical section of total() on &threads[which].stats.mutex (input.c:32-34), extracted by
 * locktune-extract. */
union total__cs1_ctx {
    struct {
        int which;
    } in;
    struct {
        long sum;
    } out;
};

static void *total__cs1(void *lt_arg)
{
    union total__cs1_ctx *lt_ctx = lt_arg;
    long sum;
    int which = lt_ctx->in.which;

    sum = threads[which].stats.gets + threads[which].stats.sets;
    lt_ctx->out.sum = sum;
    return NULL;
}

static long total(int which)
{
    long sum;
    union total__cs1_ctx lt_cs1 = {.in = {.which = which}};
    lt_execute(&threads[which].stats.mutex, total__cs1, &lt_cs1);
    sum = lt_cs1.out.sum;
    return sum;
}

static void *worker(void *arg)
{
    long id = (long)arg;
    for (int i = 0; i < ITERS; i++)
        record(&threads[(id + i) % 2], i % 3 == 0);
    return NULL;
}

int main(void)
{
    run_threads(worker);
    printf("totals %ld %ld\n", total(0), total(1));
    return 0;
}
