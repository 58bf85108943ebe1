/* toposcope — Slurm's topology.yaml (Slurm 25.05+) written from a fabric
 * (lib/fabric/topoyaml.c). */
#ifndef TOPOSCOPE_TOPOYAML_H
#define TOPOSCOPE_TOPOYAML_H

#include <stdio.h>
#include "toposcope/error.h"
#include "toposcope/fabric.h"

#define TS_TOPOYAML_SWITCH_NAME_MAX 64   /* topology.yaml(5): a switch name is at most 64 chars */

/* One topology per fabric of the finalized f (ts_fabric_tops), named fabric1, fabric2, ... in
 * that order, the first `cluster_default: true`: a tree (every switch with its child switches
 * and nodes as hostlists, parents first), or with `block`, topology/block's blocks and
 * block_sizes (toposcope/topoconf.h). Switches and nodes in natural name order, so the same
 * tree gives the same bytes. TS_EINPUT names a switch Slurm would refuse (a name too long). */
int ts_fabric_write_topology_yaml(const ts_fabric *f, int block, FILE *out, ts_error *err);

#endif
