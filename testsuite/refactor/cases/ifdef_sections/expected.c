/* Code excluded by #if inside a section: extracted when it uses nothing local, kept when it
 * uses a variable the compiled section does not (the extracted function would not have it:
 * only the configuration being compiled can be analysed; corpus ifdef_variables has the
 * variables it does bind). */
#include "harness.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long hits, debug_hits;

/* Critical section of hit() on &lock (input.c:12-17), extracted by locktune-extract. */
static void *hit__cs1(void *lt_arg)
{
    (void)lt_arg;

    hits++;
#ifdef EXTRA_DEBUG
    debug_hits++;
#endif
    return NULL;
}

static void hit(int v)
{
    lt_execute(&lock, hit__cs1, NULL);
    (void)v;
}

static void hit_traced(int v)
{
    pthread_mutex_lock(&lock);
    hits++;
#ifdef EXTRA_DEBUG
    debug_hits += v;
#endif
    pthread_mutex_unlock(&lock);
    (void)v;
}

static void *worker(void *arg)
{
    (void)arg;
    for (int i = 0; i < ITERS; i++) {
        hit(i);
        hit_traced(i);
    }
    return NULL;
}

int main(void)
{
    run_threads(worker);
    printf("hits %ld debug %ld\n", hits, debug_hits);
    return 0;
}
