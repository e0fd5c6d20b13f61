/* A variable declared in the section and used after it is declared at the call site. */
#include "harness.h"

struct item {
    int key, refs;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct item table[32];
static long misses;

static int lookup(int key)
{
    pthread_mutex_lock(&lock);
    struct item *it = &table[key % 32];
    int hit = it->key == key;
    if (!hit) {
        it->key = key;
        misses++;
    }
    it->refs++;
    pthread_mutex_unlock(&lock);
    return hit ? it->refs : 0;
}

static void *worker(void *arg)
{
    long id = (long)arg, sum = 0;
    for (int i = 0; i < ITERS; i++)
        sum += lookup((int)(i % 40 + id)) > 0;
    return (void *)sum;
}

int main(void)
{
    int refs = 0;
    run_threads(worker);
    for (int i = 0; i < 32; i++)
        refs += table[i].refs;
    printf("refs %d misses>0 %d\n", refs, misses > 0);
    return 0;
}
