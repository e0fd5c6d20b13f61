/*
 * locktune-algorithms - writes the registered algorithms as JSON (schema locktune-algorithms/1)
 * from their operations tables: each one's name and capabilities.  The build runs it to make
 * share/locktune/algorithms.json, which the Python package reads (locktune/algorithms.py):
 * the list is the runtime's (src/algorithms.def), never written out again elsewhere.
 *
 * Exits 1, failing the build, when a table's name breaks the naming rule of algorithms.def
 * (its identifier with '-' for '_').
 */
#include <stdio.h>
#include <string.h>

#include "algo.h"

static const char *const ids[] = {
#define LT_ALGORITHM(id) #id,
#include "algorithms.def"
#undef LT_ALGORITHM
};

static const struct {
    unsigned bit;
    const char *key;
} caps[] = {
    {LT_CAP_DELEGATES, "delegates"},       {LT_CAP_SUPPORTS_COND, "supports_cond"},
    {LT_CAP_BLOCKING, "blocking"},         {LT_CAP_FIFO, "fifo"},
    {LT_CAP_OVERSUB_SAFE, "oversub_safe"}, {LT_CAP_SERVER, "server"},
};

static void json_string(const char *s)
{
    putchar('"');
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            putchar('\\');
        if ((unsigned char)*s >= 0x20)
            putchar(*s);
    }
    putchar('"');
}

int main(void)
{
    if (lt_nalgos != sizeof ids / sizeof ids[0]) {
        fprintf(stderr, "locktune-algorithms: the registry has %u tables, algorithms.def %zu\n",
                lt_nalgos, sizeof ids / sizeof ids[0]);
        return 1;
    }
    printf("{\n  \"schema\": \"locktune-algorithms/1\",\n  \"algorithms\": [\n");
    for (unsigned i = 0; i < lt_nalgos; i++) {
        const struct lt_algo *a = lt_algos[i];
        char want[64];
        snprintf(want, sizeof want, "%s", ids[i]);
        for (char *p = want; *p; p++)
            if (*p == '_')
                *p = '-';
        if (strcmp(a->name, want) != 0) {
            fprintf(stderr,
                    "locktune-algorithms: src/algorithms.def: %s: the table is named \"%s\", "
                    "the naming rule wants \"%s\"\n",
                    ids[i], a->name, want);
            return 1;
        }
        printf("    {\"name\": ");
        json_string(a->name);
        printf(", \"wait\": ");
        json_string(a->wait ? a->wait : "");
        for (size_t c = 0; c < sizeof caps / sizeof caps[0]; c++)
            printf(", \"%s\": %s", caps[c].key, (a->caps & caps[c].bit) ? "true" : "false");
        printf("}%s\n", i + 1 < lt_nalgos ? "," : "");
    }
    printf("  ]\n}\n");
    return 0;
}
