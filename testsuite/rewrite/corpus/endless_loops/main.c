/* Background threads that hold their lock for their whole loop and let it go for an instant
 * each turn (memcached's storage and LRU threads, libuv's worker): the lock is released and
 * taken again at the end of each turn, or at its top.  The rewriter rotates such an endless
 * loop so that each turn's section closes a block, the calls in the order they ran. */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>

#define PRODUCERS 3
#define ITEMS 6000 /* per producer */

static pthread_mutex_t queue_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t store_lock = PTHREAD_MUTEX_INITIALIZER;
static long queued, moved, moved_sum; /* under queue_lock */
static long stored, stored_sum, turns; /* under store_lock */

struct box {
    pthread_mutex_t lock;
    long n;
};
static struct box boxes[2] = {{PTHREAD_MUTEX_INITIALIZER, 0}, {PTHREAD_MUTEX_INITIALIZER, 0}};

/* The window at the end of each turn: moves what the producers queued. */
static void *mover(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&queue_lock);
    for (;;) {
        while (queued > 0) {
            queued--;
            moved++;
            moved_sum += moved;
        }
        pthread_mutex_unlock(&queue_lock);
        sched_yield();
        pthread_mutex_lock(&queue_lock);
    }
    return NULL;
}

/* The window at the top of each turn: stores what the mover moved. */
static void *storer(void *arg)
{
    (void)arg;
    long seen = 0, now;
    pthread_mutex_lock(&store_lock);
    while (1) {
        pthread_mutex_unlock(&store_lock);
        sched_yield();
        pthread_mutex_lock(&queue_lock);
        now = moved;
        pthread_mutex_unlock(&queue_lock);
        pthread_mutex_lock(&store_lock);
        while (seen < now) {
            seen++;
            stored++;
            stored_sum += seen;
        }
        turns++;
    }
    return NULL;
}

/* The window at the top, and a turn that declares a `b` of its own: the unlock may not move to
 * the end of the turn, where its `b` would name the other box.  Not rotated. */
static void *counter(void *arg)
{
    struct box *b = arg;
    pthread_mutex_lock(&b->lock);
    for (;;) {
        pthread_mutex_unlock(&b->lock);
        sched_yield();
        pthread_mutex_lock(&b->lock);
        b->n++;
        struct box *b = &boxes[1];
        (void)b;
    }
    return NULL;
}

static void *producer(void *arg)
{
    (void)arg;
    for (int i = 0; i < ITEMS; i++) {
        pthread_mutex_lock(&queue_lock);
        queued++;
        pthread_mutex_unlock(&queue_lock);
    }
    return NULL;
}

int main(void)
{
    pthread_t m, s, c, p[PRODUCERS];
    pthread_create(&m, NULL, mover, NULL);
    pthread_create(&s, NULL, storer, NULL);
    pthread_create(&c, NULL, counter, &boxes[0]);
    for (int i = 0; i < PRODUCERS; i++)
        pthread_create(&p[i], NULL, producer, NULL);
    for (int i = 0; i < PRODUCERS; i++)
        pthread_join(p[i], NULL);
    long done = 0, sum = 0;
    while (done < (long)PRODUCERS * ITEMS) {
        sched_yield();
        pthread_mutex_lock(&store_lock);
        done = stored;
        sum = stored_sum;
        pthread_mutex_unlock(&store_lock);
    }
    long counted = 0;
    while (counted < 1000) {
        sched_yield();
        pthread_mutex_lock(&boxes[0].lock);
        counted = boxes[0].n;
        pthread_mutex_unlock(&boxes[0].lock);
    }
    pthread_mutex_lock(&queue_lock);
    printf("moved %ld (sum %ld), stored %ld (sum %ld), counted\n", moved, moved_sum, done, sum);
    pthread_mutex_unlock(&queue_lock);
    return 0; /* the mover and the storer loop on: the process ends with main */
}
// CHECK: static void *mover(void *arg)
// CHECK: for (;;) { lt_execute(&queue_lock, mover__cs1, NULL);
// CHECK-NEXT: sched_yield();
// CHECK: static void *storer(void *arg)
// CHECK: lt_execute(&store_lock, storer__cs1, NULL);
// CHECK-NEXT: while (1) {
// CHECK: sched_yield();
// CHECK: lt_execute(&store_lock, storer__cs3, &lt_cs3);
// CHECK-NEXT: seen = lt_cs3.out.seen; }
// CHECK-NOT: pthread_mutex_lock(&store_lock)
// CHECK: static void *counter(void *arg)
// CHECK: lt_mutex_lock(&b->lock);
// CHECK-NEXT: for (;;) {
// CHECK-NEXT: lt_mutex_unlock(&b->lock);
// KEPT: does not close a block
// EXTRACTED: 8
// ROTATED: 3
