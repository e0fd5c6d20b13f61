/*
 * test_waitpol ALGO [POLICY] - every algorithm under every waiting policy it takes, with many
 * more threads than CPUs (issue 12, item 1).
 *
 * The process pins itself to 2 CPUs and runs the workload in a child started with
 * LOCKTUNE_ALGO=default=ALGO (or ALGO:POLICY) and LOCKTUNE_STATS set, so that the runtime, not
 * this test, says which algorithms take a policy: an algorithm that waits its own way refuses
 * `ALGO:POLICY` at start-up (exit 2, one line naming LOCKTUNE_ALGO), and the test is then
 * skipped (77).  In the child THREADS threads each take the lock ROUNDS times, half by
 * lt_mutex_lock/unlock and half by lt_execute (so the combining locks combine), on one shared
 * counter; the first section, thread 0's, sleeps 50 ms while every other thread queues.
 * Checked:
 *   - mutual exclusion: the counter is exactly THREADS x ROUNDS;
 *   - every thread made progress: each finished its rounds (a starved thread would hold the
 *     run until the deadline);
 *   - bounded time: the child finishes within DEADLINE_S (far above what any policy needs
 *     here, parked FIFO hand-overs included; a collapse of the pure-spin FIFO locks takes
 *     minutes at this size, so the spin forms get a smaller workload: SPIN_ROUNDS);
 *   - the policy is the one asked for, and it is obeyed: the statistics name it ("wait"), a
 *     lock under `park` (the default of the queue and combining locks) parked waiters under
 *     this oversubscription ("parked" > 0), and one under `spin` or `yield` never parked;
 *   - a combining lock with a policy combined ("delegated" > 0: a policy in the lock's flags
 *     once sent every lt_execute to lock, call, unlock).
 * No timing assumption beyond the generous deadline: the assertions are structural.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "locktune.h"

#define THREADS     24
#define ROUNDS      2000
#define SPIN_ROUNDS 100
#define DEADLINE_S  240

static lt_mutex_t lock = LT_MUTEX_INITIALIZER(LT_SITE_UNKNOWN);
static long counter;
static long rounds;
static long finished[THREADS];
static pthread_barrier_t start;
static int held; /* atomic: thread 0 holds the lock for its long first section */

/* About 1 us of work inside: long enough that holders are preempted in their sections and
 * the other CPU's thread finds the lock taken - the waits this test is about. */
static void *section(void *ctx)
{
    long *mine = ctx;
    unsigned x = (unsigned)counter;
    for (int i = 0; i < 400; i++)
        x = x * 1103515245u + 12345u;
    __asm__ __volatile__("" : : "r"(x));
    counter++;
    (*mine)++;
    return NULL;
}

static void *worker(void *arg)
{
    long me = (long)arg;
    long *mine = &finished[me];
    pthread_barrier_wait(&start);
    if (me == 0) {
        /* The first section sleeps 50 ms, so that every other thread queues behind it at once:
         * more waiters than CPUs however quiet the machine - the case the policy is about. */
        CHECK_EQ(lt_mutex_lock(&lock), 0);
        __atomic_store_n(&held, 1, __ATOMIC_RELEASE);
        struct timespec nap = {0, 50000000L};
        nanosleep(&nap, NULL);
        section(mine);
        CHECK_EQ(lt_mutex_unlock(&lock), 0);
    } else {
        while (!__atomic_load_n(&held, __ATOMIC_ACQUIRE))
            sched_yield();
    }
    for (long i = me == 0; i < rounds; i++) {
        if (i & 1) {
            lt_execute(&lock, section, mine);
        } else {
            CHECK_EQ(lt_mutex_lock(&lock), 0);
            section(mine);
            CHECK_EQ(lt_mutex_unlock(&lock), 0);
        }
    }
    return NULL;
}

static int child(void)
{
    pthread_t t[THREADS];
    CHECK_EQ(pthread_barrier_init(&start, NULL, THREADS), 0);
    for (long i = 0; i < THREADS; i++)
        CHECK_EQ(pthread_create(&t[i], NULL, worker, (void *)i), 0);
    for (int i = 0; i < THREADS; i++)
        CHECK_EQ(pthread_join(t[i], NULL), 0);
    CHECK_EQ(counter, (long)THREADS * rounds);
    for (int i = 0; i < THREADS; i++)
        CHECK_EQ(finished[i], rounds);
    CHECK_EQ(lt_mutex_destroy(&lock), 0);
    return 0;
}

/* The value of "key" in the stats document's first site (site 0: the only one used): a
 * number, or -1 for null or a string; *text gets a string value ("" for null).  A missing key
 * fails the test, naming it. */
