/*
 * test_fork ALGO - fork with locks held through pthread_atfork handlers, in the middle of
 * delegated work (issue 12, item 5).  LOCKTUNE_ALGO chooses the algorithm; ALGO is a label.
 *
 * The program registers its fork handlers before it uses any lock, as a library does: the
 * prepare handler takes every one of its locks, the parent and child handlers release them.
 * Worker threads execute sections on those locks back to back (lt_execute, and lock/unlock),
 * each section counting itself in its thread's slot.  The main thread forks 20 times; each
 * child, whose worker threads are gone:
 *   - takes and releases every lock (lock/unlock, lt_execute, lt_execute_trylock), many times;
 *   - finds every worker's count exactly what it was at the fork (recorded by the prepare
 *     handler, all locks held): no section a dead thread had published ever runs;
 *   - exits 0 within 20 s (a hung child is killed and the test fails).
 * The parent goes on: its workers' counts keep growing.
 *
 * test_fork ALGO churn (LOCKTUNE_STATS set) adds threads that come and go around the forks:
 * each takes and releases a lock of its own once - its first count, which puts its statistics
 * table on the runtime's list - and exits, which takes it off.  Each child starts such a thread
 * too.  A fork that copied the statistics' lock held by one of them hung the child at its new
 * thread's first count (stats.c, "fork").  Skipped under the sanitizers: a thread's start and
 * exit allocate and free, and GCC 12's AddressSanitizer does not lock its allocator around a
 * fork (the child could hang in it, copied held); ThreadSanitizer, as above.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "locktune.h"

#define NLOCKS      3
#define NWORKERS    8 /* on 2 CPUs: oversubscribed, so locks have queues at the fork */
#define FORKS       20
#define FORKS_CHURN 100 /* the window is a few microseconds of each thread's start and exit */
#define CHILD_OPS   200

static lt_mutex_t locks[NLOCKS] = {LT_MUTEX_INITIALIZER(1), LT_MUTEX_INITIALIZER(2),
                                   LT_MUTEX_INITIALIZER(3)};
static long counts[NLOCKS][NWORKERS + 1]; /* [i][w] under locks[i]; slot NWORKERS: main */
static long at_fork[NLOCKS][NWORKERS + 1];
static long progress[NWORKERS]; /* atomic */
static int stop;                /* atomic */
static bool churn;              /* set before any thread starts */
static lt_mutex_t churn_lock = LT_MUTEX_INITIALIZER(4);
static long churned; /* atomic: churn threads that ran */

/* A thread that counts once and exits (churn): on churn_lock in the parent; in the child on
 * locks[0], free there (churn_lock may be held by a thread the child lost, and stays held). */
static void *count_once(void *arg)
{
    lt_mutex_t *m = arg;
    CHECK_EQ(lt_mutex_lock(m), 0);
    CHECK_EQ(lt_mutex_unlock(m), 0);
    __atomic_fetch_add(&churned, 1, __ATOMIC_RELAXED);
    return arg;
}

static void *churner(void *arg)
{
    while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
        pthread_t t;
        CHECK_EQ(pthread_create(&t, NULL, count_once, &churn_lock), 0);
        CHECK_EQ(pthread_join(t, NULL), 0);
    }
    return arg;
}

static void *bump(void *arg)
{
    (*(long *)arg)++;
    return arg;
}

static void prepare(void)
{
    for (int i = 0; i < NLOCKS; i++)
        CHECK_EQ(lt_mutex_lock(&locks[i]), 0);
    memcpy(at_fork, counts, sizeof at_fork); /* stable: every lock is held */
}

static void release_all(void)
{
    for (int i = NLOCKS - 1; i >= 0; i--)
        CHECK_EQ(lt_mutex_unlock(&locks[i]), 0);
}

static void *worker(void *arg)
{
    int w = (int)(long)arg;
    for (long n = 0; !__atomic_load_n(&stop, __ATOMIC_RELAXED); n++) {
        for (int i = 0; i < NLOCKS; i++) {
            if (n % 4 == 3) {
                CHECK_EQ(lt_mutex_lock(&locks[i]), 0);
                counts[i][w]++;
                CHECK_EQ(lt_mutex_unlock(&locks[i]), 0);
            } else {
                CHECK(lt_execute(&locks[i], bump, &counts[i][w]) == &counts[i][w]);
            }
        }
        __atomic_store_n(&progress[w], n + 1, __ATOMIC_RELAXED);
    }
    return NULL;
}

