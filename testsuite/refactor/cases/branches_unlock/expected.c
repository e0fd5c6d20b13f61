/* Several unlocks on several branches, each the last thing its branch does. */
#include "harness.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long small, large, total;

/* Critical section of classify() on &lock (input.c:10-19), extracted by locktune-extract. */
union classify__cs1_ctx {
    struct {
        int v;
    } in;
    struct {
        int kind;
    } out;
};

static void *classify__cs1(void *lt_arg)
{
    union classify__cs1_ctx *lt_ctx = lt_arg;
    int v = lt_ctx->in.v;
    int kind;

    total += v;
    if (v < 50) {
        small++;
        kind = 0;
    } else {
        large++;
        kind = 1;
    }
    lt_ctx->out.kind = kind;
    return NULL;
}

static int classify(int v)
{
    int kind;
    union classify__cs1_ctx lt_cs1 = {.in = {.v = v}};
    lt_execute(&lock, classify__cs1, &lt_cs1);
    kind = lt_cs1.out.kind;
    return kind;
}

static void *worker(void *arg)
{
    long id = (long)arg, mine = 0;
    for (int i = 0; i < ITERS; i++)
        mine += classify((int)((i * 7 + id) % 100));
    return (void *)mine;
}

int main(void)
{
    run_threads(worker);
    printf("small %ld large %ld total %ld\n", small, large, total);
    return 0;
}
