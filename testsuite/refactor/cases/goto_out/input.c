/* goto out of the section after an early unlock, to cleanup code. */
#include "harness.h"

#include <string.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char *names[16];
static long dropped;

static int store(int slot, const char *name)
{
    int rc = 0;
    char *copy = malloc(strlen(name) + 1);
    if (!copy)
        return -1;
    strcpy(copy, name);
    pthread_mutex_lock(&lock);
    if (names[slot]) {
        dropped++;
        pthread_mutex_unlock(&lock);
        rc = 1;
        goto out;
    }
    names[slot] = copy;
    copy = NULL;
    pthread_mutex_unlock(&lock);
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
