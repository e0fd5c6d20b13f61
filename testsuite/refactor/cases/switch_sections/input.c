/* A switch inside a section, and a section inside a switch case that leaves the switch
 * after an early unlock. */
#include "harness.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long kinds[3], errors;

static int handle(int op)
{
    int rc = 0;
    switch (op % 4) {
    case 0:
        pthread_mutex_lock(&lock);
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
        pthread_mutex_unlock(&lock);
        break;
    case 1:
        pthread_mutex_lock(&lock);
        if (op % 5 == 0) {
            errors++;
            pthread_mutex_unlock(&lock);
            rc = -1;
            break;
        }
        kinds[0]++;
        pthread_mutex_unlock(&lock);
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
