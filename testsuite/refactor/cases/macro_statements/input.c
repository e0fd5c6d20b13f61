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

static void account(struct engine *e, int write)
{
    STAT_L(e);
    if (write)
        e->writes++;
    else
        e->reads++;
    STAT_UL(e);
    STAT_INCR(e, pages, 1);
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
