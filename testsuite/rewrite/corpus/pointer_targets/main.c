/* Sections that call through file-scope function pointers assigned in another file.  The
 * whole-program pass follows each pointer to the functions assigned to it: `hash` reaches
 * two pure hash functions (the section may run on a server thread), `get_id` reaches
 * pthread_self() (the section runs on its caller: the id it records is the caller's). */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "hash.h"

#define THREADS 4
#define ITERS 2000

static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned buckets[64];
static pthread_mutex_t owner_lock = PTHREAD_MUTEX_INITIALIZER;
static long mismatches;

static void insert(const char *key)
{
    size_t len = strlen(key);
    pthread_mutex_lock(&table_lock);
    buckets[hash(key, len) % 64]++;
    pthread_mutex_unlock(&table_lock);
}

static unsigned peek(const char *key)
{
    unsigned n;
    pthread_mutex_lock(&table_lock);
    n = buckets[(*hash)(key, strlen(key)) % 64];
    pthread_mutex_unlock(&table_lock);
    return n;
}

static void check_owner(pthread_t me)
{
    pthread_mutex_lock(&owner_lock);
    if (get_id() != (unsigned long)me)
        mismatches++;
    pthread_mutex_unlock(&owner_lock);
}

static void *worker(void *arg)
{
    char key[32];
    for (int i = 0; i < ITERS; i++) {
        snprintf(key, sizeof key, "key-%ld-%d", (long)arg, i);
        insert(key);
        check_owner(pthread_self());
    }
    return NULL;
}

int main(void)
{
    hash_init(1);
    pthread_t t[THREADS];
    for (long i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    unsigned total = 0, most = 0;
    for (int b = 0; b < 64; b++) {
        total += buckets[b];
        most = buckets[b] > most ? buckets[b] : most;
    }
    printf("inserted %u fullest %u mismatches %ld key-0-0's bucket %u\n", total, most, mismatches,
           peek("key-0-0"));
    return 0;
}
// EXTRACTED: 3
// CHECK: static void insert(const char *key)
// CHECK: lt_execute(&table_lock, insert__cs1, &lt_cs1);
// CHECK: static unsigned peek(const char *key)
// CHECK: lt_execute(&table_lock, peek__cs1, &lt_cs1);
// CHECK: static void check_owner(pthread_t me)
// CHECK: lt_execute_ex(&owner_lock, check_owner__cs1, &lt_cs1, LT_EXEC_ON_CALLER);
