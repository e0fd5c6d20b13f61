#define _GNU_SOURCE
#include <pthread.h>

struct stats {
    long n;
    pthread_mutex_t lock;
};

static pthread_mutex_t plain = LT_MUTEX_INITIALIZER(LT_SITE_INPUT_C_9);
pthread_mutex_t first = LT_MUTEX_INITIALIZER(LT_SITE_INPUT_C_10), second = LT_MUTEX_INITIALIZER(LT_SITE_INPUT_C_10);
static pthread_mutex_t
    split_over_lines = LT_MUTEX_INITIALIZER(LT_SITE_INPUT_C_12);
static pthread_mutex_t pair[2] = { LT_MUTEX_INITIALIZER(LT_SITE_INPUT_C_13), LT_MUTEX_INITIALIZER(LT_SITE_INPUT_C_13) };
static struct stats stats = { .n = 0, .lock = LT_MUTEX_INITIALIZER(LT_SITE_INPUT_C_14) };
static struct stats per_cpu[] = { { 1, LT_MUTEX_INITIALIZER(LT_SITE_INPUT_C_15) }, { 2, LT_MUTEX_INITIALIZER(LT_SITE_INPUT_C_15) } };
static pthread_mutex_t recursive = LT_RECURSIVE_MUTEX_INITIALIZER_NP(LT_SITE_INPUT_C_16);
static pthread_mutex_t checked = LT_ERRORCHECK_MUTEX_INITIALIZER_NP(LT_SITE_INPUT_C_17);
static pthread_mutex_t adaptive = LT_MUTEX_INITIALIZER(LT_SITE_INPUT_C_18);

long count(void)
{
    static pthread_mutex_t once = LT_MUTEX_INITIALIZER(LT_SITE_INPUT_C_22); /* a function-local static */
    pthread_mutex_t local = LT_MUTEX_INITIALIZER(LT_SITE_INPUT_C_23);
    pthread_mutex_lock(&once);
    pthread_mutex_lock(&local);
    long n = stats.n++;
    pthread_mutex_unlock(&local);
    pthread_mutex_unlock(&once);
    return n;
}
