#include "pool.h"

int pool_init(struct pool *p)
{
    p->taken = 0;
    return pthread_mutex_init(&p->lock, NULL);
}
// CHECK: return lt_mutex_init(&p->lock, NULL, LT_SITE_POOL_C_6);

void pool_take(struct pool *p, long n)
{
    my_mutex_lock(&p->lock);
    p->taken += n;
    my_mutex_unlock(&p->lock);
}
