/* procs - the launched process takes a lock a little; the heavy locking happens in other
 * processes, which the profiler must see too (testsuite/profiler/test_processes.py).
 *   procs fork N     the parent takes parent_lock PARENT times, then forks N workers; each
 *                    runs THREADS threads that take work_lock PER_THREAD times each.
 *   procs exec N     the same, but each forked worker execs this program as `procs worker`.
 *   procs replace    the parent takes parent_lock PARENT times, then execs `procs worker`
 *                    in its own process (same pid, a new program).
 *   procs run PATH   the parent part, then one forked child execs `PATH worker` (another
 *                    program: a build of this one without debug information, say).
 *   procs worker     a worker alone.
 * Every process prints what it did: "parent <pid> <acquisitions>" and
 * "worker <pid> <parent pid> <acquisitions>". */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define PARENT     10
#define THREADS    3
#define PER_THREAD 20000

static pthread_mutex_t parent_lock = PTHREAD_MUTEX_INITIALIZER; /* SITE:parent_lock */
static pthread_mutex_t work_lock = PTHREAD_MUTEX_INITIALIZER;   /* SITE:work_lock */
static long parent_count, work_count;
static volatile long spin;

static void *work(void *arg)
{
    (void)arg;
    for (int i = 0; i < PER_THREAD; i++) {
        pthread_mutex_lock(&work_lock);
        work_count++;
        for (int k = 0; k < 50; k++) /* some work in the section: the workers' lock is hot */
            spin++;
        pthread_mutex_unlock(&work_lock);
    }
    return NULL;
}

static int worker(void)
{
    pthread_t th[THREADS];
    for (int i = 0; i < THREADS; i++)
        if (pthread_create(&th[i], NULL, work, NULL) != 0)
            return 1;
    for (int i = 0; i < THREADS; i++)
        pthread_join(th[i], NULL);
    printf("worker %ld %ld %ld\n", (long)getpid(), (long)getppid(), work_count);
    fflush(stdout);
    return work_count == (long)THREADS * PER_THREAD ? 0 : 1;
}

static void parent_part(void)
{
    for (int i = 0; i < PARENT; i++) {
        pthread_mutex_lock(&parent_lock);
        parent_count++;
        pthread_mutex_unlock(&parent_lock);
    }
    printf("parent %ld %ld\n", (long)getpid(), parent_count);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    const char *how = argc > 1 ? argv[1] : "fork";
    int n = argc > 2 ? atoi(argv[2]) : 2;
    if (strcmp(how, "worker") == 0)
        return worker();
    parent_part();
    if (strcmp(how, "replace") == 0) {
        execl("/proc/self/exe", argv[0], "worker", (char *)NULL);
        return 127;
    }
    int failed = 0;
    if (strcmp(how, "run") == 0) {
        pid_t pid = fork();
        if (pid == 0) {
            execl(argv[2], argv[2], "worker", (char *)NULL);
            _exit(127);
        }
        int status = 0;
        return pid < 0 || waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) ||
               WEXITSTATUS(status) != 0;
    }
    for (int i = 0; i < n; i++) {
        pid_t pid = fork();
        if (pid < 0)
            return 1;
        if (pid == 0) {
            if (strcmp(how, "exec") == 0) {
                execl("/proc/self/exe", argv[0], "worker", (char *)NULL);
                _exit(127);
            }
            exit(worker());
        }
    }
    for (int i = 0; i < n; i++) {
        int status = 0;
        if (wait(&status) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
            failed = 1;
    }
    return failed;
}
