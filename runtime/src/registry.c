/*
 * registry.c - algorithm name -> operations table, for the algorithms of algorithms.def.
 */
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "algo.h"

const struct lt_algo *const lt_algos[] = {
#define LT_ALGORITHM(id) &lt_algo_##id,
#include "algorithms.def"
#undef LT_ALGORITHM
};
const unsigned lt_nalgos = sizeof lt_algos / sizeof lt_algos[0];

const struct lt_algo *lt_algo_find(const char *name)
{
    for (unsigned i = 0; i < lt_nalgos; i++)
        if (strcmp(lt_algos[i]->name, name) == 0)
            return lt_algos[i];
    return NULL;
}

static char names[512];
static pthread_once_t names_once = PTHREAD_ONCE_INIT;

static void make_names(void)
{
    size_t n = 0;
    for (unsigned i = 0; i < lt_nalgos && n < sizeof names; i++)
        n +=
            (size_t)snprintf(names + n, sizeof names - n, "%s%s", i ? ", " : "", lt_algos[i]->name);
}

const char *lt_algo_names(void)
{
    pthread_once(&names_once, make_names);
    return names;
}
