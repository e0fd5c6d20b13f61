/* Statement macros that carry their own ';' (extstore's STAT_L(e);) are whole statements;
 * a macro that holds a whole section (STAT_INCR) is extracted from its text at the use. */
#include "harness.h"

#define STAT_L(e) pthread_mutex_lock(&e->stats_mutex);
#define STAT_UL(e) pthread_mutex_unlock(&e->stats_mutex);
#define STAT_INCR(e, stat, amount)                                                              \
    {                                                                                           \
        pthread_mutex_lock(&e->stats_mutex);                                                    \
        e->stat += amount;                                                                      \
        pthread_mutex_unlock(&e->stats_mutex);                                                  \
    }

struct engine {
    pthread_mutex_t stats_mutex;
    long reads, writes, pages;
};

static struct engine eng = {PTHREAD_MUTEX_INITIALIZER, 0, 0, 0};

/* Critical section of account() on &e->stats_mutex (input.c:23-28), extracted by
 * locktune-extract. */
struct account__cs1_ctx {
    int write;
    struct engine *e;
};

static void *account__cs1(void *lt_arg)
{
    struct account__cs1_ctx *lt_ctx = lt_arg;
    int write = lt_ctx->write;
    struct engine *e = lt_ctx->e;

    if (write)
        e->writes++;
    else
        e->reads++;
    return NULL;
}

/* Critical section of account() on &e->stats_mutex (input.c:29), extracted by locktune-extract. */
struct account__cs2_ctx {
    struct engine *e;
};

static void *account__cs2(void *lt_arg)
{
    struct account__cs2_ctx *lt_ctx = lt_arg;
    struct engine *e = lt_ctx->e;

    e->pages += 1;
    return NULL;
}

static void account(struct engine *e, int write)
{
    struct account__cs1_ctx lt_cs1 = {.write = write, .e = e};
    lt_execute(&e->stats_mutex, account__cs1, &lt_cs1);
    struct account__cs2_ctx lt_cs2 = {.e = e};
    lt_execute(&e->stats_mutex, account__cs2, &lt_cs2);
}

static void *worker(void *arg)
{
    long id = (long)arg;
    for (int i = 0; i < ITERS; i++)
        account(&eng, (int)(i + id) % 3 == 0);
    return NULL;
}

int main(void)
{
    run_threads(worker);
    printf("reads+writes %ld pages %ld\n", eng.reads + eng.writes, eng.pages);
    return 0;
}
