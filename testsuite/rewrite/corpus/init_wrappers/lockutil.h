/* Lock helpers as xz-utils' mythread.h writes them: static inline wrappers in a header. */
#ifndef LOCKUTIL_H
#define LOCKUTIL_H

#include <pthread.h>

typedef pthread_mutex_t my_mutex;

/* An init wrapper: every lock it initialises is its caller's.  Each caller gets a site of
 * its own; the wrapper a site parameter. */
static inline int my_mutex_init(my_mutex *mutex)
{
    return pthread_mutex_init(mutex, NULL);
}
// CHECK: static inline int my_mutex_init(my_mutex *mutex, int lt_site)
// CHECK: return lt_mutex_init(mutex, NULL, lt_site);

static inline void my_mutex_lock(my_mutex *mutex)
{
    pthread_mutex_lock(mutex);
}

static inline void my_mutex_unlock(my_mutex *mutex)
{
    pthread_mutex_unlock(mutex);
}

#endif
