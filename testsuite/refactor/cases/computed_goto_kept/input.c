/* A function that uses computed goto (a GNU extension) keeps its sections. */
#include "harness.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long ops[3];

static void run(int op)
{
    static void *table[] = {&&add, &&sub, &&nop};
    goto *table[op];
add:
    pthread_mutex_lock(&lock);
    ops[0]++;
    pthread_mutex_unlock(&lock);
    return;
sub:
    pthread_mutex_lock(&lock);
    ops[1]++;
    pthread_mutex_unlock(&lock);
    return;
nop:
    ops[2] += 0;
}

static void *worker(void *arg)
{
    (void)arg;
    for (int i = 0; i < ITERS; i++)
        run(i % 3);
    return NULL;
}

int main(void)
{
    run_threads(worker);
    printf("add %ld sub %ld\n", ops[0], ops[1]);
    return 0;
}
