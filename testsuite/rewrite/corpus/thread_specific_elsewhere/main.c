/* A section calls into another file (stats.c), which calls into a third (journal.c), which
 * finds the calling thread's journal with pthread_getspecific.  No file alone shows that the
 * section depends on its thread: the whole-program pass must.  Shipped to an RCL server
 * thread, the section would find no journal (NULL) and abort; it must run on its caller. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define THREADS 4
#define ITERS 4000

void journal_open(void);
long journal_close(void);
void account(long amount); /* stats.c */
long accounted(void);

static pthread_mutex_t ledger_lock = PTHREAD_MUTEX_INITIALIZER;
static long balance;

static void *worker(void *arg)
{
    long id = (long)arg;
    journal_open();
    for (int i = 0; i < ITERS; i++) {
        pthread_mutex_lock(&ledger_lock);
        balance += id + 1;
        account(id + 1);
        pthread_mutex_unlock(&ledger_lock);
    }
    return (void *)journal_close();
}

int main(void)
{
    pthread_t t[THREADS];
    for (long i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, worker, (void *)i);
    long entries = 0;
    for (int i = 0; i < THREADS; i++) {
        void *n;
        pthread_join(t[i], &n);
        entries += (long)n;
    }
    printf("balance %ld accounted %ld journal entries %ld\n", balance, accounted(), entries);
    return 0;
}
// EXTRACTED: 1
// CHECK: lt_execute_ex(&ledger_lock, worker__cs1, &lt_cs1, LT_EXEC_ON_CALLER);
