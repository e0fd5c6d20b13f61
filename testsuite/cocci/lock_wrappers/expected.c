#include <pthread.h>
#include <stdint.h>

#define mutex_lock(x) pthread_mutex_lock(x)
#define hashmask(n) ((1u << (n)) - 1)

static pthread_mutex_t *item_locks;
static pthread_mutex_t stats_lock;
unsigned int item_lock_hashpower;

void item_lock(uint32_t hv)
{
    mutex_lock(&item_locks[hv & hashmask(item_lock_hashpower)]);
}

int item_trylock_quick(uint32_t hv)
{
    return pthread_mutex_trylock(&item_locks[hv & hashmask(item_lock_hashpower)]);
}

void STATS_LOCK(void) {
    pthread_mutex_lock(&stats_lock);
}

void STATS_UNLOCK(void) {}

static void local_unlock(int i) { pthread_mutex_unlock(&item_locks[i]); }

void not_a_wrapper(int i)
{
    pthread_mutex_lock(&item_locks[i]);
    local_unlock(i);
}
