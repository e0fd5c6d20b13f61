/* Two sections in one function on two locks; a local flows from the first to the second. */
#include <pthread.h>
#include <stdio.h>

#define THREADS 4
#define ITERS 3000

static pthread_mutex_t ticket_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t ledger_lock = PTHREAD_MUTEX_INITIALIZER;
static long next_ticket = 1;
static long ledger[16];
static long entries;

static void *worker(void *arg)
{
    long id = (long)arg;
    for (int i = 0; i < ITERS; i++) {
        long ticket, slot;
        pthread_mutex_lock(&ticket_lock);
        ticket = next_ticket++;
        pthread_mutex_unlock(&ticket_lock);
        slot = (ticket + id) % 16;
        pthread_mutex_lock(&ledger_lock);
        ledger[slot] += ticket % 10;
        entries++;
        pthread_mutex_unlock(&ledger_lock);
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
    long total = 0;
    for (int i = 0; i < 16; i++)
        total += ledger[i];
    printf("tickets %ld entries %ld total %ld\n", next_ticket - 1, entries, total);
    return 0;
}
