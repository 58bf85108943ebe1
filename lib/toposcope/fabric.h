/* toposcope — the fabric: a rooted tree of switches and compute nodes with per-link latency.
 *
 * The same structure serves as ground truth (the simulator reads it) and as the result of
 * inference. Every vertex except the root owns the link to its parent, and that link is named
 * after it: a node's access link by the node name, a switch's uplink by the switch name.
 *
 * Vertices are stored in one array; nodes additionally get a dense node index 0..nnodes-1 in
 * natural hostname order (the order Slurm lists them in), which is the index every planner,
 * transport and result uses. */
#ifndef TOPOSCOPE_FABRIC_H
#define TOPOSCOPE_FABRIC_H

#include <stddef.h>
#include <stdio.h>
#include "toposcope/error.h"

#define TS_NONE (-1)
#define TS_TOPOCONF_LINE_MAX (64 * 1024)

typedef enum ts_vertex_kind {
    TS_SWITCH = 0,
    TS_NODE = 1,
} ts_vertex_kind;

typedef struct ts_vertex {
    char *name;
    ts_vertex_kind kind;
    int parent;          /* vertex index, TS_NONE for the root */
    int first_child;     /* vertex index, TS_NONE if none */
    int next_sibling;    /* vertex index, TS_NONE if last */
    int last_child;      /* vertex index, TS_NONE if none: appending stays O(1) */
    int nchildren;
    int depth;           /* root = 0 (valid after ts_fabric_finalize) */
    int height;          /* nodes 0, a switch 1 + max height of its children (after finalize) */
    int node_index;      /* nodes: dense index; switches: TS_NONE */
    int line;            /* source line that defined it (0 if generated) */
    int implicit;        /* 1 for the implicit root the parser adds above parentless switches */
    /* Hardware (truth) or estimate (inference). NAN where unknown. */
    double link_us;      /* one-way latency of the uplink to the parent */
    double link_lo_us, link_hi_us;  /* confidence interval of an estimate */
    double host_us;      /* nodes: host stack overhead, added once per round trip */
    int unresolved;      /* switches of an inferred tree: discovery could not tell this switch's
                          * children apart (a level seen but not significant), so it may stand
                          * for several switches and a link just below it for several links */
} ts_vertex;

typedef struct ts_fabric {
    int nvert, cap;
    ts_vertex *v;
    int root;            /* TS_NONE until finalized */
    int nnodes;
    int *node_vertex;    /* node index -> vertex index */
    /* name -> vertex lookup (open addressing) */
    int *name_slot;
    int name_cap;
    /* lowest-common-ancestor support (after finalize): Euler tour + sparse table */
    int *euler, *euler_first, *lca_table;
    int euler_len, lca_levels;
} ts_fabric;

void ts_fabric_init(ts_fabric *f);
void ts_fabric_free(ts_fabric *f);

/* Building. Names are copied. Returns the vertex index or a negative ts error code. */
int ts_fabric_add_vertex(ts_fabric *f, const char *name, ts_vertex_kind kind, ts_error *err);
int ts_fabric_find(const ts_fabric *f, const char *name);   /* vertex index or TS_NONE */
/* Attach child under parent (child must have no parent yet). */
int ts_fabric_attach(ts_fabric *f, int parent, int child, ts_error *err);
/* Check the tree (one root, no cycles, every node under a switch), compute depth, height,
 * node order and LCA tables. Must be called after building and before queries. */
int ts_fabric_finalize(ts_fabric *f, ts_error *err);

/* Queries (after finalize). */
int ts_fabric_lca(const ts_fabric *f, int va, int vb);
int ts_fabric_hops(const ts_fabric *f, int va, int vb);          /* links on the path */
/* Vertices whose uplinks make up the path a..b (each link named by its lower end); returns
 * the count, writes at most max entries. Order: from a up to the LCA, then from b up. */
int ts_fabric_path_links(const ts_fabric *f, int va, int vb, int *links, int max);
static inline int ts_fabric_node_vertex(const ts_fabric *f, int node) { return f->node_vertex[node]; }
int ts_fabric_max_depth(const ts_fabric *f);

/* Emit the tree with latencies as YAML (see doc/formats.md). */
int ts_fabric_write_yaml(const ts_fabric *f, FILE *out);

/* Copy the switch/node structure of src into dst (fresh), including latencies. */
int ts_fabric_copy(ts_fabric *dst, const ts_fabric *src, ts_error *err);

/* The top switches of the separate fabrics a finalized tree holds, in natural name order: the
 * children of an implicit root that holds no node itself (topology.conf with several
 * parentless switches), else the root alone. Returns the count; writes at most max. */
int ts_fabric_tops(const ts_fabric *f, int *tops, int max);

/* Whether node `name` stays in a pruned tree. */
typedef int (*ts_fabric_keep_fn)(const char *name, void *arg);

/* What pruning left out. */
typedef struct ts_fabric_pruned {
    int nodes;                       /* nodes keep() refused */
    char *names;                     /* their names as a compressed hostlist (malloc'd), or NULL */
    int switches;                    /* switches left with no node below them */
} ts_fabric_pruned;

/* dst: a finalized copy of the finalized src with only the nodes keep() accepts and the
 * switches that still hold one of them (Slurm refuses a switch without children and a whole
 * topology that names a node it does not know); an implicit root left with one child gives
 * way to it. TS_EINPUT when no node is left: dst is then empty, `dropped` still filled. The
 * caller frees dst (ts_fabric_free) and dropped->names (free) after any return. */
int ts_fabric_keep_nodes(ts_fabric *dst, const ts_fabric *src, ts_fabric_keep_fn keep, void *arg,
                         ts_fabric_pruned *dropped, ts_error *err);

#endif
