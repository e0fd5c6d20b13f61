/*
 * locktune-probe - print, as JSON, what this machine offers the profiler:
 * whether a hardware cache-miss event can be opened (and why not), through libpfm4;
 * with --clock, the time source instead: TSC invariance and rate, and the Ordo boundary
 * (the largest offset between two cores' clocks, see ordo.h).
 *
 *   locktune-probe [--pmu EVENT]
 *   locktune-probe --clock [--runs N]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "ordo.h"
#include "pmu.h"

int ltp_clock_kind = LTP_CLOCK_MONO;

static void json_str(const char *key, const char *v, int last);

static int clock_probe(int runs)
{
    struct ltp_clock_probe c;
    ltp_clock_measure(&c, runs);
    printf("{\n");
    printf("  \"invariant_tsc\": %s,\n", c.invariant ? "true" : "false");
    printf("  \"clock\": \"%s\",\n", c.invariant && c.hz > 0 ? "tsc" : "monotonic");
    printf("  \"tsc_hz\": %.0f,\n", c.hz);
    printf("  \"ordo_boundary_cycles\": %llu,\n", (unsigned long long)c.boundary);
    printf("  \"ordo_boundary_ns\": %.1f,\n", c.hz > 0 ? (double)c.boundary * 1e9 / c.hz : 0.0);
    printf("  \"cpus\": %d,\n  \"pairs\": %d,\n  \"runs\": %d,\n", c.cpus, c.pairs, c.runs);
    json_str("error", c.error, 1);
    printf("}\n");
    return 0;
}

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
    int clock = 0, runs = 5000;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--pmu") == 0 && i + 1 < argc) {
            event = argv[++i];
        } else if (strcmp(argv[i], "--clock") == 0) {
            clock = 1;
        } else if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc && atoi(argv[i + 1]) > 0) {
            runs = atoi(argv[++i]);
        } else {
            fprintf(stderr,
                    "locktune-probe: unknown argument '%s' (usage: locktune-probe "
                    "[--pmu EVENT] | --clock [--runs N])\n",
                    argv[i]);
            return 2;
        }
    }
    if (clock)
        return clock_probe(runs);
    struct ltp_pmu_probe p;
    ltp_pmu_probe(event, 1, &p);
    printf("{\n");
    printf("  \"available\": %s,\n", p.available ? "true" : "false");
    json_str("event", p.event, 0);
    json_str("libpfm_version", ltp_pmu_libpfm_version(), 0);
    json_str("pfm_pmu", p.pfm_pmu, 0);
    json_str("encoding", p.encoding, 0);
    printf("  \"type\": %u,\n  \"config\": %llu,\n", p.type, (unsigned long long)p.config);
    printf("  \"pfm_error\": %d,\n  \"open_errno\": %d,\n", p.pfm_error, p.open_errno);
    printf("  \"count\": %llu,\n", (unsigned long long)p.sample_count);
    json_str("reason", p.reason, 1);
    printf("}\n");
    return 0;
}
