/* A sorted linked list with hand-over-hand locking: each lock is released in a later
 * iteration than it was taken, so these sections are kept. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define THREADS 4
#define ITERS 600

struct node {
    int key;
    long hits;
    struct node *next;
    pthread_mutex_t lock;
};

static struct node head = {-1, 0, NULL, PTHREAD_MUTEX_INITIALIZER};

static void insert_or_hit(int key)
{
    struct node *prev = &head, *cur;
    pthread_mutex_lock(&prev->lock);
    while ((cur = prev->next) != NULL) {
        pthread_mutex_lock(&cur->lock);
        if (cur->key >= key)
            break;
        pthread_mutex_unlock(&prev->lock);
        prev = cur;
    }
    if (cur != NULL && cur->key == key) {
        cur->hits++;
        pthread_mutex_unlock(&cur->lock);
    } else {
        struct node *n = calloc(1, sizeof *n);
        n->key = key;
        n->hits = 1;
        n->next = cur;
        pthread_mutex_init(&n->lock, NULL);
        prev->next = n;
        if (cur != NULL)
            pthread_mutex_unlock(&cur->lock);
    }
    pthread_mutex_unlock(&prev->lock);
}

static void *worker(void *arg)
{
    long id = (long)arg;
    for (int i = 0; i < ITERS; i++)
        insert_or_hit((i * 7 + (int)id) % 50);
    return NULL;
}

int main(void)
{
    pthread_t t[THREADS];
    for (long i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    long nodes = 0, hits = 0;
    int sorted = 1, last = -1;
    for (struct node *n = head.next; n; n = n->next) {
        nodes++;
        hits += n->hits;
        sorted &= n->key > last;
        last = n->key;
    }
    printf("nodes %ld hits %ld sorted %d\n", nodes, hits, sorted);
    return 0;
}
// CHECK: static struct node head = {-1, 0, NULL, LT_MUTEX_INITIALIZER(LT_SITE_MAIN_C_17)};
