/* harness.h - runs a test program's worker on more threads than this machine has CPUs. */
#ifndef HARNESS_H
#define HARNESS_H

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define NTHREADS 4
#define ITERS 2000

static inline void run_threads(void *(*fn)(void *))
{
    pthread_t t[NTHREADS];
    long i;
    for (i = 0; i < NTHREADS; i++)
        if (pthread_create(&t[i], NULL, fn, (void *)i) != 0)
            abort();
    for (i = 0; i < NTHREADS; i++)
        pthread_join(t[i], NULL);
}

#endif
