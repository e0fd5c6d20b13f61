#define _GNU_SOURCE
#include <pthread.h>

struct stats {
    long n;
    pthread_mutex_t lock;
};

static pthread_mutex_t plain = PTHREAD_MUTEX_INITIALIZER;
pthread_mutex_t first = PTHREAD_MUTEX_INITIALIZER, second = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t
    split_over_lines = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t pair[2] = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER };
static struct stats stats = { .n = 0, .lock = PTHREAD_MUTEX_INITIALIZER };
static struct stats per_cpu[] = { { 1, PTHREAD_MUTEX_INITIALIZER }, { 2, PTHREAD_MUTEX_INITIALIZER } };
static pthread_mutex_t recursive = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static pthread_mutex_t checked = PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP;
static pthread_mutex_t adaptive = PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP;

long count(void)
{
    static pthread_mutex_t once = PTHREAD_MUTEX_INITIALIZER; /* a function-local static */
    pthread_mutex_t local = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&once);
    pthread_mutex_lock(&local);
    long n = stats.n++;
    pthread_mutex_unlock(&local);
    pthread_mutex_unlock(&once);
    return n;
}
