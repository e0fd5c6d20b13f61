/* forks - a parent and a child both take locks; the child either carries on in the copy
 * (forks plain) or execs this program again (forks exec), which then runs as `forks child`.
 *   parent: PARENT_BEFORE acquisitions, fork, PARENT_AFTER more, wait for the child
 *   child:  CHILD acquisitions, exit 0 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define PARENT_BEFORE 100
#define PARENT_AFTER  200
#define CHILD         1000

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static volatile long n;

static void take(int times)
{
    for (int i = 0; i < times; i++) {
        pthread_mutex_lock(&m);
        n++;
        pthread_mutex_unlock(&m);
    }
}

int main(int argc, char **argv)
{
    const char *how = argc > 1 ? argv[1] : "plain";
    if (strcmp(how, "child") == 0) {
        take(CHILD);
        return 0;
    }
    take(PARENT_BEFORE);
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0)
        return 1;
    if (pid == 0) {
        if (strcmp(how, "exec") == 0) {
            execl("/proc/self/exe", argv[0], "child", (char *)NULL);
            _exit(127);
        }
        take(CHILD);
        _exit(0);
    }
    take(PARENT_AFTER);
    int status = 0;
    waitpid(pid, &status, 0);
    printf("parent %ld child status %d\n", n, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}
