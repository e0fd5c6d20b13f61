/* A compound literal lives as long as the block it is written in: a section that keeps a
 * pointer to one after its unlock must stay in place (moved into a function, the literal
 * would die with it).  A literal used only inside its section does not hold that back. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define THREADS 4
#define ITERS 3000

static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
static long rounds, sum, inside;

/* Uses stack below its caller's frame, as any call after the section may. */
static __attribute__((noinline)) long scribble(long seed)
{
    volatile long junk[64];
    for (int k = 0; k < 64; k++)
        junk[k] = seed * 1000003 + k;
    return junk[seed & 63] & 1;
}

static void step(long id, int i)
{
    const long *w;
    pthread_mutex_lock(&table_lock);
    rounds++;
    w = (const long[]){id, i, id + i};
    pthread_mutex_unlock(&table_lock);
    long noise = scribble(id + i);
    long s = 0;
    for (int j = 0; j < 3; j++)
        s += w[j];
    pthread_mutex_lock(&table_lock);
    sum += s + noise - noise;
    pthread_mutex_unlock(&table_lock);
}

static void count(long id)
{
    pthread_mutex_lock(&table_lock);
    const long *v = (const long[]){id, 2 * id};
    inside += v[0] + v[1];
    pthread_mutex_unlock(&table_lock);
}

static void *worker(void *arg)
{
    long id = (long)arg;
    for (int i = 0; i < ITERS; i++) {
        step(id, i);
        count(id);
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
    printf("rounds %ld sum %ld inside %ld\n", rounds, sum, inside);
    return 0;
}
// KEPT: compound literal
// EXTRACTED: 2
