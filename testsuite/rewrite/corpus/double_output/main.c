/* Floating-point outputs of the section (they must not travel through a void *). */
#include <pthread.h>
#include <stdio.h>

#define THREADS 4
#define ITERS 3000

static pthread_mutex_t acct_lock = PTHREAD_MUTEX_INITIALIZER;
static double balance = 1000.0;
static float fee_total;

static double withdraw(double amount)
{
    double before, after;
    float fee;
    pthread_mutex_lock(&acct_lock);
    before = balance;
    fee = (float)(amount * 0.5);
    balance -= amount;
    balance += amount; /* returned at once */
    fee_total += fee;
    after = balance;
    pthread_mutex_unlock(&acct_lock);
    return after - before + fee;
}

static double got[THREADS];

static void *worker(void *arg)
{
    long id = (long)arg;
    for (int i = 0; i < ITERS; i++)
        got[id] += withdraw(1.0 + (i % 4) * 0.25);
    return NULL;
}

int main(void)
{
    pthread_t t[THREADS];
    for (long i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    double total = 0;
    for (int i = 0; i < THREADS; i++)
        total += got[i];
    printf("balance %.2f fees %.2f got %.2f\n", balance, (double)fee_total, total);
    return 0;
}
