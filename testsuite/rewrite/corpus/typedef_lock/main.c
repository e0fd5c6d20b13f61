/* The project names its own lock type with a typedef and uses that name everywhere. */
#include <pthread.h>
#include <stdio.h>

#define THREADS 4
#define ITERS 3000

typedef pthread_mutex_t spin_t;

struct slot {
    spin_t guard;
    long v;
};

static struct slot slots[4];

static void slot_add(struct slot *s, long d)
{
    pthread_mutex_lock(&s->guard);
    s->v += d;
    pthread_mutex_unlock(&s->guard);
}

static void *worker(void *arg)
{
    long id = (long)arg;
    for (int i = 0; i < ITERS; i++)
        slot_add(&slots[(i + id) % 4], i % 3);
    return NULL;
}

int main(void)
{
    for (int i = 0; i < 4; i++)
        pthread_mutex_init(&slots[i].guard, NULL);
    pthread_t t[THREADS];
    for (long i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    printf("%ld %ld %ld %ld\n", slots[0].v, slots[1].v, slots[2].v, slots[3].v);
    return 0;
}
// CHECK: typedef lt_mutex_t spin_t;
