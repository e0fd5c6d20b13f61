/* Lock wrapper functions around locks static to this file, as memcached's item_lock(hv),
 * with their results checked: other files lock a slot through them. */
#include <assert.h>
#include <pthread.h>
#include <stdlib.h>

#include "slots.h"

#define LOCKS 8

static pthread_mutex_t slot_locks[LOCKS];

void slots_init(void)
{
    for (int i = 0; i < LOCKS; i++)
        pthread_mutex_init(&slot_locks[i], NULL);
}

void slot_lock(unsigned hv)
{
    if (pthread_mutex_lock(&slot_locks[hv % LOCKS]) != 0)
        abort();
}

void slot_unlock(unsigned hv)
{
    int rc = pthread_mutex_unlock(&slot_locks[hv % LOCKS]);
    assert(rc == 0);
    (void)rc;
}
// CHECK-FILE: slots.c
// CHECK: void slot_lock(unsigned hv)
// CHECK: lt_mutex_t *lt_lock_of_slot_lock(unsigned hv)
// CHECK-NEXT: {
// CHECK-NEXT: return &slot_locks[hv % LOCKS];
// CHECK-FILE: locktune_config.h
// CHECK: lt_mutex_t *lt_lock_of_slot_lock(unsigned hv);
