/* Lock wrappers as xz-utils writes them (mythread.h): static inline, the result checked by
 * an assert.  No --lock-wrapper names them: the rewriter finds them. */
#ifndef LOCKUTIL_H
#define LOCKUTIL_H

#include <assert.h>
#include <pthread.h>

typedef pthread_mutex_t my_mutex;

static inline void my_mutex_lock(my_mutex *mutex)
{
    int ret = pthread_mutex_lock(mutex);
    assert(ret == 0);
    (void)ret;
}

static inline void my_mutex_unlock(my_mutex *mutex)
{
    int ret = pthread_mutex_unlock(mutex);
    assert(ret == 0);
    (void)ret;
}

#endif
