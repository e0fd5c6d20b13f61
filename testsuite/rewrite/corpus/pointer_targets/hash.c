/* The hash function, chosen at start-up through a file-scope pointer (as memcached's
 * hash_init does), and a thread-id getter set the same way. */
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "hash.h"

uint32_t (*hash)(const char *key, size_t len);
unsigned long (*get_id)(void);

static uint32_t fnv(const char *key, size_t len)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)key[i]) * 16777619u;
    return h;
}

static uint32_t djb(const char *key, size_t len)
{
    uint32_t h = 5381;
    for (size_t i = 0; i < len; i++)
        h = h * 33 + (unsigned char)key[i];
    return h;
}

static unsigned long self_id(void)
{
    return (unsigned long)pthread_self();
}

void hash_init(int kind)
{
    hash = kind ? fnv : &djb;
    get_id = self_id;
}
