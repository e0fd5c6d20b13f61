/* A lock inside a heap object, reached through a pointer (q->lock). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define THREADS 4
#define ITERS 3000

struct queue {
    int head, tail;
    int items[256];
    pthread_mutex_t lock;
    long enqueued, dequeued, sum;
};

static struct queue *queue_new(void)
{
    struct queue *q = calloc(1, sizeof *q);
    pthread_mutex_init(&q->lock, NULL);
    return q;
}

static int enqueue(struct queue *q, int v)
{
    int ok = 0;
    pthread_mutex_lock(&q->lock);
    if ((q->tail + 1) % 256 != q->head) {
        q->items[q->tail] = v;
        q->tail = (q->tail + 1) % 256;
        q->enqueued++;
        ok = 1;
    }
    pthread_mutex_unlock(&q->lock);
    return ok;
}

static int dequeue(struct queue *q, int *v)
{
    int ok = 0;
    pthread_mutex_lock(&q->lock);
    if (q->head != q->tail) {
        *v = q->items[q->head];
        q->head = (q->head + 1) % 256;
        q->dequeued++;
        q->sum += *v;
        ok = 1;
    }
    pthread_mutex_unlock(&q->lock);
    return ok;
}

static struct queue *q;
static long in_sum[THREADS], out_sum[THREADS];

static void *worker(void *arg)
{
    long id = (long)arg;
    for (int i = 0; i < ITERS; i++) {
        int v;
        if (id % 2 == 0) {
            if (enqueue(q, i % 50))
                in_sum[id] += i % 50;
        } else if (dequeue(q, &v)) {
            out_sum[id] += v;
        }
    }
    return NULL;
}

int main(void)
{
    q = queue_new();
    pthread_t t[THREADS];
    for (long i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    long in = 0, out = 0, left = 0;
    for (int i = 0; i < THREADS; i++) {
        in += in_sum[i];
        out += out_sum[i];
    }
    int v;
    while (dequeue(q, &v))
        left += v;
    printf("balanced %s\n", in == out + left && q->enqueued == q->dequeued ? "yes" : "no");
    pthread_mutex_destroy(&q->lock);
    free(q);
    return 0;
}
// CHECK: lt_mutex_t lock;
// CHECK: lt_mutex_init(&q->lock, NULL, LT_SITE_MAIN_C_19);
