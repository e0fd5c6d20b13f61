/* Early exit with a value: the queue is empty, unlock and return -1. */
#include "harness.h"

struct queue {
    pthread_mutex_t lock;
    int items[64];
    int n;
};

static struct queue q = {PTHREAD_MUTEX_INITIALIZER, {0}, 0};
static long taken, empty;

/* Critical section of put() on &s->lock (input.c:16-23), extracted by locktune-extract. */
struct put__cs1_ctx {
    struct queue *s;
    int v;
};

static void *put__cs1(void *lt_arg)
{
    struct put__cs1_ctx *lt_ctx = lt_arg;
    int full;
    struct queue *s = lt_ctx->s;
    int v = lt_ctx->v;

    full = s->n == 64;
    if (full) {
        return (void *)1;
    }
    s->items[s->n++] = v;
    return NULL;
}

static int put(struct queue *s, int v)
{
    struct put__cs1_ctx lt_cs1 = {.s = s, .v = v};
    intptr_t lt_exit1 = (intptr_t)lt_execute(&s->lock, put__cs1, &lt_cs1);
    if (lt_exit1 == 1) {
        return -1;
    }
    return 0;
}

/* Critical section of take() on &s->lock (input.c:30-38), extracted by locktune-extract. */
union take__cs1_ctx {
    struct {
        struct queue *s;
    } in;
    struct {
        int r;
    } out;
};

static void *take__cs1(void *lt_arg)
{
    union take__cs1_ctx *lt_ctx = lt_arg;
    struct queue *s = lt_ctx->in.s;
    int r;

    if (s->n == 0) {
        empty++;
        return (void *)1;
    }
    r = s->items[--s->n];
    taken++;
    lt_ctx->out.r = r;
    return NULL;
}

static int take(struct queue *s)
{
    int r;
    union take__cs1_ctx lt_cs1 = {.in = {.s = s}};
    intptr_t lt_exit1 = (intptr_t)lt_execute(&s->lock, take__cs1, &lt_cs1);
    if (lt_exit1 == 1) {
        return -1;
    }
    r = lt_cs1.out.r;
    return r;
}

static void *worker(void *arg)
{
    long id = (long)arg;
    for (int i = 0; i < ITERS; i++) {
        if (id % 2 == 0)
            put(&q, i);
        else
            take(&q);
    }
    return NULL;
}

int main(void)
{
    run_threads(worker);
    /* Every put either failed, was taken, or is still queued. */
    while (take(&q) >= 0)
        ;
    printf("taken+left consistent: %d\n", taken > 0 && empty > 0);
    printf("queue empty at the end: %d\n", q.n == 0);
    return 0;
}
