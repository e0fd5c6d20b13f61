/*
 * liblocktune-prof.so - the preloaded profiler (first cut: whole-process counts).
 *
 * Interposes pthread_mutex_lock/trylock/unlock, counts acquisitions and contended
 * acquisitions, probes the PMU once, and writes a small JSON document at exit to the file
 * named by LOCKTUNE_PROFILE_OUT.  The per-site profiler replaces this file.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pmu.h"

typedef int (*mutex_fn)(pthread_mutex_t *);
static mutex_fn real_lock, real_trylock, real_unlock;
static unsigned long n_lock, n_contended, n_try, n_try_busy;
static struct lt_pmu_probe pmu;

static void resolve(void)
{
    real_lock = (mutex_fn)dlsym(RTLD_NEXT, "pthread_mutex_lock");
    real_trylock = (mutex_fn)dlsym(RTLD_NEXT, "pthread_mutex_trylock");
    real_unlock = (mutex_fn)dlsym(RTLD_NEXT, "pthread_mutex_unlock");
}
static pthread_once_t once = PTHREAD_ONCE_INIT; /* pthread_once is not interposed */
#define INIT()                                                                                     \
    do {                                                                                           \
        if (__builtin_expect(!real_unlock, 0))                                                     \
            pthread_once(&once, resolve);                                                          \
    } while (0)

__attribute__((visibility("default"))) int pthread_mutex_lock(pthread_mutex_t *m)
{
    INIT();
    __atomic_fetch_add(&n_lock, 1, __ATOMIC_RELAXED);
    if (real_trylock(m) == 0)
        return 0;
    __atomic_fetch_add(&n_contended, 1, __ATOMIC_RELAXED);
    return real_lock(m);
}

__attribute__((visibility("default"))) int pthread_mutex_trylock(pthread_mutex_t *m)
{
    INIT();
    __atomic_fetch_add(&n_try, 1, __ATOMIC_RELAXED);
    int r = real_trylock(m);
    if (r == EBUSY)
        __atomic_fetch_add(&n_try_busy, 1, __ATOMIC_RELAXED);
    return r;
}

__attribute__((visibility("default"))) int pthread_mutex_unlock(pthread_mutex_t *m)
{
    INIT();
    return real_unlock(m);
}

__attribute__((constructor)) static void prof_start(void)
{
    INIT();
    const char *ev = getenv("LOCKTUNE_PMU_EVENT");
    lt_pmu_probe(ev && *ev ? ev : NULL, 0, &pmu);
}

__attribute__((destructor)) static void prof_stop(void)
{
    const char *path = getenv("LOCKTUNE_PROFILE_OUT");
    if (!path || !*path)
        return;
    char buf[1024];
    /* No stdio streams at exit: they may already be torn down; format into a buffer. */
    int len = snprintf(buf, sizeof buf,
                       "{\"schema\": \"locktune-prof-counts/0\", \"acquisitions\": %lu, "
                       "\"contended\": %lu, \"trylocks\": %lu, \"trylock_failures\": %lu, "
                       "\"pmu\": {\"available\": %s, \"event\": \"%s\"}}\n",
                       n_lock, n_contended, n_try, n_try_busy, pmu.available ? "true" : "false",
                       pmu.event);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return;
    if (write(fd, buf, (size_t)len) != len)
        (void)unlink(path);
    close(fd);
}
