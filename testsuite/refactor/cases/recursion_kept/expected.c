/* A section that calls its own function, declared nowhere above it: the extracted function
 * could not call it, so the section is kept.  The other section calls a function declared
 * before, and is extracted. */
#include "harness.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long depth_sum, helper_calls;

static long helper(long v);

/* Critical section of descend() on &lock (input.c:13-15), extracted by locktune-extract. */
struct descend__cs1_ctx {
    int depth;
};

static void *descend__cs1(void *lt_arg)
{
    struct descend__cs1_ctx *lt_ctx = lt_arg;
    int depth = lt_ctx->depth;

    depth_sum += depth;
    return NULL;
}

static void descend(int depth)
{
    struct descend__cs1_ctx lt_cs1 = {.depth = depth};
    lt_execute(&lock, descend__cs1, &lt_cs1);
    if (depth > 0 && depth % 7 == 0) {
        pthread_mutex_lock(&lock);
        descend(depth - 1 - (int)helper(0));
        pthread_mutex_unlock(&lock);
    } else if (depth > 0) {
        descend(depth - 1);
    }
}

static long helper(long v)
{
    helper_calls++;
    return v;
}

static pthread_mutex_t rec = PTHREAD_MUTEX_INITIALIZER;

static void *worker(void *arg)
{
    (void)arg;
    for (int i = 0; i < ITERS / 10; i++)
        descend(i % 5);
    return NULL;
}

int main(void)
{
    (void)rec;
    run_threads(worker);
    printf("depth %ld\n", depth_sum);
    return 0;
}
