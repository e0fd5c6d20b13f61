/* churn - the profiler's lock table under concurrent births and deaths.
 *
 *   churn churn     THREADS threads each create, use and destroy ROUNDS heap locks (the
 *                   same site: SITE:churn), while all of them also race to first-use the
 *                   never-initialised static locks of racy[] (SITE:racy).
 *   churn many N    keep N heap locks alive at once, each locked once: more than the lock
 *                   table holds must be reported as untracked, not lost silently. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define THREADS 8
#define ROUNDS  4000
#define USES    3
#define RACY    64

pthread_mutex_t racy[RACY]; /* SITE:racy */
static pthread_barrier_t start;
static long total[THREADS];

static void *churn(void *arg)
{
    long id = (long)arg, n = 0;
    pthread_barrier_wait(&start);
    for (int i = 0; i < RACY; i++) { /* everyone at once: first uses race */
        pthread_mutex_lock(&racy[(i + id) % RACY]);
        n++;
        pthread_mutex_unlock(&racy[(i + id) % RACY]);
    }
    for (int r = 0; r < ROUNDS; r++) {
        pthread_mutex_t *m = malloc(sizeof *m);
        if (!m)
            abort();
        pthread_mutex_init(m, NULL); /* SITE:churn */
        for (int u = 0; u < USES; u++) {
            pthread_mutex_lock(m);
            n++;
            pthread_mutex_unlock(m);
        }
        pthread_mutex_destroy(m);
        free(m);
    }
    total[id] = n;
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc > 2 && strcmp(argv[1], "many") == 0) {
        long count = atol(argv[2]);
        pthread_mutex_t *locks = calloc((size_t)count, sizeof *locks);
        if (!locks)
            return 1;
        for (long i = 0; i < count; i++)
            pthread_mutex_init(&locks[i], NULL); /* SITE:many */
        for (long i = 0; i < count; i++) {
            pthread_mutex_lock(&locks[i]);
            pthread_mutex_unlock(&locks[i]);
        }
        printf("many %ld\n", count);
        return 0;
    }
    pthread_t t[THREADS];
    pthread_barrier_init(&start, NULL, THREADS);
    for (long i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, churn, (void *)i);
    long sum = 0;
    for (int i = 0; i < THREADS; i++) {
        pthread_join(t[i], NULL);
        sum += total[i];
    }
    printf("churn %ld\n", sum);
    return sum == (long)THREADS * (RACY + ROUNDS * USES) ? 0 : 1;
}
