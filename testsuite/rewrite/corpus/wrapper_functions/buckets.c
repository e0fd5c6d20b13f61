/* The locks are static to this file; other files lock a bucket through its functions. */
#include <pthread.h>

#include "buckets.h"

#define LOCKS 8

static pthread_mutex_t bucket_locks[LOCKS];

void buckets_init(void)
{
    for (int i = 0; i < LOCKS; i++)
        pthread_mutex_init(&bucket_locks[i], NULL);
}

void bucket_lock(unsigned hv)
{
    pthread_mutex_lock(&bucket_locks[hv % LOCKS]);
}

void bucket_unlock(unsigned hv)
{
    pthread_mutex_unlock(&bucket_locks[hv % LOCKS]);
}
// CHECK-FILE: buckets.c
// CHECK: void bucket_lock(unsigned hv)
// CHECK: lt_mutex_t *lt_lock_of_bucket_lock(unsigned hv)
// CHECK-NEXT: {
// CHECK-NEXT: return &bucket_locks[hv % LOCKS];
// CHECK-FILE: locktune_config.h
// CHECK: lt_mutex_t *lt_lock_of_bucket_lock(unsigned hv);
