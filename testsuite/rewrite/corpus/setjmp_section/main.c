/* setjmp/longjmp inside the section (a parser bailing out): kept, a jump must not cross
 * into another thread. */
#include <pthread.h>
#include <setjmp.h>
#include <stdio.h>

#define THREADS 4
#define ITERS 2000

static pthread_mutex_t parse_lock = PTHREAD_MUTEX_INITIALIZER;
static long parsed, rejected;

static void check_digit(jmp_buf *env, int c)
{
    if (c < '0' || c > '9')
        longjmp(*env, 1);
}

static int parse(const char *s)
{
    jmp_buf env;
    volatile int value = 0;
    pthread_mutex_lock(&parse_lock);
    if (setjmp(env) == 0) {
        for (const char *p = s; *p; p++) {
            check_digit(&env, *p);
            value = value * 10 + (*p - '0');
        }
        parsed++;
    } else {
        rejected++;
        value = -1;
    }
    pthread_mutex_unlock(&parse_lock);
    return value;
}

static long sums[THREADS];

static void *worker(void *arg)
{
    static const char *inputs[] = {"12", "7x", "345", "", "9", "a1"};
    long id = (long)arg;
    for (int i = 0; i < ITERS; i++) {
        int v = parse(inputs[(i + id) % 6]);
        if (v > 0)
            sums[id] += v;
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
    for (int i = 0; i < THREADS; i++)
        total += sums[i];
    printf("parsed %ld rejected %ld sum %ld\n", parsed, rejected, total);
    return 0;
}
// KEPT: setjmp
