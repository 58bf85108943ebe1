/* toposcope — Slurm's topology.conf (topology/tree plugin) read into a fabric and written from
 * one (lib/fabric/topoconf.c). */
#ifndef TOPOSCOPE_TOPOCONF_H
#define TOPOSCOPE_TOPOCONF_H

#include <stddef.h>
#include <stdio.h>
#include "toposcope/error.h"
#include "toposcope/fabric.h"

/* Slurm topology.conf. `source` names the input in messages ("topology.conf").
 * Errors return TS_EINPUT with "SOURCE:LINE: what is wrong". */
int ts_fabric_parse_topology_conf(ts_fabric *f, const char *text, size_t len,
                                  const char *source, ts_error *err);
int ts_fabric_load_topology_conf(ts_fabric *f, const char *path, ts_error *err);
/* Emit: one SwitchName= line per switch, children compressed as hostlists; the implicit
 * root is not written when the parser created it. */
int ts_fabric_write_topology_conf(const ts_fabric *f, FILE *out);

#endif
