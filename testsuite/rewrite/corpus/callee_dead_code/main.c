/* A section that calls a function which takes and releases a lock of its own around a switch
 * whose last case ends in a break, followed by a do { } while (0) (memcached's LOGGER_LOG):
 * Clang's CFG has an empty block there that nothing reaches.  The check of callees took it for
 * a path from the function's entry to the unlock, said the callee "releases &c->lock without
 * taking it", and kept the caller's section. */
#include <pthread.h>
#include <stdio.h>

#define THREADS 4
#define TURNS 3000

struct counter {
    pthread_mutex_t lock;
    long kinds[3];
};

static pthread_mutex_t outer = PTHREAD_MUTEX_INITIALIZER;
static struct counter counter = {.lock = PTHREAD_MUTEX_INITIALIZER};
static long total;

static void classify(struct counter *c, long v)
{
    for (int i = 0; i < 2; i++) {
        if (v % 2 == i) {
            int kind = 0;
            pthread_mutex_lock(&c->lock);
            switch (v % 3) {
            case 0:
                kind = 0;
                break;
            case 1:
                kind = 1;
                break;
            default:
                kind = 2;
                break;
            }
            do {
                if (kind >= 0)
                    c->kinds[kind]++;
            } while (0);
            pthread_mutex_unlock(&c->lock);
        }
    }
}

static void *worker(void *arg)
{
    long id = (long)arg;
    for (long t = 0; t < TURNS; t++) {
        pthread_mutex_lock(&outer);
        classify(&counter, id * TURNS + t);
        total += t;
        pthread_mutex_unlock(&outer);
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
    printf("total %ld kinds %ld %ld %ld\n", total, counter.kinds[0], counter.kinds[1],
           counter.kinds[2]);
    return 0;
}
// CHECK: static void *worker(void *arg)
// CHECK: lt_execute(&outer, worker__cs1, &lt_cs1);
// EXTRACTED: 2
