/* A function that calls setjmp keeps its sections. */
#include "harness.h"

#include <setjmp.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long tries, fails;

static void risky(jmp_buf *env, int v)
{
    if (v % 5 == 0)
        longjmp(*env, 1);
}

static void attempt(int v)
{
    jmp_buf env;
    if (setjmp(env)) {
        pthread_mutex_lock(&lock);
        fails++;
        pthread_mutex_unlock(&lock);
        return;
    }
    risky(&env, v);
    pthread_mutex_lock(&lock);
    tries++;
    pthread_mutex_unlock(&lock);
}

static void *worker(void *arg)
{
    (void)arg;
    for (int i = 0; i < ITERS; i++)
        attempt(i);
    return NULL;
}

int main(void)
{
    run_threads(worker);
    printf("tries %ld fails %ld\n", tries, fails);
    return 0;
}
