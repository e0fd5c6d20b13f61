/*
 * items.c - the hash table and the LRU lists, all under one global lock, cache_lock (as in
 * memcached 1.4).
 *
 * cache_lock is the program's hot lock.  A get takes it once: the hash bucket, the item's
 * chain, the item and its value (copied out), the two LRU neighbours it is unlinked from, the
 * list head it moves to and the cache clock are each a different cache line, scattered over
 * the whole cache.  A set takes it twice (allocate, then link), and inside it the slab lock
 * and the statistics lock.
 *
 * Functions named do_* expect cache_lock held.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kvcache.h"

pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;

static item **primary_hashtable;
static uint32_t hashmask;
static item *heads[POWER_LARGEST + 1];
static item *tails[POWER_LARGEST + 1];
static uint64_t sizes[POWER_LARGEST + 1];
static uint64_t cache_clock; /* one tick per access */

/* FNV-1a, folded to 32 bits. */
uint32_t hash(const char *key, size_t nkey)
{
    uint64_t h = 0xcbf29ce484222325u;
    for (size_t i = 0; i < nkey; i++)
        h = (h ^ (unsigned char)key[i]) * 0x100000001b3u;
    return (uint32_t)(h ^ (h >> 32));
}

void assoc_init(int hashpower)
{
    primary_hashtable = calloc((size_t)1 << hashpower, sizeof(item *));
    if (primary_hashtable == NULL) {
        fprintf(stderr, "kvcache: failed to allocate the hash table: %s\n", strerror(errno));
        exit(1);
    }
    hashmask = (uint32_t)(((uint64_t)1 << hashpower) - 1);
}

void item_init(void)
{
    LOCKSTATS_NAME(&cache_lock, "cache_lock");
}

static item *do_assoc_find(const char *key, size_t nkey, uint32_t hv)
{
    item *it = primary_hashtable[hv & hashmask];
    while (it != NULL) {
        if (it->nkey == nkey && memcmp(ITEM_key(it), key, nkey) == 0)
            return it;
        it = it->h_next;
    }
    return NULL;
}

static void do_assoc_insert(item *it, uint32_t hv)
{
    it->h_next = primary_hashtable[hv & hashmask];
    primary_hashtable[hv & hashmask] = it;
}

static void do_assoc_delete(item *it, uint32_t hv)
{
    item **pos = &primary_hashtable[hv & hashmask];
    while (*pos != NULL && *pos != it)
        pos = &(*pos)->h_next;
    if (*pos == NULL) {
        fprintf(stderr, "kvcache: linked item missing from the hash table\n");
        abort();
    }
    *pos = it->h_next;
    it->h_next = NULL;
}

static void do_item_link_q(item *it)
{
    item **head = &heads[it->slabs_clsid], **tail = &tails[it->slabs_clsid];
    it->prev = NULL;
    it->next = *head;
    if (it->next != NULL)
        it->next->prev = it;
    *head = it;
    if (*tail == NULL)
        *tail = it;
    sizes[it->slabs_clsid]++;
}

static void do_item_unlink_q(item *it)
{
    item **head = &heads[it->slabs_clsid], **tail = &tails[it->slabs_clsid];
    if (*head == it)
        *head = it->next;
    if (*tail == it)
        *tail = it->prev;
    if (it->next != NULL)
        it->next->prev = it->prev;
    if (it->prev != NULL)
        it->prev->next = it->next;
    it->next = it->prev = NULL;
    sizes[it->slabs_clsid]--;
}

static void do_item_link(item *it, uint32_t hv)
{
    it->it_flags |= ITEM_LINKED;
    it->time = ++cache_clock;
    do_assoc_insert(it, hv);
    do_item_link_q(it);
    STATS_LOCK();
    stats.curr_items++;
    stats.total_items++;
    stats.curr_bytes += ITEM_ntotal(it);
    STATS_UNLOCK();
}

static void do_item_unlink(item *it, uint32_t hv)
{
    it->it_flags &= (uint8_t)~ITEM_LINKED;
    do_assoc_delete(it, hv);
    do_item_unlink_q(it);
    STATS_LOCK();
    stats.curr_items--;
    stats.curr_bytes -= ITEM_ntotal(it);
    STATS_UNLOCK();
    slabs_free(it, ITEM_ntotal(it), it->slabs_clsid);
}

