/* A switch inside the section whose `break`s stay inside it, and a section inside a case
 * that leaves the switch with `break` after unlocking. */
#include <pthread.h>
#include <stdio.h>

#define THREADS 4
#define ITERS 3000

static pthread_mutex_t op_lock = PTHREAD_MUTEX_INITIALIZER;
static long adds, subs, muls, skipped;
static long acc;

static void apply(int op, long v)
{
    switch (op) {
    case 3:
        pthread_mutex_lock(&op_lock);
        if (v % 2) {
            skipped++;
            pthread_mutex_unlock(&op_lock);
            break;
        }
        acc = (acc + v) % 1000;
        pthread_mutex_unlock(&op_lock);
        break;
    default:
        pthread_mutex_lock(&op_lock);
        switch (op) {
        case 0:
            adds++;
            break;
        case 1:
            subs++;
            break;
        default:
            muls++;
            break;
        }
        pthread_mutex_unlock(&op_lock);
    }
}

static void *worker(void *arg)
{
    long id = (long)arg;
    for (int i = 0; i < ITERS; i++)
        apply((i + (int)id) % 4, i);
    return NULL;
}

int main(void)
{
    pthread_t t[THREADS];
    for (long i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    printf("adds %ld subs %ld muls %ld skipped %ld\n", adds, subs, muls, skipped);
    return 0;
}
