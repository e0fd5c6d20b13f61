/*
 * config.h - the runtime's view of per-site configuration (see config.c).
 */
#ifndef LT_CONFIG_H
#define LT_CONFIG_H

#include "locktune.h"

/* The configured entry of site `id`, or NULL when no locktune_config.h describes it. */
const struct lt_site_config *lt_config_site(int id);

#endif
