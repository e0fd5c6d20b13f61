/*
 * thread.c - per-thread runtime state (thread.h): tid, PRNG, queue-node pool, the exit hook
 * that releases them, and the list of threads a forked child reads (mutex.c: fork).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "algo.h"
#include "diag.h"
#include "mutex.h"
#include "qnode.h"
#include "stats.h"
#include "thread.h"

__thread struct lt_thread lt_thread_self __attribute__((tls_model("initial-exec")));

static pthread_key_t exit_key;
static pthread_once_t exit_key_once = PTHREAD_ONCE_INIT;

/* ---- the list of threads, and fork ----
 *
 * A thread joins the list when it first learns its tid (every lock operation needs it before
 * it can wait: mutex.c), and leaves it at exit.  The fork handlers below are installed by a
 * constructor, so they are the first registered: the prepare handler runs after the program's
 * own (which may take locks, and so join threads), and the child handler before the
 * program's (which may release locks: those must be consistent by then). */
static pthread_mutex_t list_lock = PTHREAD_MUTEX_INITIALIZER;
static struct lt_thread *list_head;

static void list_join(struct lt_thread *t)
{
    pthread_mutex_lock(&list_lock);
    t->list_prev = NULL;
    t->list_next = list_head;
    if (list_head)
        list_head->list_prev = t;
    list_head = t;
    t->listed = 1;
    pthread_mutex_unlock(&list_lock);
}

static void list_leave(struct lt_thread *t)
{
    pthread_mutex_lock(&list_lock);
    if (t->listed) {
        if (t->list_prev)
            t->list_prev->list_next = t->list_next;
        else
            list_head = t->list_next;
        if (t->list_next)
            t->list_next->list_prev = t->list_prev;
        t->listed = 0;
    }
    pthread_mutex_unlock(&list_lock);
}

/* The runtime's global locks are all held across the fork, so that the child finds each free
 * and what it protects whole: the thread list, the timed waiters (timed.c), the statistics
 * (stats.c), the misuse reports (diag.c).  Taken in that order, the only one in which any two
 * of them nest (a timed hand-off counts under the timed waiters' lock; nothing is taken under
 * the statistics' or the reports' lock, and the rcl servers' locks, with their own handlers in
 * rcl/server.c, never nest with these). */
static void prepare_fork(void)
{
    pthread_mutex_lock(&list_lock); /* no thread is half-way onto the list at the fork */
    lt_mutex_timed_prepare_fork();
    lt_stats_prepare_fork();
    lt_diag_prepare_fork();
}

static void parent_after_fork(void)
{
    lt_diag_parent_after_fork();
    lt_stats_parent_after_fork();
    lt_mutex_timed_parent_after_fork();
    pthread_mutex_unlock(&list_lock);
}

static void child_after_fork(void)
{
    /* The child's only thread is this one.  The other threads' records are still mapped
     * (glibc keeps their stacks, where their TLS lives, until it reuses them for new threads,
     * which cannot happen before the fork handlers return): repair each lock one of them was
     * acquiring or executing on.  Then forget them. */
    struct lt_thread *self = &lt_thread_self;
    int32_t forker = self->tid;
    /* First the statistics and the reports, whole and needing no repair: what follows may count
     * or report (this thread's first count takes the statistics' lock). */
    lt_stats_fork_child();
    lt_diag_fork_child();
    for (struct lt_thread *t = list_head; t; t = t->list_next)
        if (t != self && t->waiting)
            lt_mutex_fork_repair(t->waiting);
    list_head = NULL;
    self->listed = 0;
    pthread_mutex_unlock(&list_lock); /* taken by this thread in prepare_fork */
    /* This thread has a new tid (it joins the list again when it next asks for it), and the
     * condition waiters it deferred waking are threads of the parent. */
    if (forker != 0)
        self->forked_tid = forker; /* the owner field of the locks it holds (mutex.c) */
    self->tid = 0;
    self->deferred = NULL;
    self->deferred_mutex = NULL;
    lt_mutex_after_fork_child();
    lt_mutex_timed_fork_child();
    lt_wait_fork_child();
}

__attribute__((constructor)) static void install_fork_handlers(void)
{
    pthread_atfork(prepare_fork, parent_after_fork, child_after_fork);
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
    list_leave(t);
}

static void make_exit_key(void)
{
    if (pthread_key_create(&exit_key, thread_exit) != 0) {
        fputs("locktune: error: pthread_key_create failed\n", stderr);
        abort();
    }
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
    struct lt_thread *t = &lt_thread_self;
    t->tid = (int32_t)syscall(SYS_gettid);
    if (!t->listed && !t->exiting) {
        lt_thread_register(); /* the exit hook takes it off the list */
        list_join(t);
    }
    return t->tid;
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
