#include <pthread.h>
#include <stdlib.h>

typedef lt_mutex_t lock_t;

struct queue {
    lt_mutex_t lock, spare;
    lt_cond_t nonempty;
    lt_mutex_t stripes[4];
    int n;
};

extern lt_mutex_t global_lock;

static lt_mutex_t *new_lock(void)
{
    lt_mutex_t *m = (lt_mutex_t *)malloc(sizeof(lt_mutex_t));
    return m;
}

int wait_for(struct queue *q, lt_cond_t *c, lt_mutex_t *m)
{
    (void)q;
    (void)c;
    return m == new_lock() ? 0 : (int)sizeof(lt_cond_t);
}

/* pthread_mutexattr_t, pthread_rwlock_t and pthread_spinlock_t are not retargeted */
pthread_mutexattr_t attr;
pthread_rwlock_t rw;
