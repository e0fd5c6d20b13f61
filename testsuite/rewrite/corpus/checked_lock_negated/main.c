/* Lock and unlock calls checked through a success flag, as some libraries write their lock
 * layer: LOCK_(m) is `(!(pthread_mutex_lock((m))))`, true when the lock was taken, and the
 * checked form `if (!LOCK_(m)) PANIC(...)` sits in a `do { } while (0)` statement macro.
 * PANIC calls a handler through a pointer (not a noreturn function) and then says the code
 * after it cannot be reached (libmicrohttpd's mhd_locks.h and MHD_PANIC are written so).
 * That library also tests for glibc's static initialiser with `#if defined(...)`, which the
 * rewrite leaves as it is, and writes each lock and unlock call inside an `#if` of its own:
 * extracted, the call goes where the lock's #if group was and the code as it was after an
 * #else, for the configuration without threads (OTHER-CONFIG).  With two different
 * conditions the section is kept: its code would start with an #endif. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define THREADS 4
#define ITERS 3000

static void die(const char *file, unsigned line, const char *msg)
{
    fprintf(stderr, "%s:%u: %s\n", file, line, msg);
    abort();
}

static void (*panic_handler)(const char *, unsigned, const char *) = die;

#define PANIC(msg)                                                                                 \
    do {                                                                                           \
        panic_handler(__FILE__, __LINE__, msg);                                                    \
        __builtin_unreachable();                                                                   \
    } while (0)

#define LOCK_(m)   (!(pthread_mutex_lock((m))))
#define UNLOCK_(m) (!(pthread_mutex_unlock((m))))

#define LOCK_CHK_(m)                                                                               \
    do {                                                                                           \
        if (!LOCK_(m))                                                                             \
            PANIC("cannot lock");                                                                  \
    } while (0)

#define UNLOCK_CHK_(m)                                                                             \
    do {                                                                                           \
        if (!UNLOCK_(m))                                                                           \
            PANIC("cannot unlock");                                                                \
    } while (0)

struct counter {
    pthread_mutex_t lock;
    long value, odd;
};

#if defined(PTHREAD_MUTEX_INITIALIZER)
static struct counter hits = {PTHREAD_MUTEX_INITIALIZER, 0, 0};
static struct counter misses = {PTHREAD_MUTEX_INITIALIZER, 0, 0};
#else
#error "no static mutex initialiser"
#endif

#ifndef USE_THREADS
#define USE_THREADS 1
#endif

static void hit(long n)
{
    LOCK_CHK_(&hits.lock);
    hits.value += n;
    hits.odd += n % 2;
    UNLOCK_CHK_(&hits.lock);
}

static void miss(struct counter *c, long n)
{
    if (!LOCK_(&c->lock))
        PANIC("miss");
    c->value += n;
    UNLOCK_CHK_(&c->lock);
}

static void guarded(long n)
{
#if USE_THREADS
    LOCK_CHK_(&misses.lock);
#endif
    misses.odd += n;
#if USE_THREADS
    UNLOCK_CHK_(&misses.lock);
#endif
}

static void mismatched(long n)
{
#if USE_THREADS
    LOCK_CHK_(&hits.lock);
#endif
    hits.odd += n;
#if USE_THREADS > 0
    UNLOCK_CHK_(&hits.lock);
#endif
}

static void *worker(void *arg)
{
    long id = (long)arg;
    for (int i = 0; i < ITERS; i++) {
        hit(i + id);
        miss(&misses, id + 1);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    (void)argv;
    if (argc > 1)
        PANIC("no arguments expected");
    pthread_t t[THREADS];
    for (long i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    guarded(7);
    mismatched(3);
    printf("hits %ld odd %ld misses %ld odd %ld\n", hits.value, hits.odd, misses.value, misses.odd);
    return 0;
}
// EXTRACTED: 3
// KEPT: belongs to a conditional opened before the section
// OTHER-CONFIG: -DUSE_THREADS=0
// CHECK: static void hit(long n)
// CHECK-NEXT: {
// CHECK-NEXT: struct hit__cs1_ctx lt_cs1 = {.n = n};
// CHECK-NEXT: lt_execute((&hits.lock), hit__cs1, &lt_cs1);
// CHECK-NEXT: }
// CHECK: static void miss(struct counter *c, long n)
// CHECK-NEXT: {
// CHECK-NEXT: struct miss__cs1_ctx lt_cs1 = {.c = c, .n = n};
// CHECK-NEXT: lt_execute((&c->lock), miss__cs1, &lt_cs1);
// CHECK-NEXT: }
// CHECK: #if USE_THREADS
// CHECK-NEXT: /* Critical section of guarded() on (&misses.lock)
// CHECK: #endif
// CHECK: static void guarded(long n)
// CHECK-NEXT: {
// CHECK-NEXT: #if USE_THREADS
// CHECK-NEXT: struct guarded__cs1_ctx lt_cs1 = {.n = n};
// CHECK-NEXT: lt_execute((&misses.lock), guarded__cs1, &lt_cs1);
// CHECK-NEXT: #else
// CHECK-NEXT: misses.odd += n;
// CHECK-NEXT: #endif
// CHECK-NEXT: }
