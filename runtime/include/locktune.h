/*
 * locktune.h - the runtime API that rewritten programs see.
 *
 * Every lock algorithm of liblocktune sits behind this one API; which algorithm a lock runs
 * is chosen per *site* (the file:line where the lock comes to life) by locktune_config.h or by
 * the LOCKTUNE_ALGO environment variable.  The names below are a contract between the
 * rewriter (refactor/, cocci/) and the runtime: change them in both places or not at all.
 *
 * Return values follow POSIX (0, EBUSY, ETIMEDOUT, EINVAL, EPERM, EDEADLK...).
 */
#ifndef LOCKTUNE_H
#define LOCKTUNE_H

#include <pthread.h>
#include <stdint.h>
#include <time.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define LT_API __attribute__((visibility("default")))
#else
#define LT_API
#endif

/* Site id used by locks that no generated header describes (site 0 = "unknown site"). */
#define LT_SITE_UNKNOWN 0

/*
 * lt_mutex_t: fixed-size and statically initialisable.  Algorithm state lives inline in
 * `u` (most algorithms need one or two words) or, for the few that need more, behind a
 * pointer the runtime allocates on first use.  The fields are the runtime's: programs must
 * only use the functions and macros below.
 */
struct lt_mutex {
    const void *_ops; /* algorithm bound to this lock (NULL until first use) */
    int32_t _site;    /* site id from LT_MUTEX_INITIALIZER / lt_mutex_init */
    uint32_t _flags;  /* mutex type (normal/recursive/errorcheck) and runtime bits */
    int32_t _owner;   /* owner's kernel tid for recursive/error-checking types, else 0 */
    uint32_t _count;  /* recursion depth */
    union {
        pthread_mutex_t _posix; /* the `posix` algorithm keeps glibc's mutex inline */
        uint64_t _words[6];     /* every other algorithm: its words, or a pointer */
    } _u;
};
typedef struct lt_mutex lt_mutex_t;

struct lt_cond {
    uint32_t _seq;     /* futex word: bumped by every signal/broadcast */
    uint32_t _waiters; /* threads blocked in lt_cond_wait */
    uint64_t _pad[2];
};
typedef struct lt_cond lt_cond_t;

/* Static initialisers.  `site` is the id locktune_config.h gives the lock's site. */
#define LT_MUTEX_INITIALIZER(site)                                                                 \
    {                                                                                              \
        0, (site), 0, 0, 0,                                                                        \
        {                                                                                          \
            PTHREAD_MUTEX_INITIALIZER                                                              \
        }                                                                                          \
    }
#define LT_COND_INITIALIZER                                                                        \
    {                                                                                              \
        0, 0,                                                                                      \
        {                                                                                          \
            0, 0                                                                                   \
        }                                                                                          \
    }

LT_API int lt_mutex_init(lt_mutex_t *m, const pthread_mutexattr_t *attr, int site);
LT_API int lt_mutex_destroy(lt_mutex_t *m);
LT_API int lt_mutex_lock(lt_mutex_t *m);
LT_API int lt_mutex_trylock(lt_mutex_t *m);
LT_API int lt_mutex_timedlock(lt_mutex_t *m, const struct timespec *abstime);
LT_API int lt_mutex_unlock(lt_mutex_t *m);

/* A critical section extracted into a function: runs fn(ctx) under m and returns its result.
 * Depending on the lock's algorithm it runs locally, on a combiner or on an RCL server. */
typedef void *(*lt_cs_fn)(void *ctx);
LT_API void *lt_execute(lt_mutex_t *m, lt_cs_fn fn, void *ctx);
/* lt_execute with hints the rewriter derives from the section's code (flags may be 0):
 *   LT_EXEC_ON_CALLER  the section depends on its thread's identity (thread-local variables,
 *                      pthread_self()): it must run on the calling thread, never be shipped
 *   LT_EXEC_MAY_WAIT   the section may call lt_cond_wait/lt_cond_timedwait: a combiner must
 *                      not block in it on another thread's behalf */
enum {
    LT_EXEC_ON_CALLER = 1u << 0,
    LT_EXEC_MAY_WAIT = 1u << 1,
};
LT_API void *lt_execute_ex(lt_mutex_t *m, lt_cs_fn fn, void *ctx, unsigned flags);
/* Like lt_execute, but returns EBUSY without running fn when m is not immediately free. */
LT_API int lt_execute_trylock(lt_mutex_t *m, lt_cs_fn fn, void *ctx, void **result);

LT_API int lt_cond_init(lt_cond_t *c, const pthread_condattr_t *attr);
LT_API int lt_cond_wait(lt_cond_t *c, lt_mutex_t *m);
LT_API int lt_cond_timedwait(lt_cond_t *c, lt_mutex_t *m, const struct timespec *abstime);
LT_API int lt_cond_signal(lt_cond_t *c);
LT_API int lt_cond_broadcast(lt_cond_t *c);
LT_API int lt_cond_destroy(lt_cond_t *c);

/*
 * Per-site configuration (docs/config.md).  locktune_config.h, generated by `locktune rewrite`,
 * holds one entry per site and registers its table from a constructor in every translation
 * unit that includes it (identical tables are registered once).  LOCKTUNE_ALGO overrides it.
 */
struct lt_site_config {
    int id;           /* > 0; the number passed to LT_MUTEX_INITIALIZER / lt_mutex_init */
    const char *file; /* where the lock comes to life, relative to the source root */
    int line;
    const char *name;      /* the lock as written (variable, field, array), for people */
    const char *algorithm; /* registry name: "posix", "mcs", "shfl-block", "rcl", ... */
    int server;            /* RCL server number (0, 1, ...), or -1 for "not on a server" */
};
LT_API void lt_config_register(const struct lt_site_config *sites, unsigned count);

#define LT_CONFIG_REGISTER(table)                                                                  \
    __attribute__((constructor)) static void lt_config_register_##table(void)                      \
    {                                                                                              \
        lt_config_register(table, (unsigned)(sizeof(table) / sizeof((table)[0])));                 \
    }

/* Name of the algorithm a lock runs (binds it if it has not been used yet). */
LT_API const char *lt_mutex_algorithm(lt_mutex_t *m);

#ifdef __cplusplus
}
#endif
#endif /* LOCKTUNE_H */
