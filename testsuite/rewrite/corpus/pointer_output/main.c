/* A free list: the section's output is a pointer, used after the section. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define THREADS 4
#define ITERS 3000

struct obj {
    struct obj *next;
    long uses;
};

static pthread_mutex_t free_lock = PTHREAD_MUTEX_INITIALIZER;
static struct obj *free_list;
static long allocations;

static struct obj *obj_get(void)
{
    struct obj *o;
    pthread_mutex_lock(&free_lock);
    o = free_list;
    if (o != NULL)
        free_list = o->next;
    pthread_mutex_unlock(&free_lock);
    if (o == NULL) {
        o = calloc(1, sizeof *o);
        pthread_mutex_lock(&free_lock);
        allocations++;
        pthread_mutex_unlock(&free_lock);
    }
    return o;
}

static void obj_put(struct obj *o)
{
    pthread_mutex_lock(&free_lock);
    o->next = free_list;
    free_list = o;
    pthread_mutex_unlock(&free_lock);
}

static void *worker(void *arg)
{
    (void)arg;
    for (int i = 0; i < ITERS; i++) {
        struct obj *o = obj_get();
        o->uses++;
        obj_put(o);
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
    long uses = 0, objects = 0;
    while (free_list) {
        struct obj *o = free_list;
        free_list = o->next;
        uses += o->uses;
        objects++;
        free(o);
    }
    printf("uses %ld all returned %s\n", uses, objects == allocations ? "yes" : "no");
    return 0;
}
