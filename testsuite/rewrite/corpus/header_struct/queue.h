/* A queue whose lock lives in a struct declared in a header. */
#ifndef QUEUE_H
#define QUEUE_H

#include <pthread.h>

struct job_queue {
    pthread_mutex_t lock;
    pthread_cond_t ready;
    long jobs[32];
    int n;
    long done;
};

void queue_init(struct job_queue *q);
void queue_push(struct job_queue *q, long job);
long queue_pop(struct job_queue *q);

#endif
// CHECK-FILE: queue.h
// CHECK: #include <pthread.h>
// CHECK-NEXT: #include "locktune.h"
// CHECK: lt_mutex_t lock;
// CHECK-NEXT: lt_cond_t ready;
// CHECK-NOT: locktune_config.h
