/* toposcope — a job's placement in one call (toposcope/jobplace.h). */
#include <string.h>
#include "toposcope/jobplace.h"

int ts_place_job(ts_job_placement *out, const ts_fabric *tree, const ts_hwtree *const *of_node,
                 const ts_policy *policy, const ts_place_options *opts,
                 const ts_model_params *params, ts_error *err)
{
    memset(out, 0, sizeof *out);
    int rc = ts_hierarchy_build(&out->hier, tree, of_node, err);
    if (rc == TS_OK)
        rc = ts_place(&out->hier, policy, opts, &out->placement, err);
    if (rc == TS_OK)
        rc = ts_groups_compute(&out->groups, &out->hier, &out->placement, err);
    if (rc == TS_OK)
        rc = ts_groups_logp(&out->groups, &out->hier, params, err);
    return rc;
}

void ts_job_placement_free(ts_job_placement *jp)
{
    ts_groups_free(&jp->groups);
    ts_placement_free(&jp->placement);
    ts_hierarchy_free(&jp->hier);
}
