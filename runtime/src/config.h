/*
 * config.h - per-site configuration: the tables locktune_config.h registers, and the
 * environment read at start-up (docs/config.md).
 */
#ifndef LT_CONFIG_H
#define LT_CONFIG_H

#include "locktune.h"
#include "wait.h"

struct lt_algo;

/* Read and check the environment (LOCKTUNE_ALGO, LOCKTUNE_STATS, LOCKTUNE_SPIN_NS,
 * LOCKTUNE_SERVERS, then each algorithm's own through its configure hook) once.  A bad value
 * prints one line naming the variable and exits with status 2. */
void lt_runtime_init(void);
/* Check LOCKTUNE_ALGO's site ids against the registered tables (once; at the first binding). */
void lt_runtime_check_sites(void);

/* The configured entry of site `id`, or NULL when no locktune_config.h describes it. */
const struct lt_site_config *lt_config_site(int id);
/* Call fn on every registered site (each id once). */
void lt_config_foreach(void (*fn)(const struct lt_site_config *, void *), void *arg);

/* The algorithm the locks of site `id` run: LOCKTUNE_ALGO's ID=, else its default=, else the
 * header's entry, else posix. */
const struct lt_algo *lt_site_algo(int id);
/* The waiting policy of site `id`'s locks (wait.h): the one its specification names after the
 * algorithm (`mcs:spin`), else the algorithm's wait_default. */
enum lt_wait_policy lt_site_wait(int id);

/* Server placement (docs/delegation.md), for the algorithms with LT_CAP_SERVER.
 * LOCKTUNE_SERVERS: the CPUs of servers 0, 1, ... (NULL and *n = 0 when unset).  The CPUs the
 * process could run on at start-up, ascending. */
const int *lt_config_servers(unsigned *n);
const int *lt_config_usable_cpus(unsigned *n);

/* A bad configuration value: one line "locktune: error: ..." on stderr, exit status 2.  For an
 * algorithm's configure hook (algo.h), which reads its own variables. */
__attribute__((noreturn, format(printf, 1, 2))) void lt_config_fatal(const char *fmt, ...);

/* "site 12 (items.c:118 lru_locks)" or "site 0 (no site)" into buf. */
const char *lt_site_describe(int id, char *buf, unsigned len);

#endif
