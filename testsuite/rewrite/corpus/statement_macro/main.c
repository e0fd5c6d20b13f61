/* Critical sections written inside statement macros: the whole section (lock, code, unlock,
 * and code after the unlock) is one macro's body, its code using the macro's arguments.  The
 * rewrite replaces each use with the call site, the extracted function holding the macro's
 * code with the arguments written at the use.  Kept: a macro whose code passes a local by
 * pointer (the macro's text cannot be edited). */
#include <pthread.h>
#include <stdio.h>

#define THREADS 4
#define ITERS 3000

static pthread_mutex_t acct_lock = PTHREAD_MUTEX_INITIALIZER;
static long total, errors, last_error, squares;

/* Records an error and leaves through `fail`, as zstd's JOB_ERROR does. */
#define FAIL_WITH(code)                         \
    {                                           \
        pthread_mutex_lock(&acct_lock);         \
        errors++;                               \
        last_error = (code);                    \
        pthread_mutex_unlock(&acct_lock);       \
        goto fail;                              \
    }

#define ADD_LOCKED(lock, var, expr)             \
    do {                                        \
        pthread_mutex_lock(&(lock));            \
        var += (expr);                          \
        pthread_mutex_unlock(&(lock));          \
    } while (0)

#define BUMP_LOCKED(p)                          \
    {                                           \
        pthread_mutex_lock(&acct_lock);         \
        (*(p))++;                               \
        pthread_mutex_unlock(&acct_lock);       \
    }

static int step(long i)
{
    long sq = i * i;
    long calls = 0;
    if (i % 7 == 0)
        FAIL_WITH(i * 2 + 1);
    ADD_LOCKED(acct_lock, total, i + 1);
    ADD_LOCKED(acct_lock, squares, sq % 1000);
    BUMP_LOCKED(&calls);
    return (int)calls;
fail:
    return -1;
}

static void *worker(void *arg)
{
    long id = (long)arg;
    for (long i = 0; i < ITERS; i++)
        step(i + id);
    return NULL;
}

int main(void)
{
    pthread_t t[THREADS];
    for (long i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    printf("total %ld squares %ld errors %ld\n", total, squares, errors);
    return 0;
}
// EXTRACTED: 3
// KEPT: must be passed by pointer
// CHECK: static void *step__cs1(void *lt_arg)
// CHECK: errors++;
// CHECK-NEXT: last_error = (i * 2 + 1);
// CHECK: static void *step__cs2(void *lt_arg)
// CHECK: total += (i + 1);
// CHECK: static void *step__cs3(void *lt_arg)
// CHECK: squares += (sq % 1000);
// CHECK: static int step(long i)
// CHECK: if (i % 7 == 0) {
// CHECK-NEXT: struct step__cs1_ctx lt_cs1 = {.i = i};
// CHECK-NEXT: lt_execute(&acct_lock, step__cs1, &lt_cs1);
// CHECK-NEXT: goto fail;
// CHECK-NEXT: }{{$}}
// CHECK-NEXT: struct step__cs2_ctx lt_cs2 = {.i = i};
// CHECK-NEXT: lt_execute(&(acct_lock), step__cs2, &lt_cs2);{{$}}
// CHECK: BUMP_LOCKED(&calls);
