/* pthread_self() inside the section records the owner: it must be the caller. */
#include <pthread.h>
#include <stdio.h>

#define THREADS 4
#define ITERS 3000

static pthread_mutex_t owner_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_t last_owner;
static long handoffs;

static int claim(pthread_t me)
{
    int mine;
    pthread_mutex_lock(&owner_lock);
    if (!pthread_equal(last_owner, pthread_self()))
        handoffs++;
    last_owner = pthread_self();
    mine = pthread_equal(last_owner, me);
    pthread_mutex_unlock(&owner_lock);
    return mine;
}

static long own[THREADS];

static void *worker(void *arg)
{
    long id = (long)arg;
    pthread_t me = pthread_self();
    for (int i = 0; i < ITERS; i++)
        own[id] += claim(me);
    return NULL;
}

int main(void)
{
    pthread_t t[THREADS];
    for (long i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    long total = 0;
    for (int i = 0; i < THREADS; i++)
        total += own[i];
    printf("claims %ld handoffs>0 %d\n", total, handoffs > 0);
    return 0;
}
// CHECK: LT_EXEC_ON_CALLER);
