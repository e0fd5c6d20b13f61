/* Wrapper functions defined in the file (memcached's item_lock(hv)): the lock they take is
 * read from their bodies. */
#include "harness.h"

#define HASHPOWER 4
#define hashmask(n) ((1u << (n)) - 1)

static pthread_mutex_t *item_locks;
static long items[1u << HASHPOWER];

__attribute__((unused)) static void item_lock(unsigned hv)
{
    pthread_mutex_lock(&item_locks[hv & hashmask(HASHPOWER)]);
}

__attribute__((unused)) static void item_unlock(unsigned hv)
{
    pthread_mutex_unlock(&item_locks[hv & hashmask(HASHPOWER)]);
}

/* Critical section of item_get() on item_lock(hv) (input.c:24-26), extracted by
 * locktune-extract. */
union item_get__cs1_ctx {
    struct {
        unsigned int hv;
    } in;
    struct {
        long it;
    } out;
};

static void *item_get__cs1(void *lt_arg)
{
    union item_get__cs1_ctx *lt_ctx = lt_arg;
    long it;
    unsigned int hv = lt_ctx->in.hv;

    it = ++items[hv & hashmask(HASHPOWER)];
    lt_ctx->out.it = it;
    return NULL;
}

static long item_get(unsigned hv)
{
    long it;
    union item_get__cs1_ctx lt_cs1 = {.in = {.hv = hv}};
    lt_execute(&item_locks[hv & hashmask(HASHPOWER)], item_get__cs1, &lt_cs1);
    it = lt_cs1.out.it;
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
