/*
 * registry.c - algorithm name -> operations table.
 */
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "algo.h"

const struct lt_algo *const lt_algos[] = {
    &lt_algo_posix, &lt_algo_spin,    &lt_algo_ticket,   &lt_algo_twa,   &lt_algo_mcs,
    &lt_algo_clh,   &lt_algo_mcstp,   &lt_algo_mcscr,    &lt_algo_shfl,  &lt_algo_shfl_block,
    &lt_algo_fc,    &lt_algo_ccsynch, &lt_algo_dsmsynch, &lt_algo_oyama, &lt_algo_rcl,
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
