/* Objects declared inside a critical section live until the end of the block around it:
 * a section that stores the address of one (a plain local, a variable-length array) where
 * code after the unlock reads it must stay in place; one whose address only reaches memset
 * and subscripts inside the section is extracted. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define THREADS 4
#define ITERS 3000

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long total, vla_total, scratch_total;

static __attribute__((noinline)) long scribble(long seed)
{
    volatile long junk[64];
    for (int k = 0; k < 64; k++)
        junk[k] = seed * 1000003 + k;
    return junk[seed & 63] & 1;
}

static void publish(long id, int i)
{
    long *where;
    pthread_mutex_lock(&lock);
    long slot = id * 10 + i % 7;
    where = &slot;
    pthread_mutex_unlock(&lock);
    long noise = scribble(id + i);
    pthread_mutex_lock(&lock);
    total += *where + noise - noise;
    pthread_mutex_unlock(&lock);
}

static void spread(int n, long id)
{
    long *row;
    pthread_mutex_lock(&lock);
    long vals[n];
    for (int k = 0; k < n; k++)
        vals[k] = id + k;
    row = vals;
    pthread_mutex_unlock(&lock);
    long noise = scribble(id + n);
    long s = 0;
    for (int k = 0; k < n; k++)
        s += row[k];
    pthread_mutex_lock(&lock);
    vla_total += s + noise - noise;
    pthread_mutex_unlock(&lock);
}

static void local_only(long id)
{
    pthread_mutex_lock(&lock);
    long tmp[4];
    memset(tmp, 0, sizeof tmp);
    tmp[id & 3] = id;
    scratch_total += tmp[0] + tmp[1] + tmp[2] + tmp[3];
    pthread_mutex_unlock(&lock);
}

static void *worker(void *arg)
{
    long id = (long)arg;
    for (int i = 0; i < ITERS; i++) {
        publish(id, i);
        spread(1 + i % 5, id);
        local_only(id + i);
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
    printf("total %ld vla %ld scratch %ld\n", total, vla_total, scratch_total);
    return 0;
}
// KEPT: the address of 'slot'
// KEPT: the address of 'vals'
// EXTRACTED: 3
