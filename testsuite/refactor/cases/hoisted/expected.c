/* A variable declared in the section and used after it is declared at the call site. */
#include "harness.h"

struct item {
    int key, refs;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct item table[32];
static long misses;

/* Critical section of lookup() on &lock (input.c:14-22), extracted by locktune-extract. */
union lookup__cs1_ctx {
    struct {
        int key;
    } in;
    struct {
        struct item *it;
        int hit;
    } out;
};

static void *lookup__cs1(void *lt_arg)
{
    union lookup__cs1_ctx *lt_ctx = lt_arg;
    int key = lt_ctx->in.key;

    struct item *it = &table[key % 32];
    int hit = it->key == key;
    if (!hit) {
        it->key = key;
        misses++;
    }
    it->refs++;
    lt_ctx->out.it = it;
    lt_ctx->out.hit = hit;
    return NULL;
}

static int lookup(int key)
{
    struct item *it;
    int hit;
    union lookup__cs1_ctx lt_cs1 = {.in = {.key = key}};
    lt_execute(&lock, lookup__cs1, &lt_cs1);
    it = lt_cs1.out.it;
    hit = lt_cs1.out.hit;
    return hit ? it->refs : 0;
}

static void *worker(void *arg)
{
    long id = (long)arg, sum = 0;
    for (int i = 0; i < ITERS; i++)
        sum += lookup((int)(i % 40 + id)) > 0;
    return (void *)sum;
}

int main(void)
{
    int refs = 0;
    run_threads(worker);
    for (int i = 0; i < 32; i++)
        refs += table[i].refs;
    printf("refs %d misses>0 %d\n", refs, misses > 0);
    return 0;
}
