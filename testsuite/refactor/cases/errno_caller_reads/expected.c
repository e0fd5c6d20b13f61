/* The section calls a library function that sets errno; the caller of the function reads
 * errno after it returns.  errno is carried back whoever reads it. */
#include "harness.h"

#include <errno.h>
#include <limits.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long conversions;

/* Critical section of convert() on &lock (input.c:14-17), extracted by locktune-extract. */
union convert__cs1_ctx {
    struct {
        const char *s;
        int lt_errno;
    } in;
    struct {
        long v;
        int lt_errno;
    } out;
};

static void *convert__cs1(void *lt_arg)
{
    union convert__cs1_ctx *lt_ctx = lt_arg;
    long v;
    const char *s = lt_ctx->in.s;
    errno = lt_ctx->in.lt_errno;

    v = strtol(s, NULL, 10);
    conversions++;
    lt_ctx->out.v = v;
    lt_ctx->out.lt_errno = errno;
    return NULL;
}

static long convert(const char *s)
{
    long v;
    union convert__cs1_ctx lt_cs1 = {.in = {.s = s, .lt_errno = errno}};
    lt_execute(&lock, convert__cs1, &lt_cs1);
    v = lt_cs1.out.v;
    errno = lt_cs1.out.lt_errno;
    return v;
}

static long overflows[NTHREADS];

static void *worker(void *arg)
{
    long id = (long)arg;
    for (int i = 0; i < ITERS; i++) {
        errno = 0;
        long v = convert(i % 3 ? "42" : "99999999999999999999999");
        if (errno == ERANGE && v == LONG_MAX)
            overflows[id]++;
    }
    return NULL;
}

int main(void)
{
    long total = 0;
    run_threads(worker);
    for (int i = 0; i < NTHREADS; i++)
        total += overflows[i];
    printf("conversions %ld overflows %ld\n", conversions, total);
    return 0;
}
