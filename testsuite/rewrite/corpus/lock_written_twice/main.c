/* One lock written two ways in one function: taken through a local pointer to its job and
 * released through the array (zstd's ZSTDMT_getFrameProgression: `&jobPtr->job_mutex`, then
 * `&mtctx->jobs[wJobID].job_mutex`).
 *
 * flushable(): the pointer and the index it was made from are never changed after their
 * initialisation, so the pointer stands for `&jobs[slot]` and the two spellings name one lock:
 * extracted.  progress(): the pointer is made from the loop counter, which the function changes
 * (k++), so that both name one lock is not proven (no flow analysis): kept, and the reason
 * says so.  The same loop written with one spelling is extracted. */
#include <pthread.h>
#include <stdio.h>

#define THREADS 4
#define JOBS 8
#define ITERS 3000

struct job {
    pthread_mutex_t mutex;
    long produced, consumed, looked;
};

static struct job jobs[JOBS];

static void produce(long i)
{
    struct job *j = &jobs[i % JOBS];
    pthread_mutex_lock(&j->mutex);
    j->produced += i;
    pthread_mutex_unlock(&j->mutex);
}

static long progress(void)
{
    long sum = 0;
    for (int k = 0; k < JOBS; k++) {
        struct job *j = &jobs[k];
        pthread_mutex_lock(&j->mutex);
        sum += j->produced - j->consumed;
        j->consumed++;
        pthread_mutex_unlock(&jobs[k].mutex);
    }
    return sum;
}

static long flushable(long i)
{
    long left;
    unsigned const slot = (unsigned)i % JOBS;
    struct job *const j = &jobs[slot];
    pthread_mutex_lock(&j->mutex);
    left = j->produced - j->consumed;
    j->looked++;
    pthread_mutex_unlock(&jobs[slot].mutex);
    return left;
}

static void *worker(void *arg)
{
    long base = (long)arg;
    for (long i = 0; i < ITERS; i++) {
        produce(base + i);
        if (i % 100 == 0)
            progress();
        if (i % 50 == 0)
            flushable(i);
    }
    return NULL;
}

int main(void)
{
    pthread_t t[THREADS];
    for (int k = 0; k < JOBS; k++)
        pthread_mutex_init(&jobs[k].mutex, NULL);
    for (long k = 0; k < THREADS; k++)
        pthread_create(&t[k], NULL, worker, (void *)(k * ITERS));
    for (int k = 0; k < THREADS; k++)
        pthread_join(t[k], NULL);
    long produced = 0, consumed = 0, looked = 0;
    for (int k = 0; k < JOBS; k++)
        produced += jobs[k].produced, consumed += jobs[k].consumed, looked += jobs[k].looked;
    printf("produced %ld consumed %ld looked %ld\n", produced, consumed, looked);
    return 0;
}

// EXTRACTED: 2
// KEPT: not proven to be the lock &j->mutex taken here
// CHECK: static void *produce__cs1(void *lt_arg)
// CHECK: static void *flushable__cs1(void *lt_arg)
