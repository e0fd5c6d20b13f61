/* Code the preprocessor leaves out, in and around critical sections (memcached's server_stats:
 * an #ifdef PROXY block of the stats section reads the section's local struct).  The rewriter
 * analyses the configuration being compiled; the other one (-DCORPUS_VERBOSE, the OTHER-CONFIG
 * directive) compiles the same text and must behave the same rewritten.
 *
 * after():          the section writes `seen`, which only code after it in the other
 *                   configuration reads: copied back all the same (before: not copied, the
 *                   other configuration counted nothing).
 * inside():         excluded code in the section reads and writes `step`, which the section
 *                   binds by value under its own name and copies back: extracted.
 * by_pointer():     excluded code in the section uses a struct the section reaches through a
 *                   pointer: `t.b` would not become `t->b`, kept.
 * other_variable(): excluded code in the section uses `extra`, a variable only the other
 *                   configuration declares: kept. */
#include <pthread.h>
#include <stdio.h>

#define THREADS 4
#define ITERS 20000

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long counter, checks, copied;
static long history[THREADS];

struct tally {
    long a, b;
};

static void after(long id)
{
    __attribute__((unused)) long seen = 0;
    pthread_mutex_lock(&lock);
    counter++;
    seen = counter;
    pthread_mutex_unlock(&lock);
#ifdef CORPUS_VERBOSE
    history[id] += seen > 0;
#else
    (void)id;
#endif
}

static void inside(long id)
{
    long step = 1 + id % 2;
    pthread_mutex_lock(&lock);
#ifdef CORPUS_VERBOSE
    step = step * 2;
    checks++;
#endif
    counter += step;
    pthread_mutex_unlock(&lock);
#ifdef CORPUS_VERBOSE
    history[id] += step;
#endif
}

static long by_pointer(void)
{
    struct tally t = {0, 0};
    pthread_mutex_lock(&lock);
    t.a = counter > 0;
#ifdef CORPUS_VERBOSE
    t.b = checks > 0;
#endif
    copied += t.a;
    pthread_mutex_unlock(&lock);
    return t.a + t.b;
}

static long other_variable(void)
{
#ifdef CORPUS_VERBOSE
    long extra = 0;
#endif
    long v;
    pthread_mutex_lock(&lock);
    v = counter > 0;
#ifdef CORPUS_VERBOSE
    extra = v;
#endif
    copied += v;
    pthread_mutex_unlock(&lock);
#ifdef CORPUS_VERBOSE
    v = extra;
#endif
    return v;
}

static void *worker(void *arg)
{
    long id = (long)arg, sum = 0;
    for (int i = 0; i < ITERS; i++) {
        after(id);
        inside(id);
        sum += by_pointer() + other_variable();
    }
    history[id] += sum;
    return NULL;
}

int main(void)
{
    pthread_t t[THREADS];
    for (long k = 0; k < THREADS; k++)
        pthread_create(&t[k], NULL, worker, (void *)k);
    for (int k = 0; k < THREADS; k++)
        pthread_join(t[k], NULL);
    long h = 0;
    for (int k = 0; k < THREADS; k++)
        h += history[k];
    printf("counter %ld checks %ld copied %ld history %ld\n", counter, checks, copied, h);
    return 0;
}

// OTHER-CONFIG: -DCORPUS_VERBOSE
// EXTRACTED: 2
// KEPT: which the section reaches through a pointer
// KEPT: 'extra', which excluded code outside the section uses too
// CHECK: static void after(long id)
// CHECK: lt_execute(
// CHECK-NEXT: seen = lt_cs1.out.seen;
