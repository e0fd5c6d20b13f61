/* The code after an early unlock uses a variable declared inside the section. */
#include "harness.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long values[8], rejected;

/* Critical section of update() on &lock (input.c:9-19), extracted by locktune-extract. */
union update__cs1_ctx {
    struct {
        int slot;
        long v;
    } in;
    struct {
        long old;
    } out;
};

static void *update__cs1(void *lt_arg)
{
    union update__cs1_ctx *lt_ctx = lt_arg;
    int slot = lt_ctx->in.slot;
    long v = lt_ctx->in.v;

    {
        long old = values[slot];
        if (old > 1000) {
            rejected++;
            lt_ctx->out.old = old;
            return (void *)1;
        }
        values[slot] = old + v;
    }
    return NULL;
}

static long update(int slot, long v)
{
    union update__cs1_ctx lt_cs1 = {.in = {.slot = slot, .v = v}};
    intptr_t lt_exit1 = (intptr_t)lt_execute(&lock, update__cs1, &lt_cs1);
    if (lt_exit1 == 1) {
        long old = lt_cs1.out.old;
        return old % 7; /* old is declared in the section */
    }
    return 0;
}

static void *worker(void *arg)
{
    long id = (long)arg, sum = 0;
    for (int i = 0; i < ITERS; i++)
        sum += update((int)((i + id) % 8), 1);
    return (void *)sum;
}

int main(void)
{
    long total = 0;
    run_threads(worker);
    for (int i = 0; i < 8; i++)
        total += values[i];
    printf("total %ld rejected>0 %d\n", total, rejected > 0);
    return 0;
}
