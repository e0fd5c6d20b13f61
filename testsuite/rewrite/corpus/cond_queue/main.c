/* Producer/consumer on a bounded buffer: condition waits inside the sections. */
#include <pthread.h>
#include <stdio.h>

#define PRODUCERS 2
#define CONSUMERS 2
#define ITEMS 3000
#define SIZE 16

static pthread_mutex_t buf_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t not_full = PTHREAD_COND_INITIALIZER;
static pthread_cond_t not_empty = PTHREAD_COND_INITIALIZER;
static int buf[SIZE];
static int head, count;
static long consumed_sum, consumed_n;

static void put(int v)
{
    pthread_mutex_lock(&buf_lock);
    while (count == SIZE)
        pthread_cond_wait(&not_full, &buf_lock);
    buf[(head + count) % SIZE] = v;
    count++;
    pthread_cond_signal(&not_empty);
    pthread_mutex_unlock(&buf_lock);
}

static int get(void)
{
    int v;
    pthread_mutex_lock(&buf_lock);
    while (count == 0)
        pthread_cond_wait(&not_empty, &buf_lock);
    v = buf[head];
    head = (head + 1) % SIZE;
    count--;
    consumed_sum += v;
    consumed_n++;
    pthread_cond_signal(&not_full);
    pthread_mutex_unlock(&buf_lock);
    return v;
}

static void *producer(void *arg)
{
    long id = (long)arg;
    for (int i = 0; i < ITEMS; i++)
        put(i % 100 + (int)id);
    return NULL;
}

static void *consumer(void *arg)
{
    (void)arg;
    for (int i = 0; i < ITEMS; i++)
        (void)get();
    return NULL;
}

int main(void)
{
    pthread_t p[PRODUCERS], c[CONSUMERS];
    for (long i = 0; i < PRODUCERS; i++)
        pthread_create(&p[i], NULL, producer, (void *)i);
    for (long i = 0; i < CONSUMERS; i++)
        pthread_create(&c[i], NULL, consumer, (void *)i);
    for (int i = 0; i < PRODUCERS; i++)
        pthread_join(p[i], NULL);
    for (int i = 0; i < CONSUMERS; i++)
        pthread_join(c[i], NULL);
    printf("consumed %ld sum %ld left %d\n", consumed_n, consumed_sum, count);
    return 0;
}
// CHECK: static lt_cond_t not_full = LT_COND_INITIALIZER;
// CHECK-NOT: pthread_cond_
