/* pairs - the cost of an uncontended pthread_mutex_lock/unlock pair, in nanoseconds: one
 * thread, one lock, ITERATIONS pairs per round, the best of ROUNDS rounds (the best is the
 * least disturbed by the rest of the machine).  The profiler benchmark runs it with and
 * without liblocktune-prof.so (scripts/bench_profiler.py).
 *
 * Usage: pairs [ITERATIONS [ROUNDS]]        prints: ns_per_pair N */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static volatile long guarded;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 5000000;
    int rounds = argc > 2 ? atoi(argv[2]) : 5;
    if (n < 1 || rounds < 1) {
        fprintf(stderr, "usage: pairs [ITERATIONS [ROUNDS]]\n");
        return 2;
    }
    double best = 1e30;
    for (int r = 0; r < rounds; r++) {
        double a = now();
        for (long i = 0; i < n; i++) {
            pthread_mutex_lock(&m);
            guarded++;
            pthread_mutex_unlock(&m);
        }
        double ns = (now() - a) / (double)n * 1e9;
        if (ns < best)
            best = ns;
    }
    printf("ns_per_pair %.3f\n", best);
    return guarded == n * rounds ? 0 : 1;
}
