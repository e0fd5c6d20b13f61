/* manythreads - THREADS short-lived threads, at most BATCH alive at once, each taking one
 * shared lock LOCKS times. */
#include <pthread.h>
#include <stdio.h>

#define THREADS 400
#define BATCH   50
#define LOCKS   10

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static long total;

static void *work(void *arg)
{
    (void)arg;
    for (int i = 0; i < LOCKS; i++) {
        pthread_mutex_lock(&m);
        total++;
        pthread_mutex_unlock(&m);
    }
    return NULL;
}

int main(void)
{
    pthread_t t[BATCH];
    for (int done = 0; done < THREADS; done += BATCH) {
        for (int i = 0; i < BATCH; i++)
            if (pthread_create(&t[i], NULL, work, NULL) != 0)
                return 1;
        for (int i = 0; i < BATCH; i++)
            pthread_join(t[i], NULL);
    }
    printf("total %ld\n", total);
    return total == (long)THREADS * LOCKS ? 0 : 1;
}
