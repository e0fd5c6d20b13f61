/* pshared - a process-shared mutex in shared memory, used by a parent and its child; and a
 * robust mutex whose owner (the child) dies holding it: the parent gets EOWNERDEAD, marks it
 * consistent, and goes on.  Prints the shared counter and what the parent saw. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define ROUNDS 2000

struct shared {
    pthread_mutex_t counter_lock;
    pthread_mutex_t robust;
    long counter;
};

int main(void)
{
    struct shared *sh =
        mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (sh == MAP_FAILED)
        return 1;
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
    pthread_mutex_init(&sh->counter_lock, &a); /* SITE:pshared */
    pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
    pthread_mutex_init(&sh->robust, &a); /* SITE:robust */
    pthread_mutexattr_destroy(&a);

    pid_t pid = fork();
    if (pid < 0)
        return 1;
    for (int i = 0; i < ROUNDS; i++) {
        pthread_mutex_lock(&sh->counter_lock);
        sh->counter++;
        pthread_mutex_unlock(&sh->counter_lock);
    }
    if (pid == 0) {
        pthread_mutex_lock(&sh->robust);
        _exit(0); /* dies holding it */
    }
    waitpid(pid, NULL, 0);
    int r = pthread_mutex_lock(&sh->robust);
    int consistent = r == EOWNERDEAD ? pthread_mutex_consistent(&sh->robust) : -1;
    pthread_mutex_unlock(&sh->robust);
    int again = pthread_mutex_trylock(&sh->robust);
    if (again == 0)
        pthread_mutex_unlock(&sh->robust);
    printf("counter %ld robust %s consistent %d again %d\n", sh->counter,
           r == EOWNERDEAD ? "EOWNERDEAD" : "other", consistent, again);
    return sh->counter == 2 * ROUNDS && r == EOWNERDEAD && consistent == 0 && again == 0 ? 0 : 1;
}
