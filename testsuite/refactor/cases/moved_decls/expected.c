/* Locals used only inside the section move into the extracted function; a parameter
 * written in the section and read after it is copied back. */
#include "harness.h"

#include <string.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char log_[64];
static long lines;

/* Critical section of note() on &lock (input.c:15-22), extracted by locktune-extract. */
union note__cs1_ctx {
    struct {
        int n;
    } in;
    struct {
        int n;
    } out;
};

static void *note__cs1(void *lt_arg)
{
    union note__cs1_ctx *lt_ctx = lt_arg;
    int i;
    char line[16];
    int n = lt_ctx->in.n;

    for (i = 0; i < 15; i++)
        line[i] = (char)('a' + (n + i) % 26);
    line[15] = 0;
    memcpy(log_, line, sizeof line);
    lines++;
    n += (int)(lines % 2);
    lt_ctx->out.n = n;
    return NULL;
}

static int note(int n)
{
    union note__cs1_ctx lt_cs1 = {.in = {.n = n}};
    lt_execute(&lock, note__cs1, &lt_cs1);
    n = lt_cs1.out.n;
    return n;
}

static void *worker(void *arg)
{
    long id = (long)arg, sum = 0;
    for (int i = 0; i < ITERS; i++)
        sum += note((int)id + i) >= 0;
    return (void *)sum;
}

int main(void)
{
    run_threads(worker);
    printf("lines %ld log %zu\n", lines, strlen(log_));
    return 0;
}
