/* Lock calls whose result is checked, the failure branch leaving the program or the
 * function: `if (pthread_mutex_lock(&m) != 0) abort();`, `if (pthread_mutex_lock(&m)) {
 * perror(...); exit(1); }`, a checked lock macro, and a checked unlock.  A default mutex's
 * lock cannot fail in a correct program, so the section is extracted (lt_execute reports a
 * lock it cannot take and aborts). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define THREADS 4
#define ITERS 3000

#define LOCK_OR_DIE(m)                                                                             \
    do {                                                                                           \
        if (pthread_mutex_lock(&(m)) != 0)                                                         \
            abort();                                                                               \
    } while (0)

static pthread_mutex_t a_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t b_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t c_lock = PTHREAD_MUTEX_INITIALIZER;
static long a, b, c, d;

static void add_a(long n)
{
    if (pthread_mutex_lock(&a_lock) != 0)
        abort();
    a += n;
    pthread_mutex_unlock(&a_lock);
}

static int add_b(long n)
{
    if (pthread_mutex_lock(&b_lock)) {
        perror("pthread_mutex_lock");
        exit(1);
    }
    b += n;
    if (pthread_mutex_unlock(&b_lock) != 0)
        return -1;
    return 0;
}

static void add_c(long n)
{
    LOCK_OR_DIE(c_lock);
    c += n;
    d += n % 2;
    pthread_mutex_unlock(&c_lock);
}

/* The check is the only way to its label: dropped with the lock call, it would leave the
 * label unused, so this section is kept. */
static int add_d(long n)
{
    if (pthread_mutex_lock(&c_lock) != 0)
        goto fail;
    d += n;
    pthread_mutex_unlock(&c_lock);
    return 0;
fail:
    return -1;
}

static void *worker(void *arg)
{
    long id = (long)arg;
    for (int i = 0; i < ITERS; i++) {
        add_a(id + 1);
        if (add_b(i) != 0)
            return NULL;
        add_c(i + id);
        if (add_d(1) != 0)
            return NULL;
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
    printf("a %ld b %ld c %ld d %ld\n", a, b, c, d);
    return 0;
}
// EXTRACTED: 3
// KEPT: the only goto to 'fail'
// CHECK: static void add_a(long n)
// CHECK-NEXT: {
// CHECK-NEXT: struct add_a__cs1_ctx lt_cs1 = {.n = n};
// CHECK-NEXT: lt_execute(&a_lock, add_a__cs1, &lt_cs1);
// CHECK-NEXT: }
// CHECK: static int add_b(long n)
// CHECK-NEXT: {
// CHECK-NEXT: struct add_b__cs1_ctx lt_cs1 = {.n = n};
// CHECK-NEXT: lt_execute(&b_lock, add_b__cs1, &lt_cs1);
// CHECK-NEXT: return 0;
// CHECK: static void add_c(long n)
// CHECK-NEXT: {
// CHECK-NEXT: struct add_c__cs1_ctx lt_cs1 = {.n = n};
// CHECK-NEXT: lt_execute(&(c_lock), add_c__cs1, &lt_cs1);
