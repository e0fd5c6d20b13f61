/* goto out of the section after an early unlock, to cleanup code. */
#include "harness.h"

#include <string.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char *names[16];
static long dropped;

/* Critical section of store() on &lock (input.c:17-26), extracted by locktune-extract. */
union store__cs1_ctx {
    struct {
        int slot;
        char *copy;
    } in;
    struct {
        char *copy;
    } out;
};

static void *store__cs1(void *lt_arg)
{
    union store__cs1_ctx *lt_ctx = lt_arg;
    int slot = lt_ctx->in.slot;
    char *copy = lt_ctx->in.copy;

    if (names[slot]) {
        dropped++;
        lt_ctx->out.copy = copy;
        return (void *)1;
    }
    names[slot] = copy;
    copy = NULL;
    lt_ctx->out.copy = copy;
    return NULL;
}

static int store(int slot, const char *name)
{
    int rc = 0;
    char *copy = malloc(strlen(name) + 1);
    if (!copy)
        return -1;
    strcpy(copy, name);
    union store__cs1_ctx lt_cs1 = {.in = {.slot = slot, .copy = copy}};
    intptr_t lt_exit1 = (intptr_t)lt_execute(&lock, store__cs1, &lt_cs1);
    if (lt_exit1 == 1) {
        copy = lt_cs1.out.copy;
        rc = 1;
        goto out;
    }
    copy = lt_cs1.out.copy;
out:
    free(copy);
    return rc;
}

static void *worker(void *arg)
{
    long id = (long)arg;
    for (int i = 0; i < ITERS; i++)
        store((int)((i + id) % 16), id % 2 ? "odd" : "even");
    return NULL;
}

int main(void)
{
    int set = 0;
    run_threads(worker);
    for (int i = 0; i < 16; i++)
        set += names[i] != NULL;
    printf("set %d dropped %ld\n", set, dropped);
    return 0;
}
