#ifndef HASH_H
#define HASH_H
#include <stddef.h>
#include <stdint.h>

extern uint32_t (*hash)(const char *key, size_t len);
extern unsigned long (*get_id)(void);
void hash_init(int kind);

#endif
