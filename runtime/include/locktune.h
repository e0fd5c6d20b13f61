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
 * lt_mutex_t: 64 bytes on x86-64 (one cache line's worth; 8-byte aligned so that it embeds
 * compactly), statically initialisable.  The first 24 bytes are the runtime's bookkeeping; the
 * algorithm's own state lives inline in `_u` (every algorithm of this library fits in 40 bytes:
 * docs/runtime.md lists each one's size).  All-zero memory is a valid unlocked default-type
 * lock of site 0, like glibc's.  The fields are the runtime's: programs use only the
 * functions and macros below.
 */
struct lt_mutex {
    const void *_ops; /* algorithm bound to this lock (NULL until first use) */
    int32_t _site;    /* site id from LT_MUTEX_INITIALIZER / lt_mutex_init */
    uint32_t _flags;  /* mutex type (normal/recursive/errorcheck), process-shared fallback */
    int32_t _owner;   /* kernel tid of the holder, 0 when free */
    uint32_t _count;  /* recursion depth (recursive type) */
    union {
        pthread_mutex_t _posix; /* `posix` (and process-shared/robust locks): glibc's, inline */
        uint64_t _words[5];     /* every other algorithm's state */
    } _u;
};
typedef struct lt_mutex lt_mutex_t;

/*
 * lt_cond_t: 56 bytes.  A FIFO of waiting threads (their wait nodes live on their stacks)
 * behind a small futex lock; process-shared condition variables keep glibc's inline.
 */
struct lt_cond {
    uint32_t _flags; /* clock (realtime/monotonic), process-shared fallback */
    uint32_t _lock;  /* futex word guarding the waiter list */
    union {
        struct {
            void *_head, *_tail; /* waiters */
            void *_mutex;        /* the mutex they wait with */
            uint32_t _leaving;   /* timed-out waiters a waker unlinked, not yet gone */
        } _q;
        pthread_cond_t _posix;
    } _u;
};
typedef struct lt_cond lt_cond_t;

/* Mutex types in _flags (private: use pthread_mutexattr_settype or the initialisers below). */
#define LT_MUTEX_F_RECURSIVE_  1u
#define LT_MUTEX_F_ERRORCHECK_ 2u

/* Static initialisers.  `site` is the id locktune_config.h gives the lock's site. */
#define LT_MUTEX_INITIALIZER_TYPED_(site, flags)                                                   \
    {                                                                                              \
        0, (site), (flags), 0, 0,                                                                  \
        {                                                                                          \
            PTHREAD_MUTEX_INITIALIZER                                                              \
        }                                                                                          \
    }
#define LT_MUTEX_INITIALIZER(site) LT_MUTEX_INITIALIZER_TYPED_(site, 0)
/* The counterparts of glibc's PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP and
 * PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP. */
#define LT_RECURSIVE_MUTEX_INITIALIZER_NP(site)                                                    \
    LT_MUTEX_INITIALIZER_TYPED_(site, LT_MUTEX_F_RECURSIVE_)
#define LT_ERRORCHECK_MUTEX_INITIALIZER_NP(site)                                                   \
    LT_MUTEX_INITIALIZER_TYPED_(site, LT_MUTEX_F_ERRORCHECK_)
#define LT_COND_INITIALIZER                                                                        \
    {                                                                                              \
        0, 0,                                                                                      \
        {                                                                                          \
            {                                                                                      \
                0, 0, 0, 0                                                                         \
            }                                                                                      \
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
/* A third, optional hint: the context's size in bytes (bits 16-31 of flags), for instance
 * LT_EXEC_MAY_WAIT | LT_EXEC_CTX_SIZE(sizeof ctx).  With it, `rcl` carries a context of up to
 * 32 bytes inside the client's mailbox line instead of making the server fetch it (the RCL
 * paper's optimisation), and copies it back after the section; the section must then use the
 * context only through its ctx argument (not keep its address).  0 (or a size of 65535 bytes
 * or more) means unknown. */
#define LT_EXEC_CTX_SIZE(n)         (((n) >= 0xffffu ? 0xffffu : (unsigned)(n)) << 16)
#define LT_EXEC_CTX_SIZE_OF_(flags) ((unsigned)(flags) >> 16)
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
