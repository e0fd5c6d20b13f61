/* A call in the section may set errno, and the function reads errno after the section: the
 * value is carried back to the caller's thread. */
#include "harness.h"

#include <errno.h>
#include <stdlib.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static const char *inputs[] = {"12", "99999999999999999999999", "7", "x"};
static long parsed, overflows;

/* Critical section of parse() on &lock (input.c:16-19), extracted by locktune-extract. */
union parse__cs1_ctx {
    struct {
        int i;
        int lt_errno;
    } in;
    struct {
        long v;
        int lt_errno;
    } out;
};

static void *parse__cs1(void *lt_arg)
{
    union parse__cs1_ctx *lt_ctx = lt_arg;
    long v;
    int i = lt_ctx->in.i;
    errno = lt_ctx->in.lt_errno;

    v = strtol(inputs[i % 4], NULL, 10);
    parsed++;
    lt_ctx->out.v = v;
    lt_ctx->out.lt_errno = errno;
    return NULL;
}

static long parse(int i)
{
    long v;
    errno = 0;
    union parse__cs1_ctx lt_cs1 = {.in = {.i = i, .lt_errno = errno}};
    lt_execute(&lock, parse__cs1, &lt_cs1);
    v = lt_cs1.out.v;
    errno = lt_cs1.out.lt_errno;
    if (errno == ERANGE)
        overflows++;
    return v;
}

static void *worker(void *arg)
{
    (void)arg;
    for (int i = 0; i < ITERS; i++)
        parse(i);
    return NULL;
}

int main(void)
{
    run_threads(worker);
    printf("parsed %ld overflows %d\n", parsed, overflows > 0);
    return 0;
}
