/*
 * cpus.c - CPU lists and affinity (see cpus.h).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>

#include "cpus.h"

int lb_cpus_usable(struct lb_cpus *out)
{
    cpu_set_t set;
    out->n = 0;
    if (sched_getaffinity(0, sizeof set, &set) != 0)
        return -1;
    for (int c = 0; c < CPU_SETSIZE && c < LB_MAX_CPUS; c++)
        if (CPU_ISSET(c, &set))
            out->cpu[out->n++] = c;
    return 0;
}

static int number(const char **p, long *v)
{
    char *end;
    if (**p < '0' || **p > '9')
        return -1;
    errno = 0;
    *v = strtol(*p, &end, 10);
    if (errno || *v >= LB_MAX_CPUS)
        return -1;
    *p = end;
    return 0;
}

int lb_cpus_parse(const char *text, struct lb_cpus *out, char *why, size_t len)
{
    const char *p = text;
    out->n = 0;
    while (*p) {
        long a, b;
        if (number(&p, &a) != 0) {
            snprintf(why, len, "expected a CPU number below %d at '%s'", LB_MAX_CPUS, p);
            return -1;
        }
        b = a;
        if (*p == '-') {
            p++;
            if (number(&p, &b) != 0 || b < a) {
                snprintf(why, len, "bad CPU range in '%s'", text);
                return -1;
            }
        }
        for (long c = a; c <= b; c++) {
            if (out->n == LB_MAX_CPUS) {
                snprintf(why, len, "more than %d CPUs in '%s'", LB_MAX_CPUS, text);
                return -1;
            }
            out->cpu[out->n++] = (int)c;
        }
        if (*p == ',')
            p++;
        else if (*p) {
            snprintf(why, len, "unexpected '%c' in '%s'", *p, text);
            return -1;
        }
    }
    if (out->n == 0) {
        snprintf(why, len, "empty CPU list");
        return -1;
    }
    return 0;
}

int lb_cpus_thread(pthread_t *t, int cpu, const struct lb_cpus *set, void *(*fn)(void *), void *arg)
{
    pthread_attr_t attr;
    int r = pthread_attr_init(&attr);
    if (r != 0)
        return r;
    if (cpu >= 0 || set != NULL) {
        cpu_set_t s;
        CPU_ZERO(&s);
        if (cpu >= 0)
            CPU_SET(cpu, &s);
        else
            for (int i = 0; i < set->n; i++)
                CPU_SET(set->cpu[i], &s);
        r = pthread_attr_setaffinity_np(&attr, sizeof s, &s);
    }
    if (r == 0)
        r = pthread_create(t, &attr, fn, arg);
    pthread_attr_destroy(&attr);
    return r;
}
