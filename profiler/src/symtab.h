/*
 * symtab.h - which static variable holds an address: the object symbols of a module's ELF
 * file, sorted, for the profiler's first sight of a lock that was never initialised (it is
 * in static storage: PTHREAD_MUTEX_INITIALIZER or zeroed).  All elements of an array of
 * locks then share one site, as DESIGN.md asks.  Names and file:line are resolved later,
 * in Python, from the debug information; only the symbol's start address is kept here.
 */
#ifndef LTP_SYMTAB_H
#define LTP_SYMTAB_H

#include <stdint.h>

struct ltp_symtab;

/* Load the STT_OBJECT symbols of the ELF file at `path` (NULL if it has none or cannot be
 * read).  Allocates with mmap, never with a lock. */
struct ltp_symtab *ltp_symtab_load(const char *path);

/* Start of the symbol whose [start, start + size) holds `vaddr`, or 0. */
uint64_t ltp_symtab_find(const struct ltp_symtab *t, uint64_t vaddr);

#endif
