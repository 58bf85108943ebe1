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

/* Slurm's topology/block (topology.conf(5), Slurm 23.11+; BlockSizes= 24.05+): a block is a
 * switch that holds nodes, with those nodes. */
#define TS_BLOCK_SIZES_MAX 32

/* The blocks below `top` of the finalized f (switch vertices), depth first with children in
 * natural name order, so that blocks under one switch are neighbours: Slurm pairs neighbouring
 * blocks into the larger ones BlockSizes= allows. Returns the count (writes at most max), or
 * TS_ENOMEM. */
int ts_fabric_blocks(const ts_fabric *f, int top, int *blocks, int max);
/* BlockSizes= for n blocks: the planning base size first, the smallest block's node count
 * (Slurm wants every block at least that large), then, when `larger`, the base doubled while
 * that many base blocks exist (each size a power of two times the one before). Returns the
 * count of sizes written (at most TS_BLOCK_SIZES_MAX), 0 when n is 0. */
int ts_block_sizes(const ts_fabric *f, const int *blocks, int n, int larger, int *sizes);
/* Emit topology.conf for topology/block: "BlockName=SWITCH Nodes=HOSTLIST" per block of every
 * fabric (ts_fabric_tops), then "BlockSizes=". With several fabrics BlockSizes= holds the base
 * size alone: a larger block would pair blocks of two fabrics. f must be finalized. TS_ELIMIT
 * when a line would be longer than Slurm reads, naming the block. */
int ts_fabric_write_block_conf(const ts_fabric *f, FILE *out, ts_error *err);

#endif
