/* Locals both read and written in the section (in/out), scalars of several types. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>

#define THREADS 4
#define ITERS 3000

static pthread_mutex_t mix_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t state = 88172645463325252ull;

static uint64_t mix(uint32_t salt)
{
    uint64_t x = salt;
    unsigned char rounds = 3;
    short sign = -1;
    size_t touched = 0;
    pthread_mutex_lock(&mix_lock);
    while (rounds--) {
        x ^= state;
        x *= 0x9E3779B97F4A7C15ull;
        sign = (short)-sign;
        touched++;
    }
    state += 1;
    pthread_mutex_unlock(&mix_lock);
    return (x & 0xff) + touched + (uint64_t)(sign + 1);
}

static uint64_t acc[THREADS];

static void *worker(void *arg)
{
    long id = (long)arg;
    for (int i = 0; i < ITERS; i++)
        acc[id] += mix((uint32_t)i) >= 4;
    return NULL;
}

int main(void)
{
    pthread_t t[THREADS];
    for (long i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    uint64_t total = 0;
    for (int i = 0; i < THREADS; i++)
        total += acc[i];
    printf("calls %llu state %llu\n", (unsigned long long)total,
           (unsigned long long)(state - 88172645463325252ull));
    return 0;
}
