/* A bounded stack: push and pop give up early, unlocking on the way out. */
#include <pthread.h>
#include <stdio.h>

#define THREADS 4
#define ITERS 3000
#define CAPACITY 64

static pthread_mutex_t stack_lock = PTHREAD_MUTEX_INITIALIZER;
static int stack[CAPACITY];
static int depth;
static long pushed, popped, full, empty;

static int push(int v)
{
    pthread_mutex_lock(&stack_lock);
    if (depth == CAPACITY) {
        full++;
        pthread_mutex_unlock(&stack_lock);
        return -1;
    }
    stack[depth++] = v;
    pushed++;
    pthread_mutex_unlock(&stack_lock);
    return 0;
}

static void pop(long *total)
{
    pthread_mutex_lock(&stack_lock);
    if (depth == 0) {
        empty++;
        pthread_mutex_unlock(&stack_lock);
        return;
    }
    *total += stack[--depth];
    popped++;
    pthread_mutex_unlock(&stack_lock);
}

static long totals[THREADS], pushed_values[THREADS];

static void *worker(void *arg)
{
    long id = (long)arg;
    for (int i = 0; i < ITERS; i++) {
        if ((i + id) % 3 != 2) {
            if (push(i % 100) == 0)
                pushed_values[id] += i % 100;
        }
        else
            pop(&totals[id]);
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
    long total = 0, left = 0, in = 0;
    for (int i = 0; i < THREADS; i++) {
        total += totals[i];
        in += pushed_values[i];
    }
    while (depth > 0)
        left += stack[--depth];
    /* every value pushed is either popped or still there */
    printf("pushed+full %ld popped+empty %ld conserved %s\n", pushed + full, popped + empty,
           total + left == in ? "yes" : "no");
    return 0;
}
// CHECK: static lt_mutex_t stack_lock = LT_MUTEX_INITIALIZER(LT_SITE_MAIN_C_9);
// CHECK-NOT: pthread_mutex_
// CHECK: static void *push__cs1(void *lt_arg)
// CHECK: return (void *)1;
// CHECK: static int push(int v)
// CHECK: intptr_t lt_exit1 = (intptr_t)lt_execute(&stack_lock, push__cs1, &lt_cs1);
// CHECK-NEXT: if (lt_exit1 == 1) {
// CHECK-NEXT: return -1;
// EXTRACTED: 2
