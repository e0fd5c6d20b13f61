/* hotcold - a hot lock whose critical sections are a known share of the thread time, and a
 * cold one.  The program measures that share itself, over the same intervals the profiler
 * measures (lock call entry to unlock return, against thread lifetimes), and prints it:
 *
 *   hot_percent H cold_percent C
 *
 * Usage: hotcold [THREADS [MILLISECONDS [HOLD_US [GAP_US]]]]   (defaults 3 300 20 20)
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static pthread_mutex_t hot = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t cold = PTHREAD_MUTEX_INITIALIZER;
static long run_ns, hold_ns, gap_ns;
static volatile long shared_counter;

struct share {
    long hot_ns, cold_ns, life_ns;
};

static long now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

static void spin(long ns)
{
    long end = now() + ns;
    while (now() < end)
        shared_counter++;
}

static void *work(void *arg)
{
    struct share *s = arg;
    long start = now(), end = start + run_ns;
    for (int i = 0; now() < end; i++) {
        long a = now();
        pthread_mutex_lock(&hot);
        spin(hold_ns);
        pthread_mutex_unlock(&hot);
        long b = now();
        s->hot_ns += b - a;
        if (i % 50 == 0) {
            a = now();
            pthread_mutex_lock(&cold);
            shared_counter++;
            pthread_mutex_unlock(&cold);
            s->cold_ns += now() - a;
        }
        spin(gap_ns);
    }
    s->life_ns = now() - start;
    return NULL;
}

int main(int argc, char **argv)
{
    long start = now();
    int threads = argc > 1 ? atoi(argv[1]) : 3;
    run_ns = (argc > 2 ? atol(argv[2]) : 300) * 1000000L;
    hold_ns = (argc > 3 ? atol(argv[3]) : 20) * 1000L;
    gap_ns = (argc > 4 ? atol(argv[4]) : 20) * 1000L;
    pthread_t t[64];
    struct share s[64] = {{0}};
    if (threads < 1 || threads > 64)
        return 2;
    for (int i = 0; i < threads; i++)
        pthread_create(&t[i], NULL, work, &s[i]);
    long hot_ns = 0, cold_ns = 0, life_ns = 0;
    for (int i = 0; i < threads; i++) {
        pthread_join(t[i], NULL);
        hot_ns += s[i].hot_ns;
        cold_ns += s[i].cold_ns;
        life_ns += s[i].life_ns;
    }
    life_ns += now() - start; /* the main thread's own life */
    printf("hot_percent %.3f cold_percent %.3f\n", 100.0 * hot_ns / life_ns,
           100.0 * cold_ns / life_ns);
    return 0;
}
