/*
 * real.c - resolve the C library's pthread functions behind the wrappers (see real.h).
 *
 * States of `resolved`:  0 --(first caller wins the CAS)--> 1 --(all looked up)--> 2
 * Callers that lose the race wait for 2.  The winner's stores to ltp_real happen before its
 * release store of 2; a waiter's acquire load of 2 makes them visible.
 */
#define _GNU_SOURCE
#include "real.h"

#include <dlfcn.h>
#include <sched.h>
#include <stddef.h>

struct ltp_real ltp_real;
static int resolved;

static void *find(const char *name, const char *version)
{
    void *p = version ? dlvsym(RTLD_NEXT, name, version) : NULL;
    return p ? p : dlsym(RTLD_NEXT, name);
}

#define FIND(field, name, version) *(void **)&ltp_real.field = find(name, version)

static void resolve_all(void)
{
    FIND(mutex_init, "pthread_mutex_init", NULL);
    FIND(mutex_destroy, "pthread_mutex_destroy", NULL);
    FIND(mutex_lock, "pthread_mutex_lock", NULL);
    FIND(mutex_trylock, "pthread_mutex_trylock", "GLIBC_2.34");
    FIND(mutex_timedlock, "pthread_mutex_timedlock", "GLIBC_2.34");
    FIND(mutex_clocklock, "pthread_mutex_clocklock", "GLIBC_2.34");
    FIND(mutex_unlock, "pthread_mutex_unlock", NULL);

    FIND(rwlock_init, "pthread_rwlock_init", "GLIBC_2.34");
    FIND(rwlock_destroy, "pthread_rwlock_destroy", "GLIBC_2.34");
    FIND(rwlock_rdlock, "pthread_rwlock_rdlock", "GLIBC_2.34");
    FIND(rwlock_tryrdlock, "pthread_rwlock_tryrdlock", "GLIBC_2.34");
    FIND(rwlock_timedrdlock, "pthread_rwlock_timedrdlock", "GLIBC_2.34");
    FIND(rwlock_clockrdlock, "pthread_rwlock_clockrdlock", "GLIBC_2.34");
    FIND(rwlock_wrlock, "pthread_rwlock_wrlock", "GLIBC_2.34");
    FIND(rwlock_trywrlock, "pthread_rwlock_trywrlock", "GLIBC_2.34");
    FIND(rwlock_timedwrlock, "pthread_rwlock_timedwrlock", "GLIBC_2.34");
    FIND(rwlock_clockwrlock, "pthread_rwlock_clockwrlock", "GLIBC_2.34");
    FIND(rwlock_unlock, "pthread_rwlock_unlock", "GLIBC_2.34");

    FIND(spin_init, "pthread_spin_init", "GLIBC_2.34");
    FIND(spin_destroy, "pthread_spin_destroy", "GLIBC_2.34");
    FIND(spin_lock, "pthread_spin_lock", "GLIBC_2.34");
    FIND(spin_trylock, "pthread_spin_trylock", "GLIBC_2.34");
    FIND(spin_unlock, "pthread_spin_unlock", "GLIBC_2.34");

    FIND(cond_init, "pthread_cond_init", "GLIBC_2.3.2");
    FIND(cond_destroy, "pthread_cond_destroy", "GLIBC_2.3.2");
    FIND(cond_signal, "pthread_cond_signal", "GLIBC_2.3.2");
    FIND(cond_broadcast, "pthread_cond_broadcast", "GLIBC_2.3.2");
    FIND(cond_wait, "pthread_cond_wait", "GLIBC_2.3.2");
    FIND(cond_timedwait, "pthread_cond_timedwait", "GLIBC_2.3.2");
    FIND(cond_clockwait, "pthread_cond_clockwait", "GLIBC_2.30");

    FIND(create, "pthread_create", "GLIBC_2.34");
}

int ltp_real_resolve(void)
{
    int s = __atomic_load_n(&resolved, __ATOMIC_ACQUIRE);
    if (s != 2) {
        int expected = 0;
        if (__atomic_compare_exchange_n(&resolved, &expected, 1, 0, __ATOMIC_ACQ_REL,
                                        __ATOMIC_ACQUIRE)) {
            resolve_all();
            __atomic_store_n(&resolved, 2, __ATOMIC_RELEASE);
        } else {
            while (__atomic_load_n(&resolved, __ATOMIC_ACQUIRE) != 2)
                sched_yield();
        }
    }
    return ltp_real.mutex_lock && ltp_real.mutex_trylock && ltp_real.mutex_unlock ? 0 : -1;
}
