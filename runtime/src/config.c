/*
 * config.c - per-site configuration: tables registered by locktune_config.h.
 *
 * Registration happens from constructors, before main() and before any other thread
 * exists, so the table list needs no lock; lookups after that are read-only.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"

#define MAX_TABLES 256

static const struct lt_site_config *tables[MAX_TABLES];
static unsigned table_sizes[MAX_TABLES];
static unsigned ntables;

LT_API void lt_config_register(const struct lt_site_config *sites, unsigned count)
{
    for (unsigned i = 0; i < ntables; i++)
        if (table_sizes[i] == count && memcmp(tables[i], sites, count * sizeof *sites) == 0)
            return; /* the same header included by another translation unit */
    if (ntables == MAX_TABLES) {
        fprintf(stderr, "locktune: more than %d locktune_config.h tables registered\n", MAX_TABLES);
        abort();
    }
    tables[ntables] = sites;
    table_sizes[ntables] = count;
    ntables++;
}

const struct lt_site_config *lt_config_site(int id)
{
    if (id <= 0)
        return NULL;
    for (unsigned t = 0; t < ntables; t++)
        for (unsigned i = 0; i < table_sizes[t]; i++)
            if (tables[t][i].id == id)
                return &tables[t][i];
    return NULL;
}
