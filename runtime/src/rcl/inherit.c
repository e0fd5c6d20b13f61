/*
 * inherit.c - what a thread or a process created inside an RCL section inherits.
 *
 * A section posted with lt_execute runs on one of its server's servicing threads: pinned to the
 * server's CPU, every signal blocked, SCHED_FIFO (reset on fork) or SCHED_OTHER with the least
 * time slice.  A thread that the section creates inherits all that from the thread that creates
 * it, and so does a process it forks; run by the client itself, as before the rewrite, they
 * would have inherited the client's.  memcached starts its LRU maintainer and crawler inside
 * sections: under rcl they were found pinned to the server's CPU with every signal blocked, and
 * there, beside other processes' busy servers, waited seconds for a turn (docs/delegation.md,
 * "Neighbours").  So:
 *
 *   - a client records its origin - affinity, signal mask, scheduling policy, name - when it
 *     gets its client id (clients.c), after it left the servers' CPUs if it had to: what a
 *     thread it created itself would have had (its name as it was then: a later prctl or
 *     pthread_setname_np of the client's is not seen);
 *   - pthread_create, called on a servicing thread while it runs a client's section, gives the
 *     new thread that client's origin for each attribute the caller's `attr` leaves unset
 *     (affinity, signal mask; scheduling when `attr` inherits it), and its name (a thread is
 *     named after its creator, and servicing threads are named lt-rcl-serve);
 *   - fork inside a section: the child's one thread takes the client's origin back
 *     (rcl_inherit_after_fork, from server.c's child handler).
 *
 * pthread_create is the C library's with this library ahead of it in the lookup order (linked
 * into the program); the C library's is looked up behind it (RTLD_NEXT, its default version
 * GLIBC_2.34), lazily, once.  A sanitizer's interceptor, ahead of both, calls ours in turn.
 * The library's own threads (pool.c's spawn) pass through unchanged: they set what they need.
 *
 * Not covered: posix_spawn and system() inside a section - the child of a servicing thread keeps
 * its blocked signals (glibc's system() reaches posix_spawn without the PLT).  The client's
 * nice value is not carried (SCHED_RESET_ON_FORK gives the new thread nice 0).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>

#include "rcl.h"

struct rcl_origin {
    cpu_set_t cpus;
    sigset_t mask;
    int policy;
    struct sched_param param;
    char name[16]; /* its name (prctl PR_GET_NAME: 16 bytes with the NUL) */
};

/* By client id; written by the client itself (its id taken, before its first request is
 * published: the servicing thread reads it after the request's acquire load), cleared when
 * it gives the id back.  The overflow id's entry is its current user's (clients.c). */
static struct rcl_origin *origins[RCL_MAILBOXES]; /* atomic pointers */

/* One slot per thread: the origin it recorded (freed when it exits). */
static __thread struct rcl_origin *mine;

void rcl_inherit_record(int32_t id)
{
    if (id == RCL_OVERFLOW) /* published under the overflow lock: rcl_inherit_overflow */
        id = -1;
    struct rcl_origin *o = mine;
    if (!o) {
        o = calloc(1, sizeof *o);
        if (!o)
            return; /* the thread's children then inherit as before: nothing is lost */
        if (sched_getaffinity(0, sizeof o->cpus, &o->cpus) != 0 ||
            pthread_sigmask(SIG_SETMASK, NULL, &o->mask) != 0 ||
            pthread_getschedparam(pthread_self(), &o->policy, &o->param) != 0 ||
            prctl(PR_GET_NAME, o->name) != 0) {
            free(o);
            return;
        }
        mine = o;
    }
    /* relaxed: published by the client's request (seq_cst store of its function word) */
    if (id >= 0)
        __atomic_store_n(&origins[id], o, __ATOMIC_RELAXED);
}

void rcl_inherit_overflow(void)
{
    __atomic_store_n(&origins[RCL_OVERFLOW], mine, __ATOMIC_RELAXED);
}

void rcl_inherit_forget(int32_t id)
{
    struct rcl_origin *o = mine;
    if (id >= 0 && id != RCL_OVERFLOW)
        __atomic_store_n(&origins[id], NULL, __ATOMIC_RELAXED);
    else if (id == RCL_OVERFLOW) /* if it is still ours: its next user sets its own */
        __atomic_compare_exchange_n(&origins[RCL_OVERFLOW], &o, NULL, 0, __ATOMIC_RELAXED,
                                    __ATOMIC_RELAXED);
    free(mine);
    mine = NULL;
}

/* In a forked child (clients.c; one thread): only the calling thread's origin is left. */
void rcl_inherit_after_fork_child(void)
{
    for (unsigned i = 0; i < RCL_MAILBOXES; i++) {
        struct rcl_origin *o = origins[i];
        if (o && o != mine)
            free(o); /* (each origin is in one entry: the overflow's users are in no other) */
        origins[i] = o == mine ? o : NULL;
    }
}

/* The origin of the client whose section the calling thread runs, or NULL. */
static const struct rcl_origin *section_origin(void)
{
    const struct rcl_client *me = &rcl_self;
    if (!me->srv || !me->cur || me->spawning || me->real_me < 0)
        return NULL;
    return __atomic_load_n(&origins[me->real_me], __ATOMIC_RELAXED);
}

