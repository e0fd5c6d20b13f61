/*
 * json.h - a small streaming JSON writer (objects, arrays, numbers, strings), indented.
 *
 *     struct lb_json j;  lb_json_init(&j, stdout);
 *     lb_json_open(&j, NULL, '{');  lb_json_u64(&j, "threads", 4);  lb_json_close(&j, '}');
 *
 * Keys are given with each value (NULL inside arrays).  Non-finite doubles become null.
 */
#ifndef LB_JSON_H
#define LB_JSON_H

#include <stdint.h>
#include <stdio.h>

#define LB_JSON_DEPTH 16

struct lb_json {
    FILE *f;
    int depth;
    int first[LB_JSON_DEPTH]; /* nothing written yet at this depth */
};

void lb_json_init(struct lb_json *j, FILE *f);
void lb_json_open(struct lb_json *j, const char *key, char bracket);     /* '{' or '[' */
void lb_json_close(struct lb_json *j, char bracket);                     /* '}' or ']' */
void lb_json_str(struct lb_json *j, const char *key, const char *value); /* NULL -> null */
void lb_json_u64(struct lb_json *j, const char *key, uint64_t value);
void lb_json_i64(struct lb_json *j, const char *key, int64_t value);
void lb_json_double(struct lb_json *j, const char *key, double value);
void lb_json_bool(struct lb_json *j, const char *key, int value);
void lb_json_null(struct lb_json *j, const char *key);

#endif
