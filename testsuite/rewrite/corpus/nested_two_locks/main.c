/* Bank transfers: two account locks taken in a fixed order, nested sections. */
#include <pthread.h>
#include <stdio.h>

#define THREADS 4
#define ITERS 3000
#define ACCOUNTS 8

struct account {
    pthread_mutex_t lock;
    long balance;
};

static struct account accounts[ACCOUNTS];

static void transfer(int from, int to, long amount)
{
    struct account *first = &accounts[from < to ? from : to];
    struct account *second = &accounts[from < to ? to : from];
    pthread_mutex_lock(&first->lock);
    pthread_mutex_lock(&second->lock);
    accounts[from].balance -= amount;
    accounts[to].balance += amount;
    pthread_mutex_unlock(&second->lock);
    pthread_mutex_unlock(&first->lock);
}

static void *worker(void *arg)
{
    long id = (long)arg;
    for (int i = 0; i < ITERS; i++) {
        int from = (int)((i + id) % ACCOUNTS);
        int to = (int)((i * 3 + id + 1) % ACCOUNTS);
        if (from != to)
            transfer(from, to, 1 + i % 5);
    }
    return NULL;
}

int main(void)
{
    for (int i = 0; i < ACCOUNTS; i++) {
        pthread_mutex_init(&accounts[i].lock, NULL);
        accounts[i].balance = 1000;
    }
    pthread_t t[THREADS];
    for (long i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    long total = 0;
    for (int i = 0; i < ACCOUNTS; i++) {
        total += accounts[i].balance;
        printf("account %d %ld\n", i, accounts[i].balance);
    }
    printf("total %ld\n", total);
    return 0;
}
// CHECK: lt_mutex_init(&accounts[i].lock, NULL, LT_SITE_MAIN_C_43);
