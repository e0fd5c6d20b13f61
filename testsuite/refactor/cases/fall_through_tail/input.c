/* An unlock followed by code that does not leave: that code runs after the section, and
 * then the code after the section. */
#include "harness.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long small, large;

static const char *classify(int v)
{
    const char *what;
    int slow = 0;
    pthread_mutex_lock(&lock);
    if (v < 10) {
        small++;
        what = "small";
        pthread_mutex_unlock(&lock);
    } else {
        large++;
        pthread_mutex_unlock(&lock);
        what = "large"; /* after the unlock */
        slow = v % 3 == 0;
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
