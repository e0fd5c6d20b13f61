/* A section that records which thread ran it needs the caller's thread. */
#include "harness.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_t last_owner;
static long mismatches;

/* Critical section of worker() on &lock (input.c:12-16), extracted by locktune-extract. */
static void *worker__cs1(void *lt_arg)
{
    (void)lt_arg;

    last_owner = pthread_self();
    if (!pthread_equal(last_owner, pthread_self()))
        mismatches++;
    return NULL;
}

static void *worker(void *arg)
{
    (void)arg;
    for (int i = 0; i < ITERS; i++) {
        lt_execute_ex(&lock, worker__cs1, NULL, LT_EXEC_ON_CALLER);
        if (!pthread_equal(last_owner, pthread_self()) && 0)
            mismatches++;
    }
    return NULL;
}

static pthread_t who;

/* Critical section of check() on &lock (input.c:28-30), extracted by locktune-extract. */
static void *check__cs1(void *lt_arg)
{
    (void)lt_arg;

    who = pthread_self();
    return NULL;
}

static void *check(void *arg)
{
    (void)arg;
    lt_execute_ex(&lock, check__cs1, NULL, LT_EXEC_ON_CALLER);
    printf("recorded self: %d\n", pthread_equal(who, pthread_self()));
    return NULL;
}

int main(void)
{
    pthread_t t;
    run_threads(worker);
    pthread_create(&t, NULL, check, NULL);
    pthread_join(t, NULL);
    printf("mismatches %ld\n", mismatches);
    return 0;
}
