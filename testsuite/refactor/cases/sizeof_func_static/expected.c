/* sizeof, __func__, a static local and shadowing keep their meaning in the extracted code. */
#include "harness.h"

#include <string.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long count = 0; /* shadowed below */
static char where[32];

/* Critical section of tally() on &lock (input.c:16-23), extracted by locktune-extract. */
union tally__cs1_ctx {
    struct {
        long *calls;
        long count;
        short width;
    } in;
    struct {
        long count;
    } out;
};

static void *tally__cs1(void *lt_arg)
{
    union tally__cs1_ctx *lt_ctx = lt_arg;
    long *calls = lt_ctx->in.calls;
    long count = lt_ctx->in.count;
    char tag[8];
    short width = lt_ctx->in.width;

    (*calls)++;
    count += *calls;
    strncpy(where, "tally", sizeof where - 1);
    memset(tag, 'x', sizeof tag);
    tag[sizeof tag - 1] = 0;
    count += (long)sizeof(width) + (long)sizeof tag + (long)strlen(tag);
    lt_ctx->out.count = count;
    return NULL;
}

static long tally(int v)
{
    static long calls;
    long count = v;  /* shadows the global */
    short width = 0;
    union tally__cs1_ctx lt_cs1 = {.in = {.calls = &calls, .count = count, .width = width}};
    lt_execute(&lock, tally__cs1, &lt_cs1);
    count = lt_cs1.out.count;
    return count;
}

static void *worker(void *arg)
{
    (void)arg;
    for (int i = 0; i < ITERS; i++)
        tally(i);
    return NULL;
}

int main(void)
{
    run_threads(worker);
    printf("%s %d %ld\n", where, tally(0) > NTHREADS * ITERS, count);
    return 0;
}
