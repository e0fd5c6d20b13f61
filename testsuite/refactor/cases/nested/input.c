/* Nested sections on two locks (always taken in the same order), both extracted; the
 * inner one sees the outer one's variables, and a variable the outer section holds by
 * pointer. */
#include "harness.h"

static pthread_mutex_t outer = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t inner = PTHREAD_MUTEX_INITIALIZER;
static long transfers, a_total, b_total;

static long move(long amount)
{
    long hist[4] = {0, 0, 0, 0};
    long moved = 0;
    pthread_mutex_lock(&outer);
    a_total -= amount;
    hist[amount % 4]++;
    pthread_mutex_lock(&inner);
    b_total += amount;
    moved = amount;
    hist[0] += moved;
    transfers++;
    pthread_mutex_unlock(&inner);
    moved += hist[0] - amount;
    pthread_mutex_unlock(&outer);
    return moved;
}

static void *worker(void *arg)
{
    long id = (long)arg, sum = 0;
    for (int i = 0; i < ITERS; i++)
        sum += move(id + i % 3);
    return (void *)sum;
}

int main(void)
{
    run_threads(worker);
    printf("transfers %ld balance %ld\n", transfers, a_total + b_total);
    return 0;
}
