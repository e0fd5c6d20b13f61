/* A local whose address escapes before the section (registered in a global table): the
 * section must work on the variable itself, not on a copy. */
#include <pthread.h>
#include <stdio.h>

#define THREADS 4
#define ITERS 3000

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static long *registered[THREADS];

static void *worker(void *arg)
{
    long id = (long)arg;
    long mine = 0;
    long *alias = &mine;
    pthread_mutex_lock(&reg_lock);
    registered[id] = &mine;
    pthread_mutex_unlock(&reg_lock);
    for (int i = 0; i < ITERS; i++) {
        pthread_mutex_lock(&reg_lock);
        mine += 1;
        *registered[id] += 1; /* the same variable, through the escaped pointer */
        pthread_mutex_unlock(&reg_lock);
    }
    pthread_mutex_lock(&reg_lock);
    registered[id] = NULL;
    pthread_mutex_unlock(&reg_lock);
    return (void *)*alias;
}

int main(void)
{
    pthread_t t[THREADS];
    long total = 0;
    for (long i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < THREADS; i++) {
        void *r;
        pthread_join(t[i], &r);
        total += (long)r;
    }
    printf("total %ld\n", total);
    return 0;
}
