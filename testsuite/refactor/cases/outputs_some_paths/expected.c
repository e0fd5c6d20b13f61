/* Outputs written on only some paths keep their prior value on the others; a variable with
 * no value before the section is passed by pointer rather than copied. */
#include "harness.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long level, peaks;

/* Critical section of observe() on &lock (input.c:13-22), extracted by locktune-extract. */
union observe__cs1_ctx {
    struct {
        long v;
        long peak;
        long *seen;
    } in;
    struct {
        long peak;
        int raised;
    } out;
};

static void *observe__cs1(void *lt_arg)
{
    union observe__cs1_ctx *lt_ctx = lt_arg;
    long v = lt_ctx->in.v;
    long peak = lt_ctx->in.peak;
    long *seen = lt_ctx->in.seen;
    int raised;

    if (v > level) {
        level = v;
        peak = v;
        peaks++;
    }
    if (v % 2)
        *seen = level;
    raised = peak >= 0;
    lt_ctx->out.peak = peak;
    lt_ctx->out.raised = raised;
    return NULL;
}

static long observe(long v, long *peak_out)
{
    long peak = -1; /* keeps -1 unless this call raised the level */
    long seen;      /* no value before the section */
    int raised;
    union observe__cs1_ctx lt_cs1 = {.in = {.v = v, .peak = peak, .seen = &seen}};
    lt_execute(&lock, observe__cs1, &lt_cs1);
    peak = lt_cs1.out.peak;
    raised = lt_cs1.out.raised;
    if (v % 2 == 0)
        seen = 0;
    *peak_out = raised ? peak : 0;
    return seen;
}

static void *worker(void *arg)
{
    long id = (long)arg, sum = 0, peak;
    for (int i = 0; i < ITERS; i++) {
        sum += observe(id * ITERS + i, &peak) > 0;
        sum += peak > 0;
    }
    return (void *)sum;
}

int main(void)
{
    run_threads(worker);
    printf("level %ld\n", level);
    return 0;
}
