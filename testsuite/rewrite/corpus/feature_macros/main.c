/* Feature-test macros and a conditional include block before the first code: the
 * locktune include goes after all of them. */
#define _GNU_SOURCE
#define _FILE_OFFSET_BITS 64

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#if defined(__linux__)
#include <sys/types.h>
#endif

#define THREADS 4
#define ITERS 3000

static pthread_mutex_t name_lock = PTHREAD_MUTEX_INITIALIZER;
static char longest[32] = "";

static void offer(const char *name)
{
    pthread_mutex_lock(&name_lock);
    if (strlen(name) > strlen(longest))
        strncpy(longest, name, sizeof longest - 1);
    pthread_mutex_unlock(&name_lock);
}

static void *worker(void *arg)
{
    static const char *names[] = {"ab", "abcdef", "abc", "abcdefgh", "a"};
    long id = (long)arg;
    for (int i = 0; i < ITERS; i++)
        offer(names[(i + id) % 5]);
    return NULL;
}

int main(void)
{
    pthread_t t[THREADS];
    for (long i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    printf("longest %s\n", longest);
    return 0;
}
// CHECK: #define _FILE_OFFSET_BITS 64
// CHECK: #include <sys/types.h>
// CHECK-NEXT: #endif
// CHECK-NEXT: #include "locktune.h"
// CHECK-NEXT: #include "locktune_config.h"
