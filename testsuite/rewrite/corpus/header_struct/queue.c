#include "queue.h"

void queue_init(struct job_queue *q)
{
    q->n = 0;
    q->done = 0;
    pthread_mutex_init(&q->lock, NULL);
    pthread_cond_init(&q->ready, NULL);
}

void queue_push(struct job_queue *q, long job)
{
    pthread_mutex_lock(&q->lock);
    while (q->n == 32)
        pthread_cond_wait(&q->ready, &q->lock);
    q->jobs[q->n++] = job;
    pthread_cond_broadcast(&q->ready);
    pthread_mutex_unlock(&q->lock);
}

long queue_pop(struct job_queue *q)
{
    long job;
    pthread_mutex_lock(&q->lock);
    while (q->n == 0)
        pthread_cond_wait(&q->ready, &q->lock);
    job = q->jobs[--q->n];
    q->done++;
    pthread_cond_broadcast(&q->ready);
    pthread_mutex_unlock(&q->lock);
    return job;
}
// CHECK-FILE: queue.c
// CHECK: #include "queue.h"
// CHECK-NEXT: #include "locktune.h"
// CHECK-NEXT: #include "locktune_config.h"
// CHECK: lt_mutex_init(&q->lock, NULL, LT_SITE_QUEUE_C_7);
// CHECK: lt_execute_ex(&q->lock, queue_push__cs1, &lt_cs1, LT_EXEC_MAY_WAIT);
// CHECK: lt_execute_ex(&q->lock, queue_pop__cs1, &lt_cs1, LT_EXEC_MAY_WAIT);
