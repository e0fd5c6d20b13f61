/* shortcs - one thread, many short critical sections (about as long as the work between
 * them): the case where the profiler samples the timing of uncontended sections.
 * Usage: shortcs [ITERATIONS] */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static volatile unsigned long state = 1;

static void work(int n)
{
    for (int i = 0; i < n; i++)
        state = state * 6364136223846793005ul + 1442695040888963407ul;
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 200000;
    for (long i = 0; i < n; i++) {
        pthread_mutex_lock(&m);
        work(100);
        pthread_mutex_unlock(&m);
        work(100);
    }
    printf("state %lu\n", state & 0xff);
    return 0;
}
