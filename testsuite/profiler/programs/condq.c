/* condq - a bounded queue guarded by one mutex and two condition variables; PRODUCERS
 * threads put ITEMS items each, CONSUMERS threads take them.  Prints the count and the sum,
 * which do not depend on scheduling. */
#include <pthread.h>
#include <stdio.h>

#define PRODUCERS 3
#define CONSUMERS 3
#define ITEMS     4000
#define SLOTS     4

static pthread_mutex_t q_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t not_full = PTHREAD_COND_INITIALIZER;
static pthread_cond_t not_empty = PTHREAD_COND_INITIALIZER;
static long queue[SLOTS];
static int head, count, producers_left = PRODUCERS;
static long taken, sum;

static void *produce(void *arg)
{
    long base = (long)arg * ITEMS;
    for (long i = 0; i < ITEMS; i++) {
        pthread_mutex_lock(&q_lock);
        while (count == SLOTS)
            pthread_cond_wait(&not_full, &q_lock);
        queue[(head + count++) % SLOTS] = base + i;
        pthread_cond_signal(&not_empty);
        pthread_mutex_unlock(&q_lock);
    }
    pthread_mutex_lock(&q_lock);
    producers_left--;
    pthread_cond_broadcast(&not_empty);
    pthread_mutex_unlock(&q_lock);
    return NULL;
}

static void *consume(void *arg)
{
    (void)arg;
    for (;;) {
        pthread_mutex_lock(&q_lock);
        while (count == 0 && producers_left > 0)
            pthread_cond_wait(&not_empty, &q_lock);
        if (count == 0) {
            pthread_mutex_unlock(&q_lock);
            return NULL;
        }
        long v = queue[head];
        head = (head + 1) % SLOTS;
        count--;
        taken++;
        sum += v;
        pthread_cond_signal(&not_full);
        pthread_mutex_unlock(&q_lock);
    }
}

int main(void)
{
    pthread_t p[PRODUCERS], c[CONSUMERS];
    for (long i = 0; i < CONSUMERS; i++)
        pthread_create(&c[i], NULL, consume, NULL);
    for (long i = 0; i < PRODUCERS; i++)
        pthread_create(&p[i], NULL, produce, (void *)i);
    for (int i = 0; i < PRODUCERS; i++)
        pthread_join(p[i], NULL);
    for (int i = 0; i < CONSUMERS; i++)
        pthread_join(c[i], NULL);
    printf("taken %ld sum %ld\n", taken, sum);
    return taken == (long)PRODUCERS * ITEMS ? 0 : 1;
}
