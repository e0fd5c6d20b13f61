/* A barrier-like phase counter: timed waits with a deadline, broadcast to wake all. */
#include <pthread.h>
#include <stdio.h>
#include <time.h>

#define THREADS 4
#define PHASES 300

static pthread_mutex_t phase_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t phase_cond = PTHREAD_COND_INITIALIZER;
static int arrived, phase;
static long timeouts_seen;

static void arrive(void)
{
    pthread_mutex_lock(&phase_lock);
    int my_phase = phase;
    if (++arrived == THREADS) {
        arrived = 0;
        phase++;
        pthread_cond_broadcast(&phase_cond);
    } else {
        while (phase == my_phase) {
            struct timespec deadline;
            clock_gettime(CLOCK_REALTIME, &deadline);
            deadline.tv_nsec += 5 * 1000 * 1000;
            if (deadline.tv_nsec >= 1000000000) {
                deadline.tv_sec++;
                deadline.tv_nsec -= 1000000000;
            }
            if (pthread_cond_timedwait(&phase_cond, &phase_lock, &deadline) != 0)
                timeouts_seen++; /* a timeout is fine: the loop checks again */
        }
    }
    pthread_mutex_unlock(&phase_lock);
}

static void *worker(void *arg)
{
    (void)arg;
    for (int i = 0; i < PHASES; i++)
        arrive();
    return NULL;
}

int main(void)
{
    pthread_t t[THREADS];
    for (long i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    printf("phases %d arrived %d\n", phase, arrived);
    return 0;
}
