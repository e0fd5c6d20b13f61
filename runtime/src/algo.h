/*
 * algo.h - the operations table every lock algorithm fills, and the registry that maps an
 * algorithm's name to its table.  One algorithm per file under runtime/src/algo/.
 */
#ifndef LT_ALGO_H
#define LT_ALGO_H

#include "locktune.h"

enum lt_caps {
    LT_CAP_DELEGATES = 1u << 0,     /* lt_execute runs the section on another thread */
    LT_CAP_SUPPORTS_COND = 1u << 1, /* lt_cond_wait may be called inside its sections */
    LT_CAP_BLOCKING = 1u << 2,      /* waiters eventually park in the kernel */
};

struct lt_algo {
    const char *name;
    unsigned caps;
    /* m->_u is zeroed before init; init may allocate. */
    int (*init)(lt_mutex_t *m);
    int (*destroy)(lt_mutex_t *m);
    int (*lock)(lt_mutex_t *m);
    int (*trylock)(lt_mutex_t *m);                                   /* 0 or EBUSY */
    int (*timedlock)(lt_mutex_t *m, const struct timespec *abstime); /* 0 or ETIMEDOUT */
    int (*unlock)(lt_mutex_t *m);
    /* Optional: NULL means "lock, call, unlock". */
    void *(*execute)(lt_mutex_t *m, lt_cs_fn fn, void *ctx);
};

/* Registry (registry.c). */
const struct lt_algo *lt_algo_find(const char *name);
const struct lt_algo *lt_algo_default(void);

extern const struct lt_algo lt_algo_posix;

#endif
