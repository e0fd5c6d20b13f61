/* Producer/consumer: the consumer's section waits on a condition variable. */
#include "harness.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t nonempty = PTHREAD_COND_INITIALIZER;
static int queue[16];
static int head, tail_, len;
static long consumed_sum;

static void produce(int v)
{
    pthread_mutex_lock(&lock);
    while (len == 16) {
        pthread_mutex_unlock(&lock);
        sched_yield();
        pthread_mutex_lock(&lock);
    }
    queue[tail_] = v;
    tail_ = (tail_ + 1) % 16;
    len++;
    pthread_cond_signal(&nonempty);
    pthread_mutex_unlock(&lock);
}

static int consume(void)
{
    int v;
    pthread_mutex_lock(&lock);
    while (len == 0)
        pthread_cond_wait(&nonempty, &lock);
    v = queue[head];
    head = (head + 1) % 16;
    len--;
    consumed_sum += v;
    pthread_mutex_unlock(&lock);
    return v;
}

static void *worker(void *arg)
{
    long id = (long)arg;
    for (int i = 0; i < ITERS; i++) {
        if (id % 2 == 0)
            produce(i);
        else
            consume();
    }
    return NULL;
}

int main(void)
{
    run_threads(worker);
    printf("consumed %ld left %d\n", consumed_sum, len);
    return 0;
}
