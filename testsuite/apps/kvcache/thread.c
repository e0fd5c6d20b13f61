/*
 * thread.c - worker threads and their statistics.
 *
 * As memcached does, the main thread starts the workers and waits on init_lock/init_cond until
 * every one has registered; each worker keeps its request counts in its own thread_stats under
 * its own mutex, and the main thread adds them up at the end.  stats_lock guards the global
 * item counts (struct stats); it is taken inside the cache lock by every link and unlink.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kvcache.h"

pthread_mutex_t stats_lock = PTHREAD_MUTEX_INITIALIZER;

static pthread_mutex_t init_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t init_cond = PTHREAD_COND_INITIALIZER;
static int init_count;

typedef struct {
    pthread_t thread_id;
    struct thread_stats stats;
} WORKER_THREAD;

static WORKER_THREAD *threads;
static int nthreads;

static _Noreturn void die(const char *what, int err)
{
    fprintf(stderr, "kvcache: %s: %s\n", what, strerror(err));
    exit(1);
}

void thread_init(int n)
{
    int err;

    threads = calloc((size_t)n, sizeof(WORKER_THREAD));
    if (threads == NULL)
        die("calloc", errno);
    nthreads = n;
    for (int i = 0; i < n; i++) {
        if ((err = pthread_mutex_init(&threads[i].stats.mutex, NULL)) != 0)
            die("pthread_mutex_init", err);
        LOCKSTATS_NAME(&threads[i].stats.mutex, "thread_stats.mutex");
    }
    LOCKSTATS_NAME(&stats_lock, "stats_lock");
    LOCKSTATS_NAME(&init_lock, "init_lock");
}

struct thread_stats *thread_stats(int index)
{
    return &threads[index].stats;
}

/* Called by each worker once it is ready. */
void thread_registered(void)
{
    mutex_lock(&init_lock);
    init_count++;
    pthread_cond_signal(&init_cond);
    mutex_unlock(&init_lock);

    STATS_LOCK();
    stats.started_threads++;
    STATS_UNLOCK();
}

/* Start the workers, worker(args[i]), wait until all have registered, then join them. */
void threads_run(void *(*worker)(void *), void **args)
{
    int err;

    for (int i = 0; i < nthreads; i++)
        if ((err = pthread_create(&threads[i].thread_id, NULL, worker, args[i])) != 0)
            die("pthread_create", err);

    mutex_lock(&init_lock);
    while (init_count < nthreads)
        pthread_cond_wait(&init_cond, &init_lock);
    mutex_unlock(&init_lock);

    for (int i = 0; i < nthreads; i++)
        pthread_join(threads[i].thread_id, NULL);
}

void threadlocal_stats_aggregate(struct thread_stats *out)
{
    memset(out, 0, sizeof *out);
    for (int i = 0; i < nthreads; i++) {
        struct thread_stats *s = &threads[i].stats;
        mutex_lock(&s->mutex);
        out->get_cmds += s->get_cmds;
        out->get_hits += s->get_hits;
        out->get_misses += s->get_misses;
        out->set_cmds += s->set_cmds;
        out->fills += s->fills;
        out->bytes_read += s->bytes_read;
        out->bytes_written += s->bytes_written;
        mutex_unlock(&s->mutex);
    }
}