/* Move to the head of its LRU. */
static void do_item_update(item *it)
{
    it->time = ++cache_clock;
    if (heads[it->slabs_clsid] != it) {
        do_item_unlink_q(it);
        do_item_link_q(it);
    }
}

/* A chunk for a new item: from the free memory, or by evicting the oldest item of its class. */
static item *do_item_alloc(size_t ntotal, unsigned int id)
{
    item *it = slabs_alloc(ntotal, id);
    if (it == NULL && tails[id] != NULL) {
        item *victim = tails[id];
        do_item_unlink(victim, hash(ITEM_key(victim), victim->nkey));
        stats.evictions++;
        it = slabs_alloc(ntotal, id);
    }
    return it;
}

/* A new, unlinked item for key with room for nbytes of value; NULL when out of memory. */
item *item_alloc(const char *key, size_t nkey, size_t nbytes)
{
    size_t ntotal = sizeof(item) + nkey + nbytes;
    unsigned int id = slabs_clsid(ntotal);
    item *it;

    if (id == 0 || nkey > KEY_MAX_LENGTH)
        return NULL;
    mutex_lock(&cache_lock);
    it = do_item_alloc(ntotal, id);
    if (it == NULL) {
        stats.outofmemory++;
        mutex_unlock(&cache_lock);
        return NULL;
    }
    it->next = it->prev = it->h_next = NULL;
    it->time = 0;
    it->it_flags = 0;
    it->slabs_clsid = (uint8_t)id;
    it->nkey = (uint8_t)nkey;
    it->nbytes = (uint32_t)nbytes;
    mutex_unlock(&cache_lock);
    memcpy(ITEM_key(it), key, nkey);
    return it;
}

/*
 * Copy the value of key into buf.  Returns 1 on a hit, 0 on a miss, -1 when the value does
 * not fit.  A hit moves the item to the head of its LRU.
 */
int item_get(const char *key, size_t nkey, char *buf, size_t size, size_t *nbytes)
{
    uint32_t hv = hash(key, nkey);
    item *it;

    mutex_lock(&cache_lock);
    it = do_assoc_find(key, nkey, hv);
    if (it == NULL) {
        mutex_unlock(&cache_lock);
        return 0;
    }
    if (it->nbytes > size) {
        mutex_unlock(&cache_lock);
        return -1;
    }
    do_item_update(it);
    memcpy(buf, ITEM_data(it), it->nbytes);
    *nbytes = it->nbytes;
    mutex_unlock(&cache_lock);
    return 1;
}

/* Link a filled item from item_alloc, replacing the item with the same key if there is one. */
void item_store(item *it)
{
    uint32_t hv = hash(ITEM_key(it), it->nkey);
    item *old;

    mutex_lock(&cache_lock);
    old = do_assoc_find(ITEM_key(it), it->nkey, hv);
    if (old != NULL)
        do_item_unlink(old, hv);
    do_item_link(it, hv);
    mutex_unlock(&cache_lock);
}

/*
 * The consistency walk: every LRU list forwards, with its back links, every item linked and
 * found through the hash table; then every hash chain.  Counts into *check; valid() judges
 * each item's value.
 */
void item_check(struct cache_check *check, int (*valid)(const item *it))
{
    memset(check, 0, sizeof *check);
    mutex_lock(&cache_lock);
    for (int id = POWER_SMALLEST; id <= POWER_LARGEST; id++) {
        item *prev = NULL;
        uint64_t n = 0;
        for (item *it = heads[id]; it != NULL; prev = it, it = it->next) {
            if (it->prev != prev || it->slabs_clsid != id || !(it->it_flags & ITEM_LINKED) ||
                do_assoc_find(ITEM_key(it), it->nkey, hash(ITEM_key(it), it->nkey)) != it)
                check->bad_links++;
            if (!valid(it))
                check->bad_values++;
            check->bytes += ITEM_ntotal(it);
            check->contents += (uint64_t)hash(ITEM_key(it), it->nkey) * 0x9e3779b97f4a7c15u ^
                               hash(ITEM_data(it), it->nbytes);
            n++;
        }
        if (tails[id] != prev || sizes[id] != n)
            check->bad_links++;
        check->lru_items += n;
    }
    for (uint64_t b = 0; b <= hashmask; b++)
        for (item *it = primary_hashtable[b]; it != NULL; it = it->h_next)
            check->hash_items++;
    mutex_unlock(&cache_lock);
}
