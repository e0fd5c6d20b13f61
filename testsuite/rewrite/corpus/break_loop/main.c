/* A section inside a loop that leaves the loop with `break` after unlocking. */
#include <pthread.h>
#include <stdio.h>

#define THREADS 4
#define BUDGET 12000

static pthread_mutex_t budget_lock = PTHREAD_MUTEX_INITIALIZER;
static int budget = BUDGET;
static long taken[THREADS];

static void *worker(void *arg)
{
    long id = (long)arg;
    int got = 0;
    for (;;) {
        pthread_mutex_lock(&budget_lock);
        if (budget == 0) {
            pthread_mutex_unlock(&budget_lock);
            break;
        }
        budget--;
        got++;
        pthread_mutex_unlock(&budget_lock);
    }
    taken[id] = got;
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
    for (int i = 0; i < THREADS; i++)
        total += taken[i];
    printf("taken %ld left %d\n", total, budget);
    return 0;
}
// CHECK-NOT: pthread_mutex_lock
// CHECK: static void *worker(void *arg)
// CHECK: intptr_t lt_exit1 = (intptr_t)lt_execute(&budget_lock, worker__cs1, &lt_cs1);
// CHECK-NEXT: if (lt_exit1 == 1) {
// CHECK-NEXT: got = lt_cs1.out.got;
// CHECK-NEXT: break;
// EXTRACTED: 1
