/* toposcope — placement: which node and cores each rank gets, under a policy.
 *
 * A node's usable cores are cut into slots of cpus_per_rank cores (inside an L3 or NUMA domain
 * where possible, never across packages; see doc/policy.md), each slot holding ranks_per_core
 * ranks, at most ranks_per_node on the node. Nodes are taken in hierarchy order (depth first,
 * children by hostname order of their first node); a node's "leaf switch" is its parent.
 *
 *   compact       ranks fill node after node in that order; inside a node slot after slot in
 *                 tree order (a package before the next)
 *   spread        rank r goes to the next leaf switch round-robin (skipping full ones), there to
 *                 the next node round-robin; inside a node, round-robin over packages, then NUMA
 *                 domains, then L3 caches, then cores
 *   block         blocks of block_size consecutive ranks, each to the next leaf switch round-robin
 *                 with room for the whole block, compact inside it; when no switch has room for a
 *                 whole block, its ranks fill the free slots in order
 *   measure-only  no ranks
 *
 * Every rank gets distinct cores (with ranks_per_core 1) the job may use; the work is linear in
 * ranks plus nodes, so 65 536 ranks on 1024 nodes take milliseconds. */
#ifndef TOPOSCOPE_PLACE_H
#define TOPOSCOPE_PLACE_H

#include "toposcope/error.h"
#include "toposcope/hier.h"
#include "toposcope/policy.h"

#define TS_PLACE_MAX_RANKS (1 << 22)

/* The slots of one template (one kind of node) under one policy. */
typedef struct ts_node_slots {
    int nchunks;
    int *chunk_first;        /* nchunks + 1 offsets into chunk_core */
    int *chunk_core;         /* ts_hwtree core indices, tree order inside a chunk */
    int capacity;            /* nchunks * ranks_per_core */
    int *compact;            /* capacity chunk ids: the order compact fills the node in */
    int *spread;             /* capacity chunk ids: the order spread fills the node in */
} ts_node_slots;

typedef struct ts_rank_slot {
    int node;                /* node index */
    int chunk;               /* in the node's template's ts_node_slots */
} ts_rank_slot;

typedef struct ts_placement {
    const ts_hierarchy *h;
    ts_placement_kind kind;
    int cpus_per_rank, ranks_per_core, ranks_per_node, block_size;
    int nranks;
    int capacity;            /* slots over all nodes */
    ts_rank_slot *rank;
    int *node_ranks;         /* per node index: ranks placed on it */
    int *node_order;         /* node indices in hierarchy order */
    ts_node_slots *slots;    /* per template */
} ts_placement;

typedef struct ts_place_options {
    int nranks;              /* 0: fill every slot */
    int cpus_per_rank;       /* 0: the policy's */
} ts_place_options;

/* Errors (TS_EINPUT) say how many slots there are and why, e.g. "--ranks 100 exceeds the 64
 * slots of 2 nodes (cpus_per_rank 1, ranks_per_core 1, ranks_per_node 0 = no limit)". */
int ts_place(const ts_hierarchy *h, const ts_policy *p, const ts_place_options *o,
             ts_placement *out, ts_error *err);
void ts_placement_free(ts_placement *pl);

/* Rank r's cores (ts_hwtree core indices of its node), count in *n. */
const int *ts_placement_cores(const ts_placement *pl, int r, int *n);
const ts_hwtree *ts_placement_hwtree(const ts_placement *pl, int node);

#endif
