#ifndef POOL_H
#define POOL_H

#include "lockutil.h"

struct pool {
    my_mutex lock;
    long taken;
};

/* An init wrapper with external linkage: its signature is its callers' API, so its locks
 * keep its one site (a note says so). */
int pool_init(struct pool *p);
void pool_take(struct pool *p, long n);

#endif
