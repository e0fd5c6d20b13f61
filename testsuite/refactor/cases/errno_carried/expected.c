/* errno set inside the section and read after it: it is carried back to the caller. */
#include "harness.h"

#include <errno.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long slots = NTHREADS * ITERS / 2;
static long busy[NTHREADS];

/* Critical section of claim() on &lock (input.c:13-21), extracted by locktune-extract. */
union claim__cs1_ctx {
    struct {
        int rc;
        int lt_errno;
    } in;
    struct {
        int rc;
        int lt_errno;
    } out;
};

static void *claim__cs1(void *lt_arg)
{
    union claim__cs1_ctx *lt_ctx = lt_arg;
    int rc = lt_ctx->in.rc;
    errno = lt_ctx->in.lt_errno;

    if (slots == 0) {
        errno = EBUSY;
        rc = -1;
    } else {
        slots--;
        errno = 0;
    }
    lt_ctx->out.rc = rc;
    lt_ctx->out.lt_errno = errno;
    return NULL;
}

static int claim(void)
{
    int rc = 0;
    union claim__cs1_ctx lt_cs1 = {.in = {.rc = rc, .lt_errno = errno}};
    lt_execute(&lock, claim__cs1, &lt_cs1);
    rc = lt_cs1.out.rc;
    errno = lt_cs1.out.lt_errno;
    return rc;
}

static void *worker(void *arg)
{
    long id = (long)arg;
    for (int i = 0; i < ITERS; i++)
        if (claim() < 0 && errno == EBUSY)
            busy[id]++;
    return NULL;
}

int main(void)
{
    long total = 0;
    run_threads(worker);
    for (int i = 0; i < NTHREADS; i++)
        total += busy[i];
    printf("busy %ld slots %ld\n", total, slots);
    return 0;
}
