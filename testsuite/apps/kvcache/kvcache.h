/*
 * kvcache.h - shared declarations of kvcache, a key-value cache in the style of memcached 1.4:
 * one global cache lock over the hash table and the LRU lists, a slab allocator, per-thread
 * statistics.  See main.c for the program and its workload.
 */
#ifndef KVCACHE_H
#define KVCACHE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "lockstats.h"

/* Lock wrappers, as memcached has them. */
#define mutex_lock(x)   pthread_mutex_lock(x)
#define mutex_unlock(x) pthread_mutex_unlock(x)
#define STATS_LOCK()    mutex_lock(&stats_lock)
#define STATS_UNLOCK()  mutex_unlock(&stats_lock)

#define KEY_MAX_LENGTH 32
#define VALUE_MAX      1024
#define POWER_SMALLEST 1
#define POWER_LARGEST  64
#define PAGE_SIZE      (64 * 1024) /* slab page */

typedef struct _stritem {
    struct _stritem *next;   /* LRU: towards the tail (older) */
    struct _stritem *prev;   /* LRU: towards the head (newer) */
    struct _stritem *h_next; /* hash chain */
    uint64_t time;           /* cache clock at the last access */
    uint32_t nbytes;         /* value length */
    uint8_t nkey;            /* key length */
    uint8_t slabs_clsid;
    uint8_t it_flags;
    char data[]; /* key, then value */
} item;

#define ITEM_LINKED    1
#define ITEM_key(it)   ((it)->data)
#define ITEM_data(it)  ((it)->data + (it)->nkey)
#define ITEM_ntotal(n) (sizeof(item) + (n)->nkey + (n)->nbytes)

struct settings {
    size_t maxbytes;
    int num_threads;
    int hashpower;
    double factor;
};

/* Global statistics: the item counts under stats_lock (taken inside the cache lock, as in
 * memcached 1.4), the eviction counts under cache_lock. */
struct stats {
    uint64_t curr_items;
    uint64_t total_items;
    uint64_t curr_bytes;
    uint64_t evictions;
    uint64_t outofmemory;
    int started_threads;
};

/* Per worker thread, under its own mutex (taken on every request, by the worker only, and by
 * the main thread when it adds them up). */
struct thread_stats {
    pthread_mutex_t mutex;
    uint64_t get_cmds;
    uint64_t get_hits;
    uint64_t get_misses;
    uint64_t set_cmds;
    uint64_t fills; /* items stored after a miss */
    uint64_t bytes_read;
    uint64_t bytes_written;
};

/* What the consistency walk of the cache found. */
struct cache_check {
    uint64_t lru_items, hash_items, bytes, contents, bad_values, bad_links;
};

extern struct settings settings;
extern struct stats stats;
extern pthread_mutex_t cache_lock;
extern pthread_mutex_t stats_lock;

/* slabs.c */
void slabs_init(size_t limit, double factor);
unsigned int slabs_clsid(size_t size);
void *slabs_alloc(size_t size, unsigned int id);
void slabs_free(void *ptr, size_t size, unsigned int id);
int slabs_classes(void);

/* items.c */
uint32_t hash(const char *key, size_t nkey);
void assoc_init(int hashpower);
void item_init(void);
item *item_alloc(const char *key, size_t nkey, size_t nbytes);
int item_get(const char *key, size_t nkey, char *buf, size_t size, size_t *nbytes);
void item_store(item *it);
void item_check(struct cache_check *check, int (*valid)(const item *it));

/* thread.c */
void thread_init(int nthreads);
void threads_run(void *(*worker)(void *), void **args);
struct thread_stats *thread_stats(int index);
void threadlocal_stats_aggregate(struct thread_stats *out);
void thread_registered(void);

#endif
