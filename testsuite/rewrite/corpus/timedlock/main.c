/* pthread_mutex_timedlock with a generous deadline, and a short one that must time out
 * while another thread holds the lock. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <time.h>

#define THREADS 4
#define ITERS 1500

static pthread_mutex_t res_lock = PTHREAD_MUTEX_INITIALIZER;
static long uses;

static struct timespec in_ms(long ms)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    t.tv_sec += ms / 1000;
    t.tv_nsec += (ms % 1000) * 1000000L;
    if (t.tv_nsec >= 1000000000L) {
        t.tv_sec++;
        t.tv_nsec -= 1000000000L;
    }
    return t;
}

static void *worker(void *arg)
{
    (void)arg;
    for (int i = 0; i < ITERS; i++) {
        struct timespec deadline = in_ms(10000);
        if (pthread_mutex_timedlock(&res_lock, &deadline) == 0) {
            uses++;
            pthread_mutex_unlock(&res_lock);
        }
    }
    return NULL;
}

static void *holder(void *arg)
{
    pthread_barrier_t *ready = arg;
    pthread_mutex_lock(&res_lock);
    pthread_barrier_wait(ready);
    struct timespec nap = {0, 50 * 1000 * 1000};
    nanosleep(&nap, NULL);
    pthread_mutex_unlock(&res_lock);
    return NULL;
}

int main(void)
{
    pthread_t t[THREADS], h;
    pthread_barrier_t ready;
    pthread_barrier_init(&ready, NULL, 2);
    pthread_create(&h, NULL, holder, &ready);
    pthread_barrier_wait(&ready);
    struct timespec soon = in_ms(5);
    int r = pthread_mutex_timedlock(&res_lock, &soon);
    printf("short wait %s\n", r == ETIMEDOUT ? "timed out" : "did not time out");
    pthread_join(h, NULL);
    for (long i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    printf("uses %ld\n", uses);
    return 0;
}
// CHECK: lt_mutex_timedlock(&res_lock, &deadline)
