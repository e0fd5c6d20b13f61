/*
 * lt_test.h - test-only stand-in for the runtime API that extracted code calls.
 *
 * locktune-extract runs before the Coccinelle pass that retypes pthread_mutex_t to
 * lt_mutex_t, so its output, on its own, calls lt_execute(&m, fn, ctx) with m a
 * pthread_mutex_t.  This header declares lt_execute/lt_execute_ex for that case, and
 * lt_test.c implements them with the runtime's semantics (run fn(ctx) under m, return its
 * result) the way a delegating algorithm does: fn runs on a server thread, one per lock,
 * unless the flags ask for the caller's thread.  A section that depends on its thread and is
 * not marked (or does not carry errno) therefore behaves differently here, and the test that
 * compares the rewritten program's output with the original's fails.  The full pipeline
 * (Coccinelle pass + liblocktune) is tested by the rewrite corpus in testsuite/rewrite/.
 */
#ifndef LT_TEST_H
#define LT_TEST_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

typedef void *(*lt_cs_fn)(void *ctx);

enum {
    LT_EXEC_ON_CALLER = 1u << 0,
    LT_EXEC_MAY_WAIT = 1u << 1,
};

void *lt_execute(pthread_mutex_t *m, lt_cs_fn fn, void *ctx);
void *lt_execute_ex(pthread_mutex_t *m, lt_cs_fn fn, void *ctx, unsigned flags);
/* Returns EBUSY without running fn when m is not free; else 0, fn's result in *result. */
int lt_execute_trylock(pthread_mutex_t *m, lt_cs_fn fn, void *ctx, void **result);

/* How many sections ran on a server thread (delegated) and on their caller. */
unsigned long lt_test_delegated(void);
unsigned long lt_test_on_caller(void);

#endif
