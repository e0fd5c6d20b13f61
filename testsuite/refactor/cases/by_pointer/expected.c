/* Arrays, structs and locals whose address is taken are passed by pointer: the section works
 * on the object itself. */
#include "harness.h"

#include <string.h>

struct point {
    int x, y;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct point last;
static long moves;

static void bump(int *p)
{
    (*p)++;
}

/* Critical section of step() on &lock (input.c:27-35), extracted by locktune-extract. */
struct step__cs1_ctx {
    struct point *p;
    int (*trail)[4];
    int *alias;
    int *count;
};

static void *step__cs1(void *lt_arg)
{
    struct step__cs1_ctx *lt_ctx = lt_arg;
    struct point *p = lt_ctx->p;
    int (*trail)[4] = lt_ctx->trail;
    int *alias = lt_ctx->alias;
    int *count = lt_ctx->count;

    p->x += last.x;
    p->y += last.y;
    last = *p;
    (*trail)[moves % 4] = p->x;
    bump(alias);
    *count += 10;
    moves++;
    return NULL;
}

static int step(int dx, int dy)
{
    struct point p = {dx, dy};
    int trail[4];
    int count = 0;
    int *alias = &count;
    memset(trail, 0, sizeof trail);
    struct step__cs1_ctx lt_cs1 = {.p = &p, .trail = &trail, .alias = alias, .count = &count};
    lt_execute(&lock, step__cs1, &lt_cs1);
    return count + trail[0] * 0 + (int)sizeof(trail) / (int)sizeof(trail[0]);
}

static void *worker(void *arg)
{
    long id = (long)arg, sum = 0;
    for (int i = 0; i < ITERS; i++)
        sum += step(id % 2 ? 1 : -1, 1);
    return (void *)sum;
}

int main(void)
{
    run_threads(worker);
    printf("moves %ld at %d,%d step %d\n", moves, last.x, last.y, step(0, 0));
    return 0;
}
