/*
 * thread.c - per-thread runtime state (thread.h): tid, PRNG, queue-node pool, and the exit
 * hook that releases them.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "algo.h"
#include "mutex.h"
#include "qnode.h"
#include "stats.h"
#include "thread.h"

__thread struct lt_thread lt_thread_self __attribute__((tls_model("initial-exec")));

static pthread_key_t exit_key;
static pthread_once_t exit_key_once = PTHREAD_ONCE_INIT;

static void child_after_fork(void)
{
    /* The child's only thread has a new tid, and the condition waiters it deferred waking
     * are threads of the parent; everything else it inherited stays valid. */
    lt_thread_self.tid = 0;
    lt_thread_self.deferred = NULL;
    lt_thread_self.deferred_mutex = NULL;
    lt_mutex_after_fork_child();
}

static void thread_exit(void *arg)
{
    (void)arg;
    struct lt_thread *t = &lt_thread_self;
    t->exiting = 1;
    if (t->deferred)
        lt_cond_flush_deferred(); /* never strand a waiter */
    while (t->free) {
        struct lt_qnode *n = t->free;
        t->free = n->pool_next;
        free(n);
    }
    t->nfree = 0;
    for (unsigned i = 0; i < lt_nalgos; i++)
        if (lt_algos[i]->thread_exit)
            lt_algos[i]->thread_exit();
    lt_stats_thread_exit();
}

static void make_exit_key(void)
{
    if (pthread_key_create(&exit_key, thread_exit) != 0) {
        fputs("locktune: error: pthread_key_create failed\n", stderr);
        abort();
    }
    pthread_atfork(NULL, NULL, child_after_fork);
}

void lt_thread_register(void)
{
    struct lt_thread *t = &lt_thread_self;
    if (t->registered || t->exiting)
        return;
    pthread_once(&exit_key_once, make_exit_key);
    t->registered = 1;
    pthread_setspecific(exit_key, t); /* any non-NULL value: the destructor runs at exit */
}

int32_t lt_thread_init_tid(void)
{
    pthread_once(&exit_key_once, make_exit_key); /* installs the fork handler */
    lt_thread_self.tid = (int32_t)syscall(SYS_gettid);
    return lt_thread_self.tid;
}

struct lt_qnode *lt_qnode_alloc(void)
{
    struct lt_qnode *n = aligned_alloc(_Alignof(struct lt_qnode), sizeof *n);
    if (!n) {
        fputs("locktune: error: out of memory for a lock queue node\n", stderr);
        abort();
    }
    lt_thread_register(); /* its pool is freed when it exits */
    return n;
}

void lt_qnode_release(struct lt_qnode *n)
{
    struct lt_thread *t = &lt_thread_self;
    if (!t->registered && !t->exiting)
        lt_thread_register(); /* a node handed over by another thread: keep it */
    if (t->nfree >= LT_QNODE_POOL_MAX || t->exiting) {
        free(n);
        return;
    }
    n->pool_next = t->free;
    t->free = n;
    t->nfree++;
}
