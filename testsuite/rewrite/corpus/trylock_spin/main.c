/* Spinning on trylock with sched_yield, then a normal section. */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>

#define THREADS 4
#define ITERS 1500

static pthread_mutex_t spin_lock = PTHREAD_MUTEX_INITIALIZER;
static long value;
static long busy_seen;

static void *worker(void *arg)
{
    (void)arg;
    for (int i = 0; i < ITERS; i++) {
        int busy = 0;
        while (pthread_mutex_trylock(&spin_lock) != 0) {
            busy = 1;
            sched_yield();
        }
        value += 2;
        busy_seen += busy;
        pthread_mutex_unlock(&spin_lock);
    }
    return NULL;
}

int main(void)
{
    pthread_t t[THREADS];
    for (long i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    printf("value %ld\n", value);
    return 0;
}
