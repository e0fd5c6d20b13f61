/* Outputs written on only some paths keep their prior value on the others; a variable with
 * no value before the section is passed by pointer rather than copied. */
#include "harness.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long level, peaks;

static long observe(long v, long *peak_out)
{
    long peak = -1; /* keeps -1 unless this call raised the level */
    long seen;      /* no value before the section */
    int raised;
    pthread_mutex_lock(&lock);
    if (v > level) {
        level = v;
        peak = v;
        peaks++;
    }
    if (v % 2)
        seen = level;
    raised = peak >= 0;
    pthread_mutex_unlock(&lock);
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
