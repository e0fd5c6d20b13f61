/*
 * json.c - streaming JSON writer (see json.h).
 */
#include <inttypes.h>
#include <math.h>

#include "json.h"

void lb_json_init(struct lb_json *j, FILE *f)
{
    j->f = f;
    j->depth = 0;
    j->first[0] = 1;
}

static void string(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p == '\n')
            fputs("\\n", f);
        else if (*p < 0x20)
            fprintf(f, "\\u%04x", *p);
        else
            fputc(*p, f);
    }
    fputc('"', f);
}

/* Separator, newline and indentation before a value, then its key. */
static void lead(struct lb_json *j, const char *key)
{
    if (j->depth > 0) {
        fputs(j->first[j->depth] ? "\n" : ",\n", j->f);
        fprintf(j->f, "%*s", 2 * j->depth, "");
    }
    j->first[j->depth] = 0;
    if (key) {
        string(j->f, key);
        fputs(": ", j->f);
    }
}

void lb_json_open(struct lb_json *j, const char *key, char bracket)
{
    lead(j, key);
    fputc(bracket, j->f);
    if (j->depth + 1 < LB_JSON_DEPTH)
        j->depth++;
    j->first[j->depth] = 1;
}

void lb_json_close(struct lb_json *j, char bracket)
{
    int empty = j->first[j->depth];
    if (j->depth > 0)
        j->depth--;
    if (!empty)
        fprintf(j->f, "\n%*s", 2 * j->depth, "");
    fputc(bracket, j->f);
    if (j->depth == 0)
        fputc('\n', j->f);
}

void lb_json_str(struct lb_json *j, const char *key, const char *value)
{
    lead(j, key);
    if (value)
        string(j->f, value);
    else
        fputs("null", j->f);
}

void lb_json_u64(struct lb_json *j, const char *key, uint64_t value)
{
    lead(j, key);
    fprintf(j->f, "%" PRIu64, value);
}

void lb_json_i64(struct lb_json *j, const char *key, int64_t value)
{
    lead(j, key);
    fprintf(j->f, "%" PRId64, value);
}

void lb_json_double(struct lb_json *j, const char *key, double value)
{
    lead(j, key);
    if (isfinite(value))
        fprintf(j->f, "%.9g", value);
    else
        fputs("null", j->f);
}

void lb_json_bool(struct lb_json *j, const char *key, int value)
{
    lead(j, key);
    fputs(value ? "true" : "false", j->f);
}

void lb_json_null(struct lb_json *j, const char *key)
{
    lead(j, key);
    fputs("null", j->f);
}
