/* Lock macros that expand to braced statements, `{pthread_mutex_lock(&(l));}`, used as
 * `LOCK(m); ... UNLOCK(m);`: a plain section, one with an early return after an UNLOCK in a
 * branch, and one whose last statement unlocks in both branches. */
#include <pthread.h>
#include <stdio.h>

#define THREADS 4
#define ITERS 3000

#define LOCK(l) {pthread_mutex_lock(&(l));}
#define UNLOCK(l) {pthread_mutex_unlock(&(l));}

static pthread_mutex_t count_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static long count, pool = 1000000, refused, even, odd;

static void add(long n)
{
    LOCK(count_lock);
    count += n;
    UNLOCK(count_lock);
}

static int take(long n)
{
    LOCK(pool_lock);
    if (n % 4 == 0) {
        refused++;
        UNLOCK(pool_lock);
        return -1;
    }
    pool -= n;
    UNLOCK(pool_lock);
    return 0;
}

static void parity(long n)
{
    LOCK(count_lock);
    if (n % 2) {
        odd++;
        UNLOCK(count_lock);
    } else {
        even++;
        UNLOCK(count_lock);
    }
}

static void *worker(void *arg)
{
    long id = (long)arg;
    for (int i = 0; i < ITERS; i++) {
        add(id + 1);
        if (take((i + id) % 5) == 0)
            parity(i);
    }
    return NULL;
}

int main(void)
{
    pthread_t t[THREADS];
    for (long i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    printf("count %ld pool %ld refused %ld taken %ld\n", count, pool, refused, even + odd);
    return 0;
}
// EXTRACTED: 3
// CHECK: static void *add__cs1(void *lt_arg)
// CHECK: long n = lt_ctx->n;
// CHECK-NOT: {{^\s*;\s*$}}
// CHECK: count += n;
// CHECK: static void add(long n)
// CHECK-NEXT: {
// CHECK-NEXT: struct add__cs1_ctx lt_cs1 = {.n = n};
// CHECK-NEXT: lt_execute(&(count_lock), add__cs1, &lt_cs1);{{$}}
// CHECK: intptr_t lt_exit1 = (intptr_t)lt_execute(&(pool_lock), take__cs1, &lt_cs1);
// CHECK-NEXT: if (lt_exit1 == 1) {
// CHECK-NEXT: return -1;
// CHECK-NEXT: }{{$}}
// CHECK: lt_execute(&(count_lock), parity__cs1, &lt_cs1);{{$}}
