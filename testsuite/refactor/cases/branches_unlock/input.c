/* Several unlocks on several branches, each the last thing its branch does. */
#include "harness.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long small, large, total;

static int classify(int v)
{
    int kind;
    pthread_mutex_lock(&lock);
    total += v;
    if (v < 50) {
        small++;
        kind = 0;
        pthread_mutex_unlock(&lock);
    } else {
        large++;
        kind = 1;
        pthread_mutex_unlock(&lock);
    }
    return kind;
}

static void *worker(void *arg)
{
    long id = (long)arg, mine = 0;
    for (int i = 0; i < ITERS; i++)
        mine += classify((int)((i * 7 + id) % 100));
    return (void *)mine;
}

int main(void)
{
    run_threads(worker);
    printf("small %ld large %ld total %ld\n", small, large, total);
    return 0;
}
