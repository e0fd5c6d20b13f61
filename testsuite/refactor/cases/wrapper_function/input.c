/* Wrapper functions defined in the file (memcached's item_lock(hv)): the lock they take is
 * read from their bodies. */
#include "harness.h"

#define HASHPOWER 4
#define hashmask(n) ((1u << (n)) - 1)

static pthread_mutex_t *item_locks;
static long items[1u << HASHPOWER];

static void item_lock(unsigned hv)
{
    pthread_mutex_lock(&item_locks[hv & hashmask(HASHPOWER)]);
}

static void item_unlock(unsigned hv)
{
    pthread_mutex_unlock(&item_locks[hv & hashmask(HASHPOWER)]);
}

static long item_get(unsigned hv)
{
    long it;
    item_lock(hv);
    it = ++items[hv & hashmask(HASHPOWER)];
    item_unlock(hv);
    return it;
}

static void *worker(void *arg)
{
    long id = (long)arg;
    for (int i = 0; i < ITERS; i++)
        item_get((unsigned)(i * 31 + id));
    return NULL;
}

int main(void)
{
    long total = 0;
    item_locks = calloc(1u << HASHPOWER, sizeof(pthread_mutex_t));
    for (unsigned i = 0; i < (1u << HASHPOWER); i++)
        pthread_mutex_init(&item_locks[i], NULL);
    run_threads(worker);
    for (unsigned i = 0; i < (1u << HASHPOWER); i++)
        total += items[i];
    printf("total %ld\n", total);
    free(item_locks);
    return 0;
}
