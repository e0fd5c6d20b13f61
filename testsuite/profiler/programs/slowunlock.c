/* slowunlock - a preloaded library that makes every pthread_mutex_unlock call take SLOW_NS
 * (300 ns) longer, then does the real release: an unlock that is slow without waking anyone
 * and without being preempted (below the profiler's 1000-tick preemption threshold), as the
 * release of a lock whose line another CPU holds is.
 *
 * Preloaded after liblocktune-prof.so (`locktune profile` puts its library first), so the
 * profiler's own pthread_mutex_unlock calls this one as "the real" one: the time lies between
 * the profiler's unlock-entry reading and its release reading, and truth.c sees it too. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <time.h>

#define SLOW_NS 300L

static long now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

int pthread_mutex_unlock(pthread_mutex_t *m)
{
    static int (*real)(pthread_mutex_t *);
    if (!real)
        real = (int (*)(pthread_mutex_t *))dlsym(RTLD_NEXT, "pthread_mutex_unlock");
    long end = now() + SLOW_NS;
    while (now() < end)
        ;
    return real(m);
}
