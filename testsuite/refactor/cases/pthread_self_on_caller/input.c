/* A section that records which thread ran it needs the caller's thread. */
#include "harness.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_t last_owner;
static long mismatches;

static void *worker(void *arg)
{
    (void)arg;
    for (int i = 0; i < ITERS; i++) {
        pthread_mutex_lock(&lock);
        last_owner = pthread_self();
        if (!pthread_equal(last_owner, pthread_self()))
            mismatches++;
        pthread_mutex_unlock(&lock);
        if (!pthread_equal(last_owner, pthread_self()) && 0)
            mismatches++;
    }
    return NULL;
}

static pthread_t who;

static void *check(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&lock);
    who = pthread_self();
    pthread_mutex_unlock(&lock);
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
