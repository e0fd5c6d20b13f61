/* Early exit with a value: the queue is empty, unlock and return -1. */
#include "harness.h"

struct queue {
    pthread_mutex_t lock;
    int items[64];
    int n;
};

static struct queue q = {PTHREAD_MUTEX_INITIALIZER, {0}, 0};
static long taken, empty;

static int put(struct queue *s, int v)
{
    int full;
    pthread_mutex_lock(&s->lock);
    full = s->n == 64;
    if (full) {
        pthread_mutex_unlock(&s->lock);
        return -1;
    }
    s->items[s->n++] = v;
    pthread_mutex_unlock(&s->lock);
    return 0;
}

static int take(struct queue *s)
{
    int r;
    pthread_mutex_lock(&s->lock);
    if (s->n == 0) {
        empty++;
        pthread_mutex_unlock(&s->lock);
        return -1;
    }
    r = s->items[--s->n];
    taken++;
    pthread_mutex_unlock(&s->lock);
    return r;
}

static void *worker(void *arg)
{
    long id = (long)arg;
    for (int i = 0; i < ITERS; i++) {
        if (id % 2 == 0)
            put(&q, i);
        else
            take(&q);
    }
    return NULL;
}

int main(void)
{
    run_threads(worker);
    /* Every put either failed, was taken, or is still queued. */
    while (take(&q) >= 0)
        ;
    printf("taken+left consistent: %d\n", taken > 0 && empty > 0);
    printf("queue empty at the end: %d\n", q.n == 0);
    return 0;
}