static void child(void)
{
    if (churn) { /* a new thread's first count: the statistics' lock is free here */
        pthread_t t;
        CHECK_EQ(pthread_create(&t, NULL, count_once, &locks[0]), 0);
        CHECK_EQ(pthread_join(t, NULL), 0);
    }
    for (int k = 0; k < CHILD_OPS; k++)
        for (int i = 0; i < NLOCKS; i++) {
            long *mine = &counts[i][NWORKERS];
            CHECK(lt_execute(&locks[i], bump, mine) == mine);
            CHECK_EQ(lt_mutex_lock(&locks[i]), 0);
            (*mine)++;
            CHECK_EQ(lt_mutex_unlock(&locks[i]), 0);
            void *r = NULL;
            CHECK_EQ(lt_execute_trylock(&locks[i], bump, mine, &r), 0); /* we are alone */
            CHECK(r == mine);
        }
    for (int i = 0; i < NLOCKS; i++) {
        CHECK_EQ(lt_mutex_lock(&locks[i]), 0);
        for (int w = 0; w < NWORKERS; w++)
            if (counts[i][w] != at_fork[i][w]) {
                fprintf(stderr,
                        "child: lock %d: a dead thread's section ran (worker %d: %ld at "
                        "the fork, %ld now)\n",
                        i, w, at_fork[i][w], counts[i][w]);
                exit(1);
            }
        CHECK_EQ(counts[i][NWORKERS], at_fork[i][NWORKERS] + 3 * CHILD_OPS);
        CHECK_EQ(lt_mutex_unlock(&locks[i]), 0);
    }
    /* _exit: the dead threads' per-thread memory (queue nodes, records) is unreachable here,
     * and LeakSanitizer's exit-time check would call it a leak. */
    _exit(0);
}

int main(int argc, char **argv)
{
    if (argc != 2 && !(argc == 3 && strcmp(argv[2], "churn") == 0)) {
        fprintf(stderr, "usage: test_fork ALGO [churn] (LOCKTUNE_ALGO chooses it; the name is a "
                        "label)\n");
        return 2;
    }
    churn = argc == 3;
    const char *san = getenv("LOCKTUNE_SANITIZER");
    if (san && strcmp(san, "tsan") == 0) {
        printf("test_fork: ThreadSanitizer cannot start threads in a forked child: skipped\n");
        return 77;
    }
    if (churn && san && *san) {
        printf("test_fork churn: threads start and exit at the forks, and the sanitizer's "
               "allocator is not locked around a fork (see the header): skipped\n");
        return 77;
    }
    printf("test_fork %s%s\n", argv[1], churn ? " churn" : "");
    CHECK_EQ(pthread_atfork(prepare, release_all, release_all), 0);
    pthread_t t[NWORKERS], c[2];
    for (long w = 0; w < NWORKERS; w++)
        CHECK_EQ(pthread_create(&t[w], NULL, worker, (void *)w), 0);
    for (int k = 0; churn && k < 2; k++)
        CHECK_EQ(pthread_create(&c[k], NULL, churner, NULL), 0);
    int forks = churn ? FORKS_CHURN : FORKS;
    for (int f = 0; f < forks; f++) {
        for (int w = 0; w < NWORKERS; w++) { /* every worker is in the middle of its work */
            long p = __atomic_load_n(&progress[w], __ATOMIC_RELAXED);
            while (__atomic_load_n(&progress[w], __ATOMIC_RELAXED) < p + 2)
                sched_yield();
        }
        fflush(NULL);
        pid_t pid = fork();
        CHECK(pid >= 0);
        if (pid == 0)
            child();
        int status = 0;
        double give_up = now_s() + 20;
        pid_t r;
        while ((r = waitpid(pid, &status, WNOHANG)) == 0 && now_s() < give_up) {
            struct timespec ms = {0, 1000000}; /* a bounded poll for the child's exit */
            nanosleep(&ms, NULL);
        }
        if (r == 0) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            fprintf(stderr, "test_fork %s: fork %d: the child hung (20 s)\n", argv[1], f);
            return 1;
        }
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            fprintf(stderr, "test_fork %s: fork %d: the child failed (status %#x)\n", argv[1], f,
                    status);
            return 1;
        }
    }
    __atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
    for (int w = 0; w < NWORKERS; w++)
        pthread_join(t[w], NULL);
    for (int k = 0; churn && k < 2; k++)
        pthread_join(c[k], NULL);
    if (churn)
        printf("test_fork %s churn: %ld threads came and went\n", argv[1],
               __atomic_load_n(&churned, __ATOMIC_RELAXED));
    printf("test_fork %s: ok (%d forks)\n", argv[1], forks);
    return 0;
}
