/*
 * region.h - the profiled process's raw file, mapped for the whole run (layout.h).
 *
 * ltp_region_open() creates <dir>/<pid>-<n>.ltraw, reserves the fixed sections on disk
 * (fallocate, so touching them can never raise SIGBUS on a full file system), maps it
 * MAP_SHARED and fills the header's constants.  The arena grows in steps under the
 * caller's lock.  A fork()ed child calls ltp_region_fork_child(): it leaves the parent's
 * file alone and continues in a file of its own, keeping the module and site tables.
 */
#ifndef LTP_REGION_H
#define LTP_REGION_H

#include <stddef.h>
#include <stdint.h>

#include "layout.h"

extern char *ltp_base; /* the mapping; NULL when not recording */

static inline struct ltp_raw_header *ltp_hdr(void)
{
    return (struct ltp_raw_header *)ltp_base;
}

static inline void *ltp_at(uint64_t off)
{
    return ltp_base + off;
}

static inline struct ltp_raw_module *ltp_module(uint64_t i)
{
    return (struct ltp_raw_module *)ltp_at(ltp_hdr()->modules_off) + i;
}

static inline struct ltp_raw_site *ltp_site(uint64_t i)
{
    return (struct ltp_raw_site *)ltp_at(ltp_hdr()->sites_off) + i;
}

/* Returns 0 on success; on failure nothing is mapped and errno says why. */
int ltp_region_open(const char *dir);

/* Hand out `size` bytes of zeroed arena, 128-byte aligned; returns the file offset, or 0
 * when the arena is exhausted or cannot grow.  Caller holds the allocation lock. */
uint64_t ltp_region_alloc(uint64_t size);

/* In a fork()ed child (single-threaded): move to a file of its own. */
int ltp_region_fork_child(void);

#endif
