/* exits - end in a chosen way after exactly LOCKS acquisitions of one lock:
 *   exits worker   a worker thread calls exit(3) while main waits for it forever
 *   exits _exit    main calls _exit(4): no exit handlers, no destructors
 *   exits signal   write the pid to PIDFILE (argv[2]), then lock forever until killed */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LOCKS 1234

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static volatile long n;

static void take(long times)
{
    for (long i = 0; i < times; i++) {
        pthread_mutex_lock(&m);
        n++;
        pthread_mutex_unlock(&m);
    }
}

static void *worker(void *arg)
{
    (void)arg;
    take(LOCKS);
    printf("worker exits\n");
    fflush(stdout);
    exit(3);
}

int main(int argc, char **argv)
{
    const char *how = argc > 1 ? argv[1] : "worker";
    if (strcmp(how, "worker") == 0) {
        pthread_t t;
        pthread_create(&t, NULL, worker, NULL);
        pthread_join(t, NULL);
        return 0; /* never reached */
    }
    if (strcmp(how, "_exit") == 0) {
        take(LOCKS);
        printf("leaving through _exit\n");
        fflush(stdout);
        _exit(4);
    }
    if (strcmp(how, "signal") == 0 && argc > 2) {
        take(LOCKS);
        FILE *f = fopen(argv[2], "w");
        if (!f)
            return 1;
        fprintf(f, "%d\n", (int)getpid());
        fclose(f);
        for (;;) {
            take(1);
            usleep(100);
        }
    }
    return 2;
}
