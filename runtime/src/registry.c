/*
 * registry.c - algorithm name -> operations table.
 */
#include <string.h>

#include "algo.h"

static const struct lt_algo *const algos[] = {
    &lt_algo_posix,
};

const struct lt_algo *lt_algo_find(const char *name)
{
    for (size_t i = 0; i < sizeof algos / sizeof algos[0]; i++)
        if (strcmp(algos[i]->name, name) == 0)
            return algos[i];
    return NULL;
}

const struct lt_algo *lt_algo_default(void)
{
    return &lt_algo_posix;
}
