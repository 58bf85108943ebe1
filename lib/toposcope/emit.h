/* toposcope — what a placement hands to the job and to people.
 *
 *   rankfile      Open MPI: "rank R=HOST slot=P:C" (P the package, C the core inside it, both
 *                 logical) or "slot=P:C-D" for a rank with several cores
 *   hostfile      one host per rank, in rank order (srun -m arbitrary, SLURM_HOSTFILE)
 *   machinefile   "HOST:COUNT" per node in hierarchy order
 *   hydra-hosts   "HOST:COUNT" per run of consecutive ranks on one node, in rank order: MPICH's
 *                 Hydra host file (toposcope/mpiplan.h)
 *   lsf-affinity  "HOST CPUS" per rank, in rank order, CPUS the OS numbers of the rank's
 *                 hardware threads joined by ',': LSF's affinity file, which Open MPI 5 follows
 *                 (toposcope/mpienv.h)
 *   hints.yaml    levels (name, depth, groups, LogP), and per rank its node, slot, CPUs, group id
 *                 at every level and whether it leads that group (per node for measure-only)
 *   hints.env     the environment of one rank (TOPOSCOPE_*, and the MPI launchers' variables
 *                 the policy asks for: toposcope/mpienv.h)
 *   tree.txt      the hierarchy as indented text (like lstopo's) with the ranks under each vertex
 *   tree.dot      Graphviz; inside nodes only when the hierarchy is small
 *
 * The writers buffer their output themselves: 65 536 ranks are a few megabytes, written in
 * milliseconds. They return TS_OK or TS_ESYS when the stream reports an error. */
#ifndef TOPOSCOPE_EMIT_H
#define TOPOSCOPE_EMIT_H

#include <stdio.h>
#include "toposcope/groups.h"
#include "toposcope/hier.h"
#include "toposcope/mpienv.h"
#include "toposcope/place.h"
#include "toposcope/policy.h"

/* tree.dot shows packages, NUMA, L3 and cores only up to this many hierarchy vertices. */
#define TS_DOT_DETAIL_MAX 600

/* Absolute paths of the files hints.env points at (NULL: not written). */
typedef struct ts_emit_paths {
    const char *hints, *rankfile, *hostfile, *machinefile, *hydra_hosts, *lsf_affinity;
} ts_emit_paths;

int ts_emit_rankfile(const ts_placement *pl, FILE *out);
int ts_emit_hostfile(const ts_placement *pl, FILE *out);
int ts_emit_machinefile(const ts_placement *pl, FILE *out);
int ts_emit_hydra_hosts(const ts_placement *pl, FILE *out);
int ts_emit_lsf_affinity(const ts_placement *pl, FILE *out);
int ts_emit_hints_yaml(const ts_hierarchy *h, const ts_placement *pl, const ts_groups *g,
                       const ts_policy *p, FILE *out);
/* The environment of member `rank` (a rank, or a node for measure-only); paths may be NULL,
 * and mpi (the launchers' plan, toposcope/mpiplan.h) too: then no launcher's variable. */
int ts_emit_hints_env(const ts_hierarchy *h, const ts_placement *pl, const ts_groups *g,
                      const ts_policy *p, const ts_emit_paths *paths, const ts_mpi_plan *mpi,
                      int rank, FILE *out);
int ts_emit_tree_text(const ts_hierarchy *h, const ts_placement *pl, FILE *out);
int ts_emit_tree_dot(const ts_hierarchy *h, const ts_placement *pl, FILE *out);

/* "P:C" or "P:C-D" (runs joined by ',') for rank r, into buf. */
void ts_emit_slot(const ts_placement *pl, int r, char *buf, size_t max);

#endif
