/* sizeof of a local array and __func__ inside the section keep their meaning. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define THREADS 4
#define ITERS 2000

static pthread_mutex_t name_lock = PTHREAD_MUTEX_INITIALIZER;
static char last_caller[32];
static long bytes;

static void note(void)
{
    char buf[24];
    pthread_mutex_lock(&name_lock);
    snprintf(buf, sizeof buf, "%s", __func__);
    bytes += (long)sizeof buf + (long)sizeof(buf[0]);
    strcpy(last_caller, buf);
    pthread_mutex_unlock(&name_lock);
}

static void *worker(void *arg)
{
    (void)arg;
    for (int i = 0; i < ITERS; i++)
        note();
    return NULL;
}

int main(void)
{
    pthread_t t[THREADS];
    for (long i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    printf("caller %s bytes %ld\n", last_caller, bytes);
    return 0;
}
