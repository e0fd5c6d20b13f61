/* A switch inside a section, and a section inside a switch case that leaves the switch
 * after an early unlock. */
#include "harness.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long kinds[3], errors;

/* Critical section of handle() on &lock (input.c:13-24), extracted by locktune-extract. */
struct handle__cs1_ctx {
    int op;
};

static void *handle__cs1(void *lt_arg)
{
    struct handle__cs1_ctx *lt_ctx = lt_arg;
    int op = lt_ctx->op;

    switch (op % 3) {
    case 0:
        kinds[0]++;
        break;
    case 1:
        kinds[1]++;
        break;
    default:
        kinds[2]++;
    }
    return NULL;
}

/* Critical section of handle() on &lock (input.c:27-35), extracted by locktune-extract. */
struct handle__cs2_ctx {
    int op;
};

static void *handle__cs2(void *lt_arg)
{
    struct handle__cs2_ctx *lt_ctx = lt_arg;
    int op = lt_ctx->op;

    if (op % 5 == 0) {
        errors++;
        return (void *)1;
    }
    kinds[0]++;
    return NULL;
}

static int handle(int op)
{
    int rc = 0;
    switch (op % 4) {
    case 0:
        {
            struct handle__cs1_ctx lt_cs1 = {.op = op};
            lt_execute(&lock, handle__cs1, &lt_cs1);
        }
        break;
    case 1:
        {
            struct handle__cs2_ctx lt_cs2 = {.op = op};
            intptr_t lt_exit2 = (intptr_t)lt_execute(&lock, handle__cs2, &lt_cs2);
            if (lt_exit2 == 1) {
                rc = -1;
                break;
            }
        }
        break;
    default:
        break;
    }
    return rc;
}

static void *worker(void *arg)
{
    long id = (long)arg, fails = 0;
    for (int i = 0; i < ITERS; i++)
        fails += handle((int)(i + id)) < 0;
    return (void *)fails;
}

int main(void)
{
    run_threads(worker);
    printf("%ld %ld %ld errors %ld\n", kinds[0], kinds[1], kinds[2], errors);
    return 0;
}
