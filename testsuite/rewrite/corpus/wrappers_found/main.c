/* Lock wrapper functions nobody names: static inline ones in a header (lockutil.h, as
 * xz-utils' mythread_mutex_lock) and functions of another file around locks static to it
 * (slots.c, as memcached's item_lock).  Both are found by the whole-program pass and the
 * sections between their calls are extracted, with no --lock-wrapper option. */
#include <pthread.h>
#include <stdio.h>

#include "lockutil.h"
#include "slots.h"

#define THREADS 4
#define ITERS 3000

struct counter {
    my_mutex mutex;
    long n;
};

static struct counter counter;
static long slots[64];

static void *worker(void *arg)
{
    long id = (long)arg;
    for (int i = 0; i < ITERS; i++) {
        unsigned hv = (unsigned)(i * 11 + id);
        my_mutex_lock(&counter.mutex);
        counter.n += i % 5;
        my_mutex_unlock(&counter.mutex);
        slot_lock(hv);
        slots[hv % 64] += 1;
        slot_unlock(hv);
    }
    return NULL;
}

int main(void)
{
    pthread_mutex_init(&counter.mutex, NULL);
    slots_init();
    pthread_t t[THREADS];
    for (long i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    long total = 0;
    for (int i = 0; i < 64; i++)
        total += slots[i] * (i + 1);
    printf("counter %ld weighted %ld\n", counter.n, total);
    return 0;
}
// CHECK: lt_execute(&counter.mutex, worker__cs1, &lt_cs1);
// CHECK: lt_execute(lt_lock_of_slot_lock(hv), worker__cs2, &lt_cs2);
// EXTRACTED: 2
