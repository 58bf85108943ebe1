/* toposcope — a job's placement in one call: the switch tree merged with the nodes' hwloc
 * trees, the ranks placed by the policy, the groups at every level with their LogP estimates.
 * `toposcope place` and the node agents both run it, so what a user tries by hand is what the
 * prolog writes for a job. */
#ifndef TOPOSCOPE_JOBPLACE_H
#define TOPOSCOPE_JOBPLACE_H

#include "toposcope/error.h"
#include "toposcope/fabric.h"
#include "toposcope/groups.h"
#include "toposcope/hier.h"
#include "toposcope/hwtree.h"
#include "toposcope/model.h"
#include "toposcope/place.h"
#include "toposcope/policy.h"

typedef struct ts_job_placement {
    ts_hierarchy hier;       /* root, switches, node, package, NUMA, L3, core */
    ts_placement placement;  /* rank -> node and CPUs (no ranks for measure-only policies) */
    ts_groups groups;        /* per rank its group at every level, and the levels' LogP */
} ts_job_placement;

/* Build all three from the switch tree, the hwloc tree of each of its nodes (of_node[i] for
 * tree->node_vertex[i]), the policy, the placement options and the latency model the LogP
 * estimates fall back on. out is initialised here; free it with ts_job_placement_free
 * whatever this returns. */
int ts_place_job(ts_job_placement *out, const ts_fabric *tree, const ts_hwtree *const *of_node,
                 const ts_policy *policy, const ts_place_options *opts,
                 const ts_model_params *params, ts_error *err);
void ts_job_placement_free(ts_job_placement *jp);

#endif
