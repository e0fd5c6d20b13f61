/* Objects created and destroyed at run time, each with its own lock (one site for all). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define THREADS 4
#define ITERS 1500

struct account {
    pthread_mutex_t lock;
    long balance;
};

static struct account *account_new(long balance)
{
    struct account *a = malloc(sizeof *a);
    if (a == NULL)
        abort();
    if (pthread_mutex_init(&a->lock, NULL) != 0)
        abort();
    a->balance = balance;
    return a;
}

static long account_close(struct account *a)
{
    long left;
    pthread_mutex_lock(&a->lock);
    left = a->balance;
    a->balance = 0;
    pthread_mutex_unlock(&a->lock);
    pthread_mutex_destroy(&a->lock);
    free(a);
    return left;
}

static long closed[THREADS];

static void *worker(void *arg)
{
    long id = (long)arg;
    for (int i = 0; i < ITERS; i++) {
        struct account *a = account_new(i % 10);
        pthread_mutex_lock(&a->lock);
        a->balance += id;
        pthread_mutex_unlock(&a->lock);
        closed[id] += account_close(a);
    }
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
        total += closed[i];
    printf("closed %ld\n", total);
    return 0;
}
// CHECK: if (lt_mutex_init(&a->lock, NULL, LT_SITE_MAIN_C_19) != 0)
// CHECK: lt_mutex_destroy(&a->lock);
