/* Lock and unlock in different functions: begin() takes the lock and reads, end() writes and
 * releases it. */
#include "harness.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long value, snapshot;

static void begin(void)
{
    pthread_mutex_lock(&lock);
    snapshot = value;
}

static void end(void)
{
    value = snapshot + 1;
    pthread_mutex_unlock(&lock);
}

static void *worker(void *arg)
{
    (void)arg;
    for (int i = 0; i < ITERS; i++) {
        begin();
        end();
    }
    return NULL;
}

int main(void)
{
    run_threads(worker);
    printf("value %ld\n", value);
    return 0;
}
