/* rwspin - reader-writer locks and spinlocks with exact counts: READERS threads take the
 * read lock READS times each, one writer takes the write lock WRITES times; every thread
 * takes the spinlock SPINS times; the main thread then makes exactly TRY_FAILS try-locks
 * fail on each. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>

#define READERS   4
#define READS     3000
#define WRITES    500
#define SPINS     700
#define TRY_FAILS 9

static pthread_rwlock_t table = PTHREAD_RWLOCK_INITIALIZER;
static pthread_spinlock_t spin;
static long value, spun;
static int failures;

static void *reader(void *arg)
{
    long seen = 0;
    for (int i = 0; i < READS; i++) {
        pthread_rwlock_rdlock(&table);
        seen += value;
        pthread_rwlock_unlock(&table);
    }
    for (int i = 0; i < SPINS; i++) {
        pthread_spin_lock(&spin);
        spun++;
        pthread_spin_unlock(&spin);
    }
    *(long *)arg = seen;
    return NULL;
}

static void *writer(void *arg)
{
    (void)arg;
    for (int i = 0; i < WRITES; i++) {
        pthread_rwlock_wrlock(&table);
        value++;
        pthread_rwlock_unlock(&table);
    }
    for (int i = 0; i < SPINS; i++) {
        pthread_spin_lock(&spin);
        spun++;
        pthread_spin_unlock(&spin);
    }
    return NULL;
}

static void *try_fail(void *arg)
{
    (void)arg;
    for (int i = 0; i < TRY_FAILS; i++) {
        failures += pthread_rwlock_tryrdlock(&table) == EBUSY;
        failures += pthread_spin_trylock(&spin) == EBUSY;
    }
    return NULL;
}

int main(void)
{
    pthread_spin_init(&spin, PTHREAD_PROCESS_PRIVATE);
    pthread_t r[READERS], w, t;
    long seen[READERS];
    for (int i = 0; i < READERS; i++)
        pthread_create(&r[i], NULL, reader, &seen[i]);
    pthread_create(&w, NULL, writer, NULL);
    for (int i = 0; i < READERS; i++)
        pthread_join(r[i], NULL);
    pthread_join(w, NULL);
    pthread_rwlock_wrlock(&table);
    pthread_spin_lock(&spin);
    pthread_create(&t, NULL, try_fail, NULL);
    pthread_join(t, NULL);
    pthread_spin_unlock(&spin);
    pthread_rwlock_unlock(&table);
    pthread_spin_destroy(&spin);
    printf("value %ld spun %ld failures %d\n", value, spun, failures);
    return value == WRITES && spun == (READERS + 1) * SPINS && failures == 2 * TRY_FAILS ? 0 : 1;
}
