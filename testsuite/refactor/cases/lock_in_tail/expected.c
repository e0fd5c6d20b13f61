/* A section inside the code that follows another section's early unlock: both extracted,
 * the second one's call site replayed at the first one's dispatch. */
#include "harness.h"

static pthread_mutex_t queue_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t stats_lock = PTHREAD_MUTEX_INITIALIZER;
static long queued, rejected;

/* Critical section of enqueue() on &queue_lock (input.c:11-20), extracted by locktune-extract. */
struct enqueue__cs1_ctx {
    long n;
};

static void *enqueue__cs1(void *lt_arg)
{
    struct enqueue__cs1_ctx *lt_ctx = lt_arg;
    long n = lt_ctx->n;

    if (queued + n > NTHREADS * ITERS / 2) {
        return (void *)1;
    }
    queued += n;
    return NULL;
}

/* Critical section of enqueue() on &stats_lock (input.c:14-16), extracted by locktune-extract. */
struct enqueue__cs2_ctx {
    long n;
};

static void *enqueue__cs2(void *lt_arg)
{
    struct enqueue__cs2_ctx *lt_ctx = lt_arg;
    long n = lt_ctx->n;

    rejected += n;
    return NULL;
}

static int enqueue(long n)
{
    struct enqueue__cs1_ctx lt_cs1 = {.n = n};
    intptr_t lt_exit1 = (intptr_t)lt_execute(&queue_lock, enqueue__cs1, &lt_cs1);
    if (lt_exit1 == 1) {
        struct enqueue__cs2_ctx lt_cs2 = {.n = n};
        lt_execute(&stats_lock, enqueue__cs2, &lt_cs2);
        return -1;
    }
    return 0;
}

static void *worker(void *arg)
{
    (void)arg;
    for (int i = 0; i < ITERS; i++)
        enqueue(1);
    return NULL;
}

int main(void)
{
    run_threads(worker);
    printf("queued %ld rejected %ld\n", queued, rejected);
    return 0;
}
