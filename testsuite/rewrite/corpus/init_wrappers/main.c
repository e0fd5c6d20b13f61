/* Locks brought to life through init wrappers (issue 11: "init wrappers give each caller its
 * own site"): a static inline one in a header (lockutil.h, as xz-utils' mythread_mutex_init)
 * called for two locks of different objects, one whose address is also taken (so its locks
 * keep its one site), and one with external linkage (pool.c).  Sections on each lock. */
#include <pthread.h>
#include <stdio.h>

#include "lockutil.h"
#include "pool.h"

#define THREADS 4
#define ITERS 2000

struct account {
    my_mutex mutex;
    long balance;
};

static struct account checking, savings;
static struct pool pool;

/* Its address is taken below: its callers cannot all be given a site. */
static int other_init(my_mutex *m)
{
    return pthread_mutex_init(m, NULL);
}
// CHECK: return lt_mutex_init(m, NULL, LT_SITE_MAIN_C_25);
static int (*init_fn)(my_mutex *) = other_init;
static my_mutex audit_lock;
static long audits;

static void *worker(void *arg)
{
    long id = (long)arg;
    for (int i = 0; i < ITERS; i++) {
        my_mutex_lock(&checking.mutex);
        checking.balance += i % 7;
        my_mutex_unlock(&checking.mutex);
        my_mutex_lock(&savings.mutex);
        savings.balance += id;
        my_mutex_unlock(&savings.mutex);
        pthread_mutex_lock(&audit_lock);
        audits++;
        pthread_mutex_unlock(&audit_lock);
        pool_take(&pool, 1);
    }
    return NULL;
}

int main(void)
{
    if (my_mutex_init(&checking.mutex))
        return 1;
    if (my_mutex_init(&savings.mutex) != 0)
        return 1;
    if (init_fn(&audit_lock))
        return 1;
    if (pool_init(&pool))
        return 1;
    pthread_t t[THREADS];
    for (long i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    printf("checking %ld savings %ld audits %ld pool %ld\n", checking.balance, savings.balance,
           audits, pool.taken);
    return 0;
}
// CHECK: if (my_mutex_init(&checking.mutex, LT_SITE_MAIN_C_52))
// CHECK: if (my_mutex_init(&savings.mutex, LT_SITE_MAIN_C_54) != 0)
// EXTRACTED: 4
// SITES: 4
// NOTE: pool_init() initialises its caller's lock: it has external linkage
// NOTE: other_init() initialises its caller's lock: its address is taken (main.c:28)
