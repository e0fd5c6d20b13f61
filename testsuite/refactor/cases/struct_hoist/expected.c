/* A struct declared in the section and used after it is copied back. */
#include "harness.h"

struct pair {
    long lo, hi;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct pair range = {0, 0};

/* Critical section of widen() on &lock (input.c:13-19), extracted by locktune-extract. */
union widen__cs1_ctx {
    struct {
        long v;
    } in;
    struct {
        struct pair snapshot;
    } out;
};

static void *widen__cs1(void *lt_arg)
{
    union widen__cs1_ctx *lt_ctx = lt_arg;
    long v = lt_ctx->in.v;

    if (v < range.lo)
        range.lo = v;
    if (v > range.hi)
        range.hi = v;
    struct pair snapshot = range;
    lt_ctx->out.snapshot = snapshot;
    return NULL;
}

static long widen(long v)
{
    struct pair snapshot;
    union widen__cs1_ctx lt_cs1 = {.in = {.v = v}};
    lt_execute(&lock, widen__cs1, &lt_cs1);
    snapshot = lt_cs1.out.snapshot;
    return snapshot.hi - snapshot.lo;
}

static void *worker(void *arg)
{
    long id = (long)arg, width = 0;
    for (int i = 0; i < ITERS; i++)
        width = widen(id * 1000 + i);
    return (void *)width;
}

int main(void)
{
    run_threads(worker);
    printf("range %ld..%ld\n", range.lo, range.hi);
    return 0;
}
