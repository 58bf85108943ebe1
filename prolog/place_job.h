/* Placement for a job, in the prolog: after the agents wrote SPOOL/JOB/tree.yaml, every agent
 * places the job's ranks on that tree with the job's policy and writes rankfile, hostfile,
 * machinefile, hints.yaml and tree.txt beside it, then records the outcome in status.yaml
 * (placement: placed|none|failed, placement_reason).
 *
 * Every agent computes the same placement from the same inputs (the leader's tree, the policy,
 * SLURM_JOB_CPUS_PER_NODE), so nothing more crosses the network. The cores inside the other
 * nodes are not measured: nodes of one job are taken to be built alike, each offering as many
 * of this node's PUs (first ones in hwloc order) as Slurm allocated to the job there. */
#ifndef TOPOSCOPE_PLACE_JOB_H
#define TOPOSCOPE_PLACE_JOB_H

#include <sys/types.h>
#include "toposcope/error.h"
#include "toposcope/policy.h"

typedef struct place_job_request {
    const char *spool_parent;           /* the job's directory is spool_parent/<job> */
    unsigned job;
    uid_t uid;                          /* the job's user, who alone may read the files */
    gid_t gid;                          /* group of the files written */
    char *const *names;                 /* the job's nodes, hostlist order */
    int nnodes;
    const char *policy_name;            /* as the job named it, for status.yaml */
    const ts_policy *policy;            /* loaded once by the caller; NULL: load_error says why */
    const char *cpus_per_node;          /* SLURM_JOB_CPUS_PER_NODE; NULL: every PU of a node */
    int ntasks;                         /* 0: fill the allocated CPUs */
} place_job_request;

/* Place and write; on any failure status.yaml says why (placement: failed) and the error is
 * returned too. A policy that could not be loaded is passed as load_error (placement fails
 * with that reason) and r->policy as NULL. */
int place_job_run(const place_job_request *r, const char *load_error, ts_error *err);

#endif
