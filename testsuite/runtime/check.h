/* check.h - the few assertions the C tests need (a failure prints file:line and exits 1), and
 * their clock. */
#ifndef LT_CHECK_H
#define LT_CHECK_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);               \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

#define CHECK_EQ(a, b)                                                                             \
    do {                                                                                           \
        long long va_ = (long long)(a), vb_ = (long long)(b);                                      \
        if (va_ != vb_) {                                                                          \
            fprintf(stderr, "%s:%d: check failed: %s == %s (%lld != %lld)\n", __FILE__, __LINE__,  \
                    #a, #b, va_, vb_);                                                             \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

/* Monotonic seconds, for the tests' deadlines and durations. */
static inline double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The machine's own delay, for the tests that bound a wait: how much later than asked a 1 ms
 * sleep ends, at worst, until *stop (an atomic int) is set.  A thread runs it beside the test:
 * pthread_create(&t, NULL, machine_lateness, &l); the worst is l.late_s once it is joined. */
struct lateness {
    const int *stop;
    double late_s;
};

static inline void *machine_lateness(void *arg)
{
    struct lateness *l = arg;
    while (!__atomic_load_n(l->stop, __ATOMIC_RELAXED)) {
        double t0 = now_s();
        usleep(1000);
        double late = now_s() - t0 - 0.001;
        if (late > l->late_s)
            l->late_s = late;
    }
    return NULL;
}

#endif
