/* A program of several files: the lock's struct is in a header, its functions in
 * queue.c, the threads here. */
#include <pthread.h>
#include <stdio.h>

#include "queue.h"

#define PRODUCERS 2
#define CONSUMERS 2
#define ITEMS 2000

static struct job_queue queue;
static long popped[CONSUMERS];

static void *producer(void *arg)
{
    long id = (long)arg;
    for (int i = 0; i < ITEMS; i++)
        queue_push(&queue, i % 10 + id);
    return NULL;
}

static void *consumer(void *arg)
{
    long id = (long)arg;
    for (int i = 0; i < ITEMS; i++)
        popped[id] += queue_pop(&queue);
    return NULL;
}

int main(void)
{
    queue_init(&queue);
    pthread_t p[PRODUCERS], c[CONSUMERS];
    for (long i = 0; i < PRODUCERS; i++)
        pthread_create(&p[i], NULL, producer, (void *)i);
    for (long i = 0; i < CONSUMERS; i++)
        pthread_create(&c[i], NULL, consumer, (void *)i);
    for (int i = 0; i < PRODUCERS; i++)
        pthread_join(p[i], NULL);
    for (int i = 0; i < CONSUMERS; i++)
        pthread_join(c[i], NULL);
    printf("done %ld sum %ld\n", queue.done, popped[0] + popped[1]);
    return 0;
}
