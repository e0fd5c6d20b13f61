/* `continue` out of a section after unlocking: odd items are skipped under the lock. */
#include <pthread.h>
#include <stdio.h>

#define THREADS 4
#define ITERS 3000

static pthread_mutex_t acc_lock = PTHREAD_MUTEX_INITIALIZER;
static long evens, odds_seen, checksum;

static void *worker(void *arg)
{
    long id = (long)arg;
    for (int i = 0; i < ITERS; i++) {
        int v = (int)(i * 31 + id * 7);
        pthread_mutex_lock(&acc_lock);
        if (v & 1) {
            odds_seen++;
            pthread_mutex_unlock(&acc_lock);
            continue;
        }
        evens++;
        checksum = (checksum + v) % 1000003;
        pthread_mutex_unlock(&acc_lock);
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
    printf("evens %ld odds %ld checksum %ld\n", evens, odds_seen, checksum);
    return 0;
}
