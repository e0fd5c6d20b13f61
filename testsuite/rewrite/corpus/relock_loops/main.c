/* Loops that let their lock go for an instant at the top of each turn.  One with a test, the
 * lock released right after it (memcached's LRU maintainer): rotated (LoopRotation.h), its
 * test and the unlock that follows it now end each turn, and both sections are extracted.  An
 * endless one that a break leaves with the lock held, released after the loop: a rotation
 * would need that unlock at the end of each turn, which the break skips; its sections stay
 * lock and unlock calls. */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static long turns_a, turns_b, total;

static void *until(void *arg)
{
    long n = (long)arg;
    pthread_mutex_lock(&m);
    while (turns_a < n) {
        pthread_mutex_unlock(&m);
        sched_yield();
        pthread_mutex_lock(&m);
        turns_a++;
        total += turns_a;
    }
    pthread_mutex_unlock(&m);
    return NULL;
}

static void *leaves(void *arg)
{
    long n = (long)arg;
    pthread_mutex_lock(&m);
    for (;;) {
        turns_b++;
        total += 2 * turns_b;
        if (turns_b == n)
            break;
        pthread_mutex_unlock(&m);
        sched_yield();
        pthread_mutex_lock(&m);
    }
    pthread_mutex_unlock(&m);
    return NULL;
}

int main(void)
{
    pthread_t a, b;
    pthread_create(&a, NULL, until, (void *)3000L);
    pthread_create(&b, NULL, leaves, (void *)2000L);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    printf("turns %ld %ld total %ld\n", turns_a, turns_b, total);
    return 0;
}
// CHECK: static void *until(void *arg)
// CHECK: int lt_again18; union until__cs1_ctx lt_cs1 = {.in = {.n = n}};
// CHECK: lt_again18 = lt_cs1.out.lt_again18; while (lt_again18) {
// CHECK: lt_again18 = lt_cs2.out.lt_again18; }
// CHECK: static void *leaves(void *arg)
// CHECK: lt_mutex_unlock(&m);
// KEPT: does not close a block
// EXTRACTED: 2
// ROTATED: 2
