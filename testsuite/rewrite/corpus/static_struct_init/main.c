/* Locks statically initialised inside struct initialisers: a global struct and an array
 * of structs; each definition is one site. */
#include <pthread.h>
#include <stdio.h>

#define THREADS 4
#define ITERS 3000

struct counter {
    const char *name;
    pthread_mutex_t lock;
    long value;
};

static struct counter total = {.name = "total", .lock = PTHREAD_MUTEX_INITIALIZER, .value = 0};
static struct counter shards[] = {
    {"a", PTHREAD_MUTEX_INITIALIZER, 0},
    {"b", PTHREAD_MUTEX_INITIALIZER, 0},
    {"c", PTHREAD_MUTEX_INITIALIZER, 0},
};

static void add(struct counter *c, long v)
{
    pthread_mutex_lock(&c->lock);
    c->value += v;
    pthread_mutex_unlock(&c->lock);
}

static void *worker(void *arg)
{
    long id = (long)arg;
    for (int i = 0; i < ITERS; i++) {
        add(&shards[(i + id) % 3], 1);
        add(&total, 2);
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
    for (int i = 0; i < 3; i++)
        printf("%s %ld\n", shards[i].name, shards[i].value);
    printf("%s %ld\n", total.name, total.value);
    return 0;
}
// CHECK: .lock = LT_MUTEX_INITIALIZER(LT_SITE_MAIN_C_15)
// CHECK: {"a", LT_MUTEX_INITIALIZER(LT_SITE_MAIN_C_16), 0},
// CHECK-NEXT: {"b", LT_MUTEX_INITIALIZER(LT_SITE_MAIN_C_16), 0},
