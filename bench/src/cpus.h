/*
 * cpus.h - CPU lists ("0-3,6"), the process's usable CPUs, and pinning a thread.
 */
#ifndef LB_CPUS_H
#define LB_CPUS_H

#include <pthread.h>

#define LB_MAX_CPUS 1024

struct lb_cpus {
    int n;
    int cpu[LB_MAX_CPUS];
};

/* The CPUs this process may run on (sched_getaffinity), ascending. */
int lb_cpus_usable(struct lb_cpus *out);

/* Parse "0-3,6" into out, in the order written.  0, or -1 with a reason in why[len]. */
int lb_cpus_parse(const char *text, struct lb_cpus *out, char *why, size_t len);

/* Create a thread that runs on one CPU, or on every CPU of set (cpu < 0), or anywhere (cpu < 0
 * and set NULL), from its first instruction on.  0 or an errno. */
int lb_cpus_thread(pthread_t *t, int cpu, const struct lb_cpus *set, void *(*fn)(void *),
                   void *arg);

#endif
