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

/* Critical section of consume() on &lock (input.c:28-35), extracted by locktune-extract. */
struct consume__cs1_ctx {
    int v;
};

static void *consume__cs1(void *lt_arg)
{
    struct consume__cs1_ctx *lt_ctx = lt_arg;
    int v;

    while (len == 0)
        pthread_cond_wait(&nonempty, &lock);
    v = queue[head];
    head = (head + 1) % 16;
    len--;
    consumed_sum += v;
    lt_ctx->v = v;
    return NULL;
}

static int consume(void)
{
    int v;
    struct consume__cs1_ctx lt_cs1;
    lt_execute_ex(&lock, consume__cs1, &lt_cs1, LT_EXEC_MAY_WAIT);
    v = lt_cs1.v;
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
