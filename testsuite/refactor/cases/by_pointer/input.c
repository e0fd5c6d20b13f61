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

static int step(int dx, int dy)
{
    struct point p = {dx, dy};
    int trail[4];
    int count = 0;
    int *alias = &count;
    memset(trail, 0, sizeof trail);
    pthread_mutex_lock(&lock);
    p.x += last.x;
    p.y += last.y;
    last = p;
    trail[moves % 4] = p.x;
    bump(alias);
    count += 10;
    moves++;
    pthread_mutex_unlock(&lock);
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
