/* A function returns with the lock held (lookup-and-lock); its caller unlocks. */
#include <pthread.h>
#include <stdio.h>

#define THREADS 4
#define ITERS 3000
#define ENTRIES 32

struct entry {
    pthread_mutex_t lock;
    long hits;
};

static struct entry entries[ENTRIES];

static struct entry *find_locked(int key)
{
    struct entry *e = &entries[key % ENTRIES];
    pthread_mutex_lock(&e->lock);
    return e;
}

static void *worker(void *arg)
{
    long id = (long)arg;
    for (int i = 0; i < ITERS; i++) {
        struct entry *e = find_locked(i * 5 + (int)id);
        e->hits++;
        pthread_mutex_unlock(&e->lock);
    }
    return NULL;
}

int main(void)
{
    for (int i = 0; i < ENTRIES; i++)
        pthread_mutex_init(&entries[i].lock, NULL);
    pthread_t t[THREADS];
    for (long i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    long total = 0, most = 0;
    for (int i = 0; i < ENTRIES; i++) {
        total += entries[i].hits;
        if (entries[i].hits > most)
            most = entries[i].hits;
    }
    printf("hits %ld most %ld\n", total, most);
    return 0;
}
// KEPT: ends in another function
