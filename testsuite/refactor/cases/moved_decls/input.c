/* Locals used only inside the section move into the extracted function; a parameter
 * written in the section and read after it is copied back. */
#include "harness.h"

#include <string.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char log_[64];
static long lines;

static int note(int n)
{
    int i;
    char line[16];
    pthread_mutex_lock(&lock);
    for (i = 0; i < 15; i++)
        line[i] = (char)('a' + (n + i) % 26);
    line[15] = 0;
    memcpy(log_, line, sizeof line);
    lines++;
    n += (int)(lines % 2);
    pthread_mutex_unlock(&lock);
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
