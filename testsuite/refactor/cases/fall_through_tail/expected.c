/* An unlock followed by code that does not leave: that code runs after the section, and
 * then the code after the section. */
#include "harness.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long small, large;

/* Critical section of classify() on &lock (input.c:12-19), extracted by locktune-extract. */
union classify__cs1_ctx {
    struct {
        int v;
    } in;
    struct {
        const char *what;
    } out;
};

static void *classify__cs1(void *lt_arg)
{
    union classify__cs1_ctx *lt_ctx = lt_arg;
    int v = lt_ctx->in.v;
    const char *what;

    if (v < 10) {
        small++;
        what = "small";
    } else {
        large++;
        return (void *)1;
    }
    lt_ctx->out.what = what;
    return NULL;
}

static const char *classify(int v)
{
    const char *what;
    int slow = 0;
    union classify__cs1_ctx lt_cs1 = {.in = {.v = v}};
    intptr_t lt_exit1 = (intptr_t)lt_execute(&lock, classify__cs1, &lt_cs1);
    if (lt_exit1 == 1) {
        what = "large"; /* after the unlock */
        slow = v % 3 == 0;
    } else {
        what = lt_cs1.out.what;
    }
    if (slow)
        what = "large and slow";
    return what;
}

static void *worker(void *arg)
{
    long id = (long)arg, n = 0;
    for (int i = 0; i < ITERS; i++)
        n += classify((int)(i + id) % 50)[0] == 'l';
    return (void *)n;
}

int main(void)
{
    run_threads(worker);
    printf("small %ld large %ld %s\n", small, large, classify(30));
    return 0;
}