static long stat_value(const char *doc, const char *key, char *text, size_t len)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\": ", key);
    const char *p = strstr(doc, "\"sites\"");
    CHECK(p != NULL);
    p = strstr(p, pat);
    if (!p) {
        fprintf(stderr, "test_waitpol: the statistics have no \"%s\" for the site:\n%s\n", key,
                doc);
        exit(1);
    }
    p += strlen(pat);
    if (text) {
        text[0] = '\0';
        if (*p == '"') {
            size_t n = strcspn(p + 1, "\"");
            snprintf(text, len, "%.*s", (int)(n < len ? n : len - 1), p + 1);
        }
    }
    if (strncmp(p, "null", 4) == 0 || *p == '"')
        return -1;
    return strtol(p, NULL, 10);
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "--child") == 0) {
        const char *r = getenv("TEST_WAITPOL_ROUNDS");
        rounds = r ? atol(r) : ROUNDS;
        return child();
    }
    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: test_waitpol ALGORITHM [POLICY]\n");
        return 2;
    }
    char spec[128], stats[512], rounds_text[32];
    snprintf(spec, sizeof spec, "%s%s%s", argv[1], argc == 3 ? ":" : "", argc == 3 ? argv[2] : "");
    const char *san = getenv("LOCKTUNE_SANITIZER");
    int spin = argc == 3 && strcmp(argv[2], "park") != 0;
    long n = spin ? SPIN_ROUNDS : ROUNDS;
    if (san && *san)
        n /= 4; /* sanitizers slow every operation down */
    snprintf(rounds_text, sizeof rounds_text, "%ld", n);
    snprintf(stats, sizeof stats, "%s/waitpol-%d.json",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int)getpid());

    /* 2 CPUs, whatever the machine: 24 threads are 12x oversubscribed. */
    cpu_set_t two, all;
    CHECK_EQ(sched_getaffinity(0, sizeof all, &all), 0);
    CPU_ZERO(&two);
    for (int c = 0, k = 0; c < CPU_SETSIZE && k < 2; c++)
        if (CPU_ISSET(c, &all)) {
            CPU_SET(c, &two);
            k++;
        }
    CHECK_EQ(sched_setaffinity(0, sizeof two, &two), 0);

    int err[2];
    CHECK_EQ(pipe(err), 0);
    double t0 = now_s();
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        char algo[160];
        snprintf(algo, sizeof algo, "default=%s", spec);
        setenv("LOCKTUNE_ALGO", algo, 1);
        setenv("LOCKTUNE_STATS", stats, 1);
        setenv("TEST_WAITPOL_ROUNDS", rounds_text, 1);
        dup2(err[1], 2);
        close(err[0]);
        close(err[1]);
        execl("/proc/self/exe", argv[0], "--child", (char *)NULL);
        _exit(127);
    }
    close(err[1]);
    int status = 0;
    for (;;) {
        pid_t w = waitpid(pid, &status, WNOHANG);
        CHECK(w >= 0);
        if (w == pid)
            break;
        if (now_s() - t0 > DEADLINE_S) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            fprintf(stderr, "test_waitpol %s: not finished after %d s (%d threads on 2 CPUs)\n",
                    spec, DEADLINE_S, THREADS);
            return 1;
        }
        struct timespec tick = {0, 20000000L};
        nanosleep(&tick, NULL);
    }
    char msg[1024];
    ssize_t got = read(err[0], msg, sizeof msg - 1);
    msg[got > 0 ? got : 0] = '\0';
    close(err[0]);
    double took = now_s() - t0;
    if (WIFEXITED(status) && WEXITSTATUS(status) == 2 && argc == 3 &&
        strstr(msg, "LOCKTUNE_ALGO") && strstr(msg, "takes no waiting policy")) {
        printf("test_waitpol %s: skipped: %s", spec, msg);
        return 77;
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "test_waitpol %s: the workload failed (status %d): %s\n", spec, status,
                msg);
        return 1;
    }

    FILE *f = fopen(stats, "r");
    CHECK(f != NULL);
    static char doc[1 << 16];
    size_t len = fread(doc, 1, sizeof doc - 1, f);
    doc[len] = '\0';
    fclose(f);
    unlink(stats);
    char wait[32], algorithm[64];
    stat_value(doc, "algorithm", algorithm, sizeof algorithm);
    long parked = stat_value(doc, "parked", NULL, 0);
    long acquisitions = stat_value(doc, "acquisitions", NULL, 0);
    long delegated = stat_value(doc, "delegated", NULL, 0); /* -1: not a delegating lock */
    stat_value(doc, "wait", wait, sizeof wait);
    printf("test_waitpol %s: %d threads on 2 CPUs, %ld acquisitions in %.2f s; algorithm %s, "
           "wait %s, parked %ld, delegated %ld\n",
           spec, THREADS, acquisitions, took, algorithm, wait[0] ? wait : "(its own)", parked,
           delegated);
    CHECK(strcmp(algorithm, argv[1]) == 0);
    CHECK_EQ(acquisitions, (long)THREADS * n);
    if (argc == 3)
        CHECK(strcmp(wait, argv[2]) == 0);
    if (delegated >= 0 && wait[0])
        CHECK(delegated > 0); /* ccsynch, dsmsynch: lt_execute combined, whatever the policy */
    if (strcmp(wait, "park") == 0)
        CHECK(parked > 0); /* oversubscribed: waiters gave their CPUs back */
    else if (wait[0])
        CHECK_EQ(parked, 0); /* spin and yield never sleep in the kernel */
    return 0;
}
