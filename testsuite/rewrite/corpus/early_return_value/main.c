/* A lookup returns a value computed under the lock from inside the section. */
#include <pthread.h>
#include <stdio.h>

#define THREADS 4
#define ITERS 3000
#define SLOTS 97

struct table {
    pthread_mutex_t lock;
    int keys[SLOTS];
    long values[SLOTS];
};

static struct table table;

static long lookup_or_insert(int key, long value)
{
    int slot = key % SLOTS;
    pthread_mutex_lock(&table.lock);
    for (int probe = 0; probe < SLOTS; probe++) {
        int s = (slot + probe) % SLOTS;
        if (table.keys[s] == key) {
            long found = table.values[s];
            table.values[s] += value;
            pthread_mutex_unlock(&table.lock);
            return found;
        }
        if (table.keys[s] == 0) {
            table.keys[s] = key;
            table.values[s] = value;
            pthread_mutex_unlock(&table.lock);
            return -1;
        }
    }
    pthread_mutex_unlock(&table.lock);
    return -2;
}

static long inserts[THREADS];

static void *worker(void *arg)
{
    long id = (long)arg;
    for (int i = 0; i < ITERS; i++)
        if (lookup_or_insert(1 + (i * 7 + (int)id) % 60, 1) == -1)
            inserts[id]++;
    return NULL;
}

int main(void)
{
    pthread_mutex_init(&table.lock, NULL);
    pthread_t t[THREADS];
    for (long i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    long total = 0, ins = 0;
    for (int s = 0; s < SLOTS; s++)
        total += table.values[s];
    for (int i = 0; i < THREADS; i++)
        ins += inserts[i];
    printf("total %ld inserted %ld\n", total, ins);
    pthread_mutex_destroy(&table.lock);
    return 0;
}
// CHECK: lt_mutex_t lock;
// CHECK: lt_mutex_init(&table.lock, NULL, LT_SITE_MAIN_C_53);
// CHECK: lt_mutex_destroy(&table.lock);
