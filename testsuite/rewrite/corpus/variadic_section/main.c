/* Sections of variadic functions (memcached's logger_log: va_start, a callback given the list,
 * va_end, all under the logger's lock).
 *
 * record(): the list is started, read and ended inside the section, and nothing else uses it.
 * The extracted function is not variadic, so the caller starts a list around the call and the
 * section's va_start becomes a va_copy of it.  The early exit (ring full) leaves before the
 * section's va_start: the caller's list is ended all the same.
 * sum_ints(): va_arg in a loop, on a list the section starts twice (the second pass reads the
 * same arguments again from the first): extracted.
 * tally(): the list is started before the lock and read inside the section: kept. */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>

#define THREADS 6
#define ITERS 2000

static pthread_mutex_t ring_lock = PTHREAD_MUTEX_INITIALIZER;
static char ring[1 << 15];
static size_t used;
static long written, dropped, total, tallied;

static void format_into(char *out, size_t room, const char *fmt, va_list ap)
{
    vsnprintf(out, room, fmt, ap);
}

static int record(const char *fmt, ...)
{
    va_list ap;
    size_t n;
    pthread_mutex_lock(&ring_lock);
    if (used + 32 > sizeof ring) {
        dropped++;
        pthread_mutex_unlock(&ring_lock);
        return -1;
    }
    va_start(ap, fmt);
    format_into(ring + used, 32, fmt, ap);
    va_end(ap);
    n = 0;
    while (ring[used + n])
        n++;
    used += n;
    written++;
    pthread_mutex_unlock(&ring_lock);
    return (int)n;
}

static long sum_ints(int count, ...)
{
    va_list ap;
    long s = 0;
    pthread_mutex_lock(&ring_lock);
    for (int pass = 0; pass < 2; pass++) {
        va_start(ap, count);
        for (int k = 0; k < count; k++)
            s += va_arg(ap, int);
        va_end(ap);
    }
    total += s;
    pthread_mutex_unlock(&ring_lock);
    return s;
}

static void tally(int count, ...)
{
    va_list ap;
    va_start(ap, count);
    pthread_mutex_lock(&ring_lock);
    for (int k = 0; k < count; k++)
        tallied += va_arg(ap, int);
    pthread_mutex_unlock(&ring_lock);
    va_end(ap);
}

static void *worker(void *arg)
{
    long id = (long)arg;
    for (int i = 0; i < ITERS; i++) {
        record("%ld:%d;", id, i % 10);
        sum_ints(3, (int)id, i % 7, 1);
        tally(2, i % 3, 1);
    }
    return NULL;
}

int main(void)
{
    pthread_t t[THREADS];
    for (long k = 0; k < THREADS; k++)
        pthread_create(&t[k], NULL, worker, (void *)k);
    for (int k = 0; k < THREADS; k++)
        pthread_join(t[k], NULL);
    size_t colons = 0;
    for (size_t k = 0; k < used; k++)
        colons += ring[k] == ':';
    printf("written %ld dropped %ld colons %zu total %ld tallied %ld\n", written, dropped, colons,
           total, tallied);
    return 0;
}

// EXTRACTED: 2
// KEPT: the section uses va_arg()
// CHECK: static void *record__cs1(void *lt_arg)
// CHECK: va_copy(ap, *lt_ctx->
// CHECK: static int record(const char *fmt, ...)
// CHECK: va_start(lt_va1, fmt);
// CHECK-NEXT: lt_cs1
// CHECK-NEXT: lt_execute(
// CHECK-NEXT: va_end(lt_va1);
// CHECK: static void *sum_ints__cs1(void *lt_arg)
// CHECK: va_copy(ap, *lt_ctx->
