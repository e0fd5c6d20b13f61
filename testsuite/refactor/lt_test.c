/*
 * lt_test.c - lt_execute for pthread mutexes, delegating to one server thread per lock
 * (see lt_test.h).  A request is a stack-allocated record the client waits on; the server
 * takes the lock, runs the function, releases the lock and signals the record.  A section
 * that calls lt_execute while running on a server runs inline (nested sections).
 *
 * Set LT_TEST_LOCAL=1 to run every section on its caller instead.
 */
#include "lt_test.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

struct request {
    lt_cs_fn fn;
    void *ctx;
    void *result;
    int done;
    int trylock; /* give up (busy) rather than wait when the lock is taken */
    int busy;
    struct request *next;
};

struct server {
    pthread_mutex_t *lock; /* the lock this server runs sections of; NULL: free slot */
    pthread_mutex_t q_lock;
    pthread_cond_t q_cond; /* signalled when a request is queued */
    pthread_cond_t done;   /* broadcast when a request is done */
    struct request *head, **tail;
};

#define MAX_SERVERS 64
static struct server servers[MAX_SERVERS];
static pthread_mutex_t servers_lock = PTHREAD_MUTEX_INITIALIZER;
static _Thread_local int on_server;
static atomic_ulong delegated, on_caller;

static void *serve(void *arg)
{
    struct server *s = arg;
    on_server = 1;
    pthread_mutex_lock(&s->q_lock);
    for (;;) {
        while (!s->head)
            pthread_cond_wait(&s->q_cond, &s->q_lock);
        struct request *r = s->head;
        s->head = r->next;
        if (!s->head)
            s->tail = &s->head;
        pthread_mutex_unlock(&s->q_lock);
        if (r->trylock && pthread_mutex_trylock(s->lock) != 0) {
            r->busy = 1;
        } else {
            if (!r->trylock)
                pthread_mutex_lock(s->lock);
            r->result = r->fn(r->ctx);
            pthread_mutex_unlock(s->lock);
        }
        pthread_mutex_lock(&s->q_lock);
        r->done = 1;
        pthread_cond_broadcast(&s->done);
    }
    return NULL;
}

static struct server *server_for(pthread_mutex_t *m)
{
    struct server *found = NULL;
    pthread_mutex_lock(&servers_lock);
    for (int i = 0; i < MAX_SERVERS && !found; i++) {
        if (servers[i].lock == m) {
            found = &servers[i];
        } else if (!servers[i].lock) {
            struct server *s = &servers[i];
            pthread_t t;
            s->lock = m;
            pthread_mutex_init(&s->q_lock, NULL);
            pthread_cond_init(&s->q_cond, NULL);
            pthread_cond_init(&s->done, NULL);
            s->head = NULL;
            s->tail = &s->head;
            if (pthread_create(&t, NULL, serve, s) != 0) {
                perror("lt_test: pthread_create");
                abort();
            }
            pthread_detach(t);
            found = s;
        }
    }
    pthread_mutex_unlock(&servers_lock);
    return found;
}

static int local_only(void)
{
    const char *v = getenv("LT_TEST_LOCAL");
    return v && *v == '1';
}

/* Runs fn(ctx) on the lock's server, under the lock; with `trylock`, only if the lock is free
 * (*busy is set otherwise). */
static void *delegate(struct server *s, lt_cs_fn fn, void *ctx, int trylock, int *busy)
{
    atomic_fetch_add_explicit(&delegated, 1, memory_order_relaxed);
    struct request r = {fn, ctx, NULL, 0, trylock, 0, NULL};
    pthread_mutex_lock(&s->q_lock);
    *s->tail = &r;
    s->tail = &r.next;
    pthread_cond_signal(&s->q_cond);
    while (!r.done)
        pthread_cond_wait(&s->done, &s->q_lock);
    pthread_mutex_unlock(&s->q_lock);
    if (busy)
        *busy = r.busy;
    return r.result;
}

void *lt_execute_ex(pthread_mutex_t *m, lt_cs_fn fn, void *ctx, unsigned flags)
{
    struct server *s = NULL;
    if (!on_server && !(flags & (LT_EXEC_ON_CALLER | LT_EXEC_MAY_WAIT)) && !local_only())
        s = server_for(m);
    if (!s) {
        atomic_fetch_add_explicit(&on_caller, 1, memory_order_relaxed);
        pthread_mutex_lock(m);
        void *r = fn(ctx);
        pthread_mutex_unlock(m);
        return r;
    }
    return delegate(s, fn, ctx, 0, NULL);
}

void *lt_execute(pthread_mutex_t *m, lt_cs_fn fn, void *ctx)
{
    return lt_execute_ex(m, fn, ctx, 0);
}

int lt_execute_trylock(pthread_mutex_t *m, lt_cs_fn fn, void *ctx, void **result)
{
    struct server *s = on_server || local_only() ? NULL : server_for(m);
    void *r;
    if (s) {
        int busy = 0;
        r = delegate(s, fn, ctx, 1, &busy);
        if (busy)
            return EBUSY;
    } else {
        if (pthread_mutex_trylock(m) != 0)
            return EBUSY;
        atomic_fetch_add_explicit(&on_caller, 1, memory_order_relaxed);
        r = fn(ctx);
        pthread_mutex_unlock(m);
    }
    if (result)
        *result = r;
    return 0;
}

unsigned long lt_test_delegated(void)
{
    return atomic_load(&delegated);
}

unsigned long lt_test_on_caller(void)
{
    return atomic_load(&on_caller);
}

/* LT_TEST_REPORT=1: say at exit how the sections ran, for the tests to check. */
__attribute__((destructor)) static void report(void)
{
    const char *v = getenv("LT_TEST_REPORT");
    if (v && *v == '1')
        fprintf(stderr, "lt_test: delegated=%lu on_caller=%lu\n", lt_test_delegated(),
                lt_test_on_caller());
}
