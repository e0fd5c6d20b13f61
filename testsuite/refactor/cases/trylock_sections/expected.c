/* Trylock sections run by lt_execute_trylock: the success branch of the if, or the code after
 * the if when the failure branch leaves; one that needs the caller's thread is kept. */
#include "harness.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static _Thread_local long mine;
static long done_, skipped, total, owned;

/* Critical section of reassign() on &lock (input.c:12-17), extracted by locktune-extract. */
union reassign__cs1_ctx {
    struct {
        long v;
    } in;
    struct {
        long ret;
    } out;
};

static void *reassign__cs1(void *lt_arg)
{
    union reassign__cs1_ctx *lt_ctx = lt_arg;
    long ret;
    long v = lt_ctx->in.v;

    ret = total += v;
    lt_ctx->out.ret = ret;
    return NULL;
}

static int reassign(long v)
{
    long ret;
    union reassign__cs1_ctx lt_cs1 = {.in = {.v = v}};
    void *lt_res1;
    if (lt_execute_trylock(&lock, reassign__cs1, &lt_cs1, &lt_res1) != 0) {
        /* busy: the caller tries again */
        return -1;
    }
    ret = lt_cs1.out.ret;
    return (int)(ret % 2);
}

/* Critical section of worker() on &lock (input.c:25-27), extracted by locktune-extract. */
static void *worker__cs1(void *lt_arg)
{
    (void)lt_arg;

    done_++;
    return NULL;
}

/* Critical section of worker() on &lock (input.c:29-31), extracted by locktune-extract. */
static void *worker__cs2(void *lt_arg)
{
    (void)lt_arg;

    skipped++;
    return NULL;
}

static void *worker(void *arg)
{
    (void)arg;
    for (int i = 0; i < ITERS; i++) {
        void *lt_res1;
        if (lt_execute_trylock(&lock, worker__cs1, NULL, &lt_res1) == 0) {
        } else {
            lt_execute(&lock, worker__cs2, NULL);
        }
        while (reassign(1) < 0)
            ;
        if (!pthread_mutex_trylock(&lock)) {
            mine++;
            owned++;
            pthread_mutex_unlock(&lock);
        }
    }
    return NULL;
}

int main(void)
{
    run_threads(worker);
    printf("total %ld %ld\n", done_ + skipped, total);
    return 0;
}
