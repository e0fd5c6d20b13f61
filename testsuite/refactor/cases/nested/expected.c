/* Nested sections on two locks (always taken in the same order), both extracted; the
 * inner one sees the outer one's variables, and a variable the outer section holds by
 * pointer. */
#include "harness.h"

static pthread_mutex_t outer = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t inner = PTHREAD_MUTEX_INITIALIZER;
static long transfers, a_total, b_total;

/* Critical section of move() on &inner (input.c:17-22), extracted by locktune-extract. */
union move__cs2_ctx {
    struct {
        long amount;
        long (*hist)[4];
    } in;
    struct {
        long moved;
    } out;
};

static void *move__cs2(void *lt_arg)
{
    union move__cs2_ctx *lt_ctx = lt_arg;
    long amount = lt_ctx->in.amount;
    long moved;
    long (*hist)[4] = lt_ctx->in.hist;

    b_total += amount;
    moved = amount;
    (*hist)[0] += moved;
    transfers++;
    lt_ctx->out.moved = moved;
    return NULL;
}

/* Critical section of move() on &outer (input.c:14-24), extracted by locktune-extract. */
union move__cs1_ctx {
    struct {
        long amount;
        long (*hist)[4];
    } in;
    struct {
        long moved;
    } out;
};

static void *move__cs1(void *lt_arg)
{
    union move__cs1_ctx *lt_ctx = lt_arg;
    long amount = lt_ctx->in.amount;
    long (*hist)[4] = lt_ctx->in.hist;
    long moved;

    a_total -= amount;
    (*hist)[amount % 4]++;
    union move__cs2_ctx lt_cs2 = {.in = {.amount = amount, .hist = hist}};
    lt_execute(&inner, move__cs2, &lt_cs2);
    moved = lt_cs2.out.moved;
    moved += (*hist)[0] - amount;
    lt_ctx->out.moved = moved;
    return NULL;
}

static long move(long amount)
{
    long hist[4] = {0, 0, 0, 0};
    long moved = 0;
    union move__cs1_ctx lt_cs1 = {.in = {.amount = amount, .hist = &hist}};
    lt_execute(&outer, move__cs1, &lt_cs1);
    moved = lt_cs1.out.moved;
    return moved;
}

static void *worker(void *arg)
{
    long id = (long)arg, sum = 0;
    for (int i = 0; i < ITERS; i++)
        sum += move(id + i % 3);
    return (void *)sum;
}

int main(void)
{
    run_threads(worker);
    printf("transfers %ld balance %ld\n", transfers, a_total + b_total);
    return 0;
}
