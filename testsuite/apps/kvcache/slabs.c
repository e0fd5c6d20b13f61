/*
 * slabs.c - the slab allocator: size classes growing by a factor, each with a free list of
 * chunks carved from PAGE_SIZE pages of one preallocated arena.  Every class gets one page at
 * start-up, so that any class can always evict to make room.  Called with the cache lock held
 * (allocation and free happen inside the item operations), under its own lock as well.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kvcache.h"

struct slabclass {
    size_t size;     /* chunk size */
    void *free_list; /* chunks linked through their first word */
    size_t free_chunks;
    size_t pages;
};

static pthread_mutex_t slabs_lock;
static struct slabclass slabclass[POWER_LARGEST + 1];
static int power_largest;
static char *arena, *arena_next, *arena_end;

static _Noreturn void die(const char *what, int err)
{
    fprintf(stderr, "kvcache: %s: %s\n", what, strerror(err));
    exit(1);
}

/* Carve one more page for class id.  slabs_lock held. */
static int do_slabs_newpage(unsigned int id)
{
    struct slabclass *p = &slabclass[id];
    if (arena_end - arena_next < PAGE_SIZE)
        return 0;
    char *page = arena_next;
    arena_next += PAGE_SIZE;
    for (size_t off = 0; off + p->size <= PAGE_SIZE; off += p->size) {
        *(void **)(page + off) = p->free_list;
        p->free_list = page + off;
        p->free_chunks++;
    }
    p->pages++;
    return 1;
}

void slabs_init(size_t limit, double factor)
{
    int err;
    size_t size = (sizeof(item) + 48 + 7) & ~(size_t)7;

    if ((err = pthread_mutex_init(&slabs_lock, NULL)) != 0)
        die("pthread_mutex_init", err);
    LOCKSTATS_NAME(&slabs_lock, "slabs_lock");
    arena = malloc(limit);
    if (arena == NULL)
        die("malloc", errno);
    arena_next = arena;
    arena_end = arena + limit;

    int i = POWER_SMALLEST;
    while (i < POWER_LARGEST && size <= PAGE_SIZE / 2) {
        slabclass[i].size = size;
        size = ((size_t)((double)size * factor) + 7) & ~(size_t)7;
        i++;
    }
    slabclass[i].size = PAGE_SIZE;
    power_largest = i;
    for (i = POWER_SMALLEST; i <= power_largest; i++)
        do_slabs_newpage((unsigned int)i);
}

int slabs_classes(void)
{
    return power_largest;
}

/* The class for an item of this size, 0 when it is too big. */
unsigned int slabs_clsid(size_t size)
{
    unsigned int id = POWER_SMALLEST;
    if (size == 0)
        return 0;
    while (size > slabclass[id].size)
        if (id++ == (unsigned int)power_largest)
            return 0;
    return id;
}

void *slabs_alloc(size_t size, unsigned int id)
{
    void *ret = NULL;

    if (id < POWER_SMALLEST || id > (unsigned int)power_largest || size > slabclass[id].size)
        return NULL;
    mutex_lock(&slabs_lock);
    struct slabclass *p = &slabclass[id];
    if (p->free_list != NULL || do_slabs_newpage(id)) {
        ret = p->free_list;
        p->free_list = *(void **)ret;
        p->free_chunks--;
    }
    mutex_unlock(&slabs_lock);
    return ret;
}

void slabs_free(void *ptr, size_t size, unsigned int id)
{
    if (id < POWER_SMALLEST || id > (unsigned int)power_largest || size > slabclass[id].size) {
        fprintf(stderr, "kvcache: slabs_free: chunk of %zu bytes in class %u\n", size, id);
        abort();
    }
    mutex_lock(&slabs_lock);
    struct slabclass *p = &slabclass[id];
    *(void **)ptr = p->free_list;
    p->free_list = ptr;
    p->free_chunks++;
    mutex_unlock(&slabs_lock);
}
