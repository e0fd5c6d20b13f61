/*
 * sites.h - where locks come to life.  A raw site is one distinct origin as the process
 * sees it: the backtrace of an init call, the static variable a never-initialised lock
 * lives in, or the backtrace of the first use of a lock on the heap or stack.  Python
 * later resolves raw sites to file:line through the debug information and merges those
 * that land on the same line (DESIGN.md, "Lock identity").
 *
 * Site 0 collects everything once the table is full (header.sites_overflow counts it).
 * These functions are slow paths: they run once per lock instance (init) or once per raw
 * site, never per lock operation.
 */
#ifndef LTP_SITES_H
#define LTP_SITES_H

#include <stdint.h>

/* Must be called once, before any other function here, by the initialising thread. */
void ltp_sites_setup(void);

/* Site of a lock being initialised by the caller of the interposed init function. */
uint32_t ltp_site_init(int kind, uint32_t attr, const void *lock);

/* Site of a lock seen for the first time without an init. */
uint32_t ltp_site_first_use(int kind, const void *lock);

/* An instance of `site` was born / died (live, max_live, created, destroyed). */
void ltp_site_born(uint32_t site);
void ltp_site_died(uint32_t site);

/* Module number + 1 of code address `addr` (0: unknown), and its vaddr there (a callsite's
 * return address: once per caller, site and thread). */
uint64_t ltp_site_module_of(const void *addr, uint64_t *vaddr);

#endif
