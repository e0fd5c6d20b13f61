/* The lock is taken in one function and released in another: the section cannot be
 * extracted, it is kept as lock/unlock calls. */
#include <pthread.h>
#include <stdio.h>

#define THREADS 4
#define ITERS 3000

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static char log_buf[64];
static int log_len;
static long log_lines, log_chars;

static void log_begin(void)
{
    pthread_mutex_lock(&log_lock);
    log_len = 0;
}

static void log_put(char c)
{
    if (log_len < (int)sizeof log_buf - 1)
        log_buf[log_len++] = c;
}

static void log_end(void)
{
    log_lines++;
    log_chars += log_len;
    pthread_mutex_unlock(&log_lock);
}

static void *worker(void *arg)
{
    long id = (long)arg;
    for (int i = 0; i < ITERS; i++) {
        log_begin();
        for (int k = 0; k <= (i + id) % 5; k++)
            log_put((char)('a' + k));
        log_end();
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
    printf("lines %ld chars %ld\n", log_lines, log_chars);
    return 0;
}
// KEPT: function
// CHECK: lt_mutex_lock(&log_lock);
// CHECK: lt_mutex_unlock(&log_lock);
