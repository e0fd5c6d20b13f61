/* Functions whose names a macro makes, as test harnesses do (libuv's
 * `#define TEST_IMPL(name) int run_test_##name(void); int run_test_##name(void)`, then
 * `TEST_IMPL(thread_mutex) { ... }`): the body is written in the file, so its sections are
 * extracted, the extracted functions placed before the macro's use.  Kept: a function whose
 * braces the macro writes too: its section is written inside the macro. */
#include <pthread.h>
#include <stdio.h>

#define THREADS 4
#define ITERS 4000

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long total, bumps, squares;

#define TEST_IMPL(name)        \
    int run_test_##name(long); \
    int run_test_##name(long i)

#define WHOLE_FUNCTION(name, stmt)         \
    static void name(long i)               \
    {                                      \
        pthread_mutex_lock(&lock);         \
        stmt;                              \
        pthread_mutex_unlock(&lock);       \
    }

TEST_IMPL(add)
{
    long sq = i * i;
    pthread_mutex_lock(&lock);
    total += i;
    squares += sq % 1000;
    pthread_mutex_unlock(&lock);
    return 0;
}

WHOLE_FUNCTION(bump, bumps += i % 7)

static void *worker(void *arg)
{
    long base = (long)arg;
    for (long i = 0; i < ITERS; i++) {
        run_test_add(base + i);
        bump(base + i);
    }
    return NULL;
}

int main(void)
{
    pthread_t t[THREADS];
    for (long k = 0; k < THREADS; k++)
        pthread_create(&t[k], NULL, worker, (void *)(k * ITERS));
    for (int k = 0; k < THREADS; k++)
        pthread_join(t[k], NULL);
    printf("total %ld squares %ld bumps %ld\n", total, squares, bumps);
    return 0;
}

// EXTRACTED: 1
// KEPT: written inside the macro WHOLE_FUNCTION
// CHECK: static void *run_test_add__cs1(void *lt_arg)
// CHECK: total += i;
// CHECK: TEST_IMPL(add)