/* Before rcl_inherit_after_fork_child: the client's origin is another thread's. */
void rcl_inherit_after_fork(void)
{
    const struct rcl_origin *o = section_origin();
    if (!o)
        return;
    sched_setaffinity(0, sizeof o->cpus, &o->cpus);
    pthread_sigmask(SIG_SETMASK, &o->mask, NULL);
    if (o->policy != SCHED_OTHER) /* SCHED_RESET_ON_FORK made it SCHED_OTHER */
        pthread_setschedparam(pthread_self(), o->policy, &o->param);
    prctl(PR_SET_NAME, o->name);
}

/* ---- pthread_create ---- */

typedef int (*create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);

static create_fn real_create(void)
{
    static create_fn real; /* atomic; every thread that looks it up finds the same */
    create_fn f = __atomic_load_n(&real, __ATOMIC_RELAXED);
    if (!f) {
        void *p = dlvsym(RTLD_NEXT, "pthread_create", "GLIBC_2.34");
        if (!p)
            p = dlsym(RTLD_NEXT, "pthread_create");
        memcpy(&f, &p, sizeof f);
        __atomic_store_n(&real, f, __ATOMIC_RELAXED);
    }
    return f;
}

/* Whether a CPU mask is glibc's answer for an attribute without one: every bit set. */
static bool all_cpus(const cpu_set_t *s)
{
    return CPU_COUNT(s) == CPU_SETSIZE;
}

/* `a`: a copy of `attr` (or the defaults) with what it leaves unset taken from o. */
static int attr_from(pthread_attr_t *a, const pthread_attr_t *attr, const struct rcl_origin *o)
{
    int r = pthread_attr_init(a);
    if (r != 0)
        return r;
    int inherit = PTHREAD_INHERIT_SCHED;
    cpu_set_t cpus;
    sigset_t mask;
    bool own_cpus = false, own_mask = false;
    if (attr) {
        int v;
        size_t n;
        void *stack;
        struct sched_param p;
        if (!pthread_attr_getdetachstate(attr, &v))
            pthread_attr_setdetachstate(a, v);
        if (!pthread_attr_getscope(attr, &v))
            pthread_attr_setscope(a, v);
        if (!pthread_attr_getguardsize(attr, &n))
            pthread_attr_setguardsize(a, n);
        /* A caller's own stack.  glibc's getstack answers the stack's top minus its size,
         * and the top is NULL when none was set (getstackaddr, deprecated, says as much). */
        if (!pthread_attr_getstack(attr, &stack, &n) && (uintptr_t)stack + n != 0)
            pthread_attr_setstack(a, stack, n);
        else if (!pthread_attr_getstacksize(attr, &n))
            pthread_attr_setstacksize(a, n);
        pthread_attr_getinheritsched(attr, &inherit);
        if (inherit == PTHREAD_EXPLICIT_SCHED && !pthread_attr_getschedpolicy(attr, &v) &&
            !pthread_attr_getschedparam(attr, &p)) {
            pthread_attr_setinheritsched(a, PTHREAD_EXPLICIT_SCHED);
            pthread_attr_setschedpolicy(a, v);
            pthread_attr_setschedparam(a, &p);
        }
        own_cpus = !pthread_attr_getaffinity_np(attr, sizeof cpus, &cpus) && !all_cpus(&cpus);
        own_mask = pthread_attr_getsigmask_np(attr, &mask) == 0;
    }
    r = pthread_attr_setaffinity_np(a, sizeof cpus, own_cpus ? &cpus : &o->cpus);
    if (r == 0)
        r = pthread_attr_setsigmask_np(a, own_mask ? &mask : &o->mask);
    if (r == 0 && inherit == PTHREAD_INHERIT_SCHED && o->policy != SCHED_OTHER) {
        pthread_attr_setinheritsched(a, PTHREAD_EXPLICIT_SCHED);
        pthread_attr_setschedpolicy(a, o->policy);
        pthread_attr_setschedparam(a, &o->param);
    }
    if (r != 0)
        pthread_attr_destroy(a);
    return r;
}

__attribute__((visibility("default"))) int pthread_create(pthread_t *restrict th,
                                                          const pthread_attr_t *restrict attr,
                                                          void *(*fn)(void *), void *restrict arg)
{
    create_fn real = real_create();
    if (!real)
        return EAGAIN;
    const struct rcl_origin *o = section_origin();
    if (!o)
        return real(th, attr, fn, arg);
    pthread_attr_t a;
    int r = attr_from(&a, attr, o);
    if (r != 0)
        return r;
    /* A new thread is named after the one that creates it: the client's name for the while. */
    char own[16];
    bool renamed = prctl(PR_GET_NAME, own) == 0 && prctl(PR_SET_NAME, o->name) == 0;
    r = real(th, &a, fn, arg);
    if (renamed)
        prctl(PR_SET_NAME, own);
    pthread_attr_destroy(&a);
    return r;
}
