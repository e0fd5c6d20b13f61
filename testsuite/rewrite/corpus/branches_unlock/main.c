/* Every branch of an if/else chain ends the section with its own unlock. */
#include <pthread.h>
#include <stdio.h>

#define THREADS 4
#define ITERS 3000

static pthread_mutex_t stats_lock = PTHREAD_MUTEX_INITIALIZER;
static long small, medium, large;

static const char *classify(int v)
{
    const char *what;
    pthread_mutex_lock(&stats_lock);
    if (v < 10) {
        small++;
        what = "small";
        pthread_mutex_unlock(&stats_lock);
    } else if (v < 100) {
        medium++;
        what = "medium";
        pthread_mutex_unlock(&stats_lock);
    } else {
        large++;
        pthread_mutex_unlock(&stats_lock);
        what = "large";
    }
    return what;
}

static long letters[THREADS];

static void *worker(void *arg)
{
    long id = (long)arg;
    for (int i = 0; i < ITERS; i++)
        letters[id] += classify((i * 13 + (int)id) % 150)[0];
    return NULL;
}

int main(void)
{
    pthread_t t[THREADS];
    for (long i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    long total = 0;
    for (int i = 0; i < THREADS; i++)
        total += letters[i];
    printf("small %ld medium %ld large %ld letters %ld\n", small, medium, large, total);
    return 0;
}
