#include <pthread.h>
#include <stdlib.h>

typedef pthread_mutex_t lock_t;

struct queue {
    pthread_mutex_t lock, spare;
    pthread_cond_t nonempty;
    pthread_mutex_t stripes[4];
    int n;
};

extern pthread_mutex_t global_lock;

static pthread_mutex_t *new_lock(void)
{
    pthread_mutex_t *m = (pthread_mutex_t *)malloc(sizeof(pthread_mutex_t));
    return m;
}

int wait_for(struct queue *q, pthread_cond_t *c, pthread_mutex_t *m)
{
    (void)q;
    (void)c;
    return m == new_lock() ? 0 : (int)sizeof(pthread_cond_t);
}

/* pthread_mutexattr_t, pthread_rwlock_t and pthread_spinlock_t are not retargeted */
pthread_mutexattr_t attr;
pthread_rwlock_t rw;
