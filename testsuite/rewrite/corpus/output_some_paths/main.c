/* A local written on some paths of the section only: its earlier value must survive the
 * paths that do not write it. */
#include <pthread.h>
#include <stdio.h>

#define THREADS 4
#define ITERS 3000

static pthread_mutex_t cfg_lock = PTHREAD_MUTEX_INITIALIZER;
static int cfg_version;
static int cfg_value = 100;

static int reader(int want_fresh)
{
    int value = -1; /* kept when the section does not write it */
    pthread_mutex_lock(&cfg_lock);
    if (want_fresh && cfg_version % 2 == 0)
        value = cfg_value;
    pthread_mutex_unlock(&cfg_lock);
    return value;
}

static void writer(void)
{
    pthread_mutex_lock(&cfg_lock);
    cfg_version++;
    pthread_mutex_unlock(&cfg_lock);
}

static long stale[THREADS], fresh[THREADS];

static void *worker(void *arg)
{
    long id = (long)arg;
    for (int i = 0; i < ITERS; i++) {
        if (i % 10 == 0) {
            writer();
            continue;
        }
        int v = reader(i % 2);
        if (v == -1)
            stale[id]++;
        else if (v == 100)
            fresh[id]++;
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
    long s = 0, f = 0;
    for (int i = 0; i < THREADS; i++) {
        s += stale[i];
        f += fresh[i];
    }
    /* which reads are fresh depends on timing; that every read is one or the other does not */
    printf("reads %ld version %d\n", s + f, cfg_version);
    return 0;
}
// CHECK: static int reader(int want_fresh)
// CHECK: int value = -1;
// CHECK: .value = value}};
// CHECK-NEXT: lt_execute(&cfg_lock, reader__cs1, &lt_cs1);
// CHECK-NEXT: value = lt_cs1.out.value;
