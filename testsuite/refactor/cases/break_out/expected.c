/* A section inside a loop that leaves the loop after an early unlock (break). */
#include "harness.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int budget = NTHREADS * ITERS / 2;
static long spent[NTHREADS];

/* Critical section of worker() on &lock (input.c:13-20), extracted by locktune-extract. */
union worker__cs1_ctx {
    struct {
        int mine;
    } in;
    struct {
        int mine;
    } out;
};

static void *worker__cs1(void *lt_arg)
{
    union worker__cs1_ctx *lt_ctx = lt_arg;
    int mine = lt_ctx->in.mine;

    if (budget == 0) {
        lt_ctx->out.mine = mine;
        return (void *)1;
    }
    budget--;
    mine++;
    lt_ctx->out.mine = mine;
    return NULL;
}

static void *worker(void *arg)
{
    long id = (long)arg;
    int mine = 0;
    for (;;) {
        union worker__cs1_ctx lt_cs1 = {.in = {.mine = mine}};
        intptr_t lt_exit1 = (intptr_t)lt_execute(&lock, worker__cs1, &lt_cs1);
        if (lt_exit1 == 1) {
            mine = lt_cs1.out.mine;
            break;
        }
        mine = lt_cs1.out.mine;
    }
    spent[id] = mine;
    return NULL;
}

int main(void)
{
    long total = 0;
    run_threads(worker);
    for (int i = 0; i < NTHREADS; i++)
        total += spent[i];
    printf("spent %ld, left %d\n", total, budget);
    return 0;
}
