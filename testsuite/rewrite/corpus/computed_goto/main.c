/* A tiny bytecode interpreter with computed goto (GNU C) running under a lock: kept. */
#include <pthread.h>
#include <stdio.h>

#define THREADS 4
#define ITERS 2000

static pthread_mutex_t vm_lock = PTHREAD_MUTEX_INITIALIZER;
static long vm_acc;
static long vm_steps;

static void run(const unsigned char *code)
{
    static void *ops[] = {&&op_halt, &&op_inc, &&op_dbl};
    pthread_mutex_lock(&vm_lock);
    const unsigned char *pc = code;
    goto *ops[*pc++];
op_inc:
    vm_acc++;
    vm_steps++;
    goto *ops[*pc++];
op_dbl:
    vm_acc = (vm_acc * 2) % 1000003;
    vm_steps++;
    goto *ops[*pc++];
op_halt:
    pthread_mutex_unlock(&vm_lock);
}

static void *worker(void *arg)
{
    static const unsigned char prog[] = {1, 1, 2, 1, 0};
    (void)arg;
    for (int i = 0; i < ITERS; i++)
        run(prog);
    return NULL;
}

int main(void)
{
    pthread_t t[THREADS];
    for (long i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    printf("steps %ld\n", vm_steps);
    return 0;
}
// KEPT: goto
