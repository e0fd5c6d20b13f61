/* A label inside the section is reached by a goto from before the lock: kept. */
#include "harness.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long fast, slow;

static void visit(int quick)
{
    if (quick)
        goto count; /* would unlock a lock it does not hold: never called with quick set */
    pthread_mutex_lock(&lock);
    slow++;
count:
    fast++;
    pthread_mutex_unlock(&lock);
}

static void *worker(void *arg)
{
    (void)arg;
    for (int i = 0; i < ITERS; i++)
        visit(0);
    return NULL;
}

int main(void)
{
    run_threads(worker);
    printf("slow %ld fast %ld\n", slow, fast);
    return 0;
}
