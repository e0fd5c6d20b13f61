/*
 * locktune-probe - print, as JSON, what this machine offers the profiler:
 * whether a hardware cache-miss event can be opened (and why not), through libpfm4.
 *
 *   locktune-probe [--pmu EVENT]
 */
#include <stdio.h>
#include <string.h>

#include "pmu.h"

static void json_str(const char *key, const char *v, int last)
{
    printf("  \"%s\": \"", key);
    for (const char *c = v; *c; c++) {
        if (*c == '"' || *c == '\\')
            printf("\\%c", *c);
        else if ((unsigned char)*c < 0x20)
            printf("\\u%04x", *c);
        else
            putchar(*c);
    }
    printf("\"%s\n", last ? "" : ",");
}

int main(int argc, char **argv)
{
    const char *event = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--pmu") == 0 && i + 1 < argc) {
            event = argv[++i];
        } else {
            fprintf(stderr,
                    "locktune-probe: unknown argument '%s' (usage: locktune-probe "
                    "[--pmu EVENT])\n",
                    argv[i]);
            return 2;
        }
    }
    struct lt_pmu_probe p;
    lt_pmu_probe(event, 1, &p);
    printf("{\n");
    printf("  \"available\": %s,\n", p.available ? "true" : "false");
    json_str("event", p.event, 0);
    json_str("libpfm_version", lt_pmu_libpfm_version(), 0);
    json_str("pfm_pmu", p.pfm_pmu, 0);
    json_str("encoding", p.encoding, 0);
    printf("  \"type\": %u,\n  \"config\": %llu,\n", p.type, (unsigned long long)p.config);
    printf("  \"pfm_error\": %d,\n  \"open_errno\": %d,\n", p.pfm_error, p.open_errno);
    printf("  \"count\": %llu,\n", (unsigned long long)p.sample_count);
    json_str("reason", p.reason, 1);
    printf("}\n");
    return 0;
}
