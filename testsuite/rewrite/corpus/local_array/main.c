/* A local array filled inside the section and read after it (passed by pointer). */
#include <pthread.h>
#include <stdio.h>

#define THREADS 4
#define ITERS 2000
#define WINDOW 8

static pthread_mutex_t ring_lock = PTHREAD_MUTEX_INITIALIZER;
static int ring[64];
static int ring_pos;

static long snapshot_sum(int seed)
{
    int window[WINDOW];
    long sum = 0;
    pthread_mutex_lock(&ring_lock);
    ring[ring_pos] = seed % 10;
    ring_pos = (ring_pos + 1) % 64;
    for (int i = 0; i < WINDOW; i++)
        window[i] = 1;
    pthread_mutex_unlock(&ring_lock);
    for (int i = 0; i < WINDOW; i++)
        sum += window[i];
    return sum;
}

static long sums[THREADS];

static void *worker(void *arg)
{
    long id = (long)arg;
    for (int i = 0; i < ITERS; i++)
        sums[id] += snapshot_sum(i + (int)id);
    return NULL;
}

int main(void)
{
    pthread_t t[THREADS];
    for (long i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    long total = 0, ring_total = 0;
    for (int i = 0; i < THREADS; i++)
        total += sums[i];
    for (int i = 0; i < 64; i++)
        ring_total += ring[i] >= 0;
    printf("total %ld ring %ld pos %d\n", total, ring_total, ring_pos);
    return 0;
}
// CHECK: static void *snapshot_sum__cs1(void *lt_arg)
// CHECK: (*window)[i] = 1;
// CHECK: static long snapshot_sum(int seed)
// CHECK: .window = &window};
// CHECK-NEXT: lt_execute(&ring_lock, snapshot_sum__cs1, &lt_cs1);
