/* toposcope — one hierarchy from the fabric down to the cores: root -> switches -> node ->
 * package -> NUMA -> L3 -> core.
 *
 * The switches and nodes come from the inter-node tree (a ts_fabric, children in its order),
 * everything below a node from that node's ts_hwtree, restricted to the cores the job may use.
 * Inside a node a vertex with a single child is merged into it, the way lstopo prints
 * "Package L#0 + L3 L#0": the child keeps the kinds of both (`kinds` is a bit set), so a level
 * that splits nothing costs no vertex but can still be asked for. Where an L3 cache spans
 * several NUMA nodes the L3 level sits above NUMA for that node.
 *
 * Nodes sharing one ts_hwtree pointer share one template, so 1024 identical nodes cost one
 * build of the intra-node part. */
#ifndef TOPOSCOPE_HIER_H
#define TOPOSCOPE_HIER_H

#include "toposcope/error.h"
#include "toposcope/fabric.h"
#include "toposcope/hwtree.h"

typedef enum ts_hier_kind {
    TS_HK_SWITCH = 0,
    TS_HK_NODE,
    TS_HK_PACKAGE,
    TS_HK_NUMA,
    TS_HK_L3,
    TS_HK_CORE,
    TS_HK_COUNT
} ts_hier_kind;

#define TS_HK_BIT(k) (1u << (k))

typedef struct ts_hier_vertex {
    unsigned kinds;          /* TS_HK_BIT()s of the levels merged into this vertex */
    int parent, first_child, next_sibling, last_child, nchildren;
    int depth;
    int fabric_vertex;       /* switches and nodes; TS_NONE inside a node */
    int node;                /* node index for a node and everything in it; TS_NONE above */
    int index[TS_HK_COUNT];  /* package/numa/l3/core: hwloc logical index where in kinds */
    int core;                /* vertices holding a core: its index in the node's ts_hwtree */
} ts_hier_vertex;

/* The intra-node part of one ts_hwtree: vertices in tree order, parents first (parent -1 is
 * the node itself), and where each usable core ended up. */
typedef struct ts_hier_template {
    const ts_hwtree *hw;
    int nvert;
    ts_hier_vertex *v;       /* parent: template index or -1 */
    int *core_vertex;        /* hwtree core -> template index, TS_NONE if not usable */
} ts_hier_template;

typedef struct ts_hierarchy {
    const ts_fabric *fabric;
    int nvert, cap;
    ts_hier_vertex *v;
    int root;
    int nnodes;
    int *node_vertex;        /* node index -> vertex */
    int *node_template;      /* node index -> template */
    int ntemplates;
    ts_hier_template *templates;
    int max_depth;
    const ts_hwtree *const *templates_hw;   /* during the build only */
} ts_hierarchy;

/* hw[i] is node i's tree (node index order of f); identical pointers share a template. Nodes
 * without a usable core are refused. f must be finalized and outlive h. */
int ts_hierarchy_build(ts_hierarchy *h, const ts_fabric *f, const ts_hwtree *const *hw,
                       ts_error *err);
void ts_hierarchy_free(ts_hierarchy *h);

/* The vertex holding core c of node n (TS_NONE if c is not usable). */
int ts_hierarchy_core_vertex(const ts_hierarchy *h, int node, int core);
/* "Package L#0 + L3 L#1" style label of a vertex inside a node; the name of a switch or node. */
void ts_hierarchy_label(const ts_hierarchy *h, int v, char *buf, size_t max);

#endif
