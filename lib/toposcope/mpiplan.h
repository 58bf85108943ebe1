/* toposcope — what the MPI launchers can be told of one placement (lib/place/mpiplan.c).
 *
 * Open MPI reads the rankfile, which says everything. Hydra does not, and what it can be told
 * has limits (MPICH 4.0.2's mpiexec, tried; Intel MPI's reference for its own):
 *   - MPICH starts one proxy per line of its host file, each line a run of consecutive ranks on
 *     one node ("host:n", ts_emit_hydra_hosts), and binds the k-th process of every proxy, on
 *     every node, to the k-th entry of HYDRA_BINDING=user:... (PU OS indices, '+' within an
 *     entry, ',' between entries). So a binding exists only when the k-th rank of every line has
 *     the same CPUs; a node on several lines is several "nodes" to MPICH (no shared memory
 *     between them), which the note says.
 *   - Intel MPI reads each host of its host file once (the hostfile, in rank order, gives them
 *     in the order of their first rank) and deals I_MPI_PERHOST consecutive ranks to each host
 *     in turn: the placement must be that pattern. I_MPI_PIN_PROCESSOR_LIST pins the k-th rank
 *     of a host to the k-th CPU of the list, one CPU per rank, alike on every host.
 *   - In a Slurm job both start their proxies with srun, which puts proxy k (line k of MPICH's
 *     host file, host k of Intel MPI's) on the job's k-th node in Slurm's order, whatever host
 *     the line names (MPICH's slurm launcher: srun -N lines -n lines, proxy id = SLURM_NODEID).
 *     So there the lines must be the job's first nodes in Slurm's order, each once.
 * What does not fit is left out of the plan, never approximated, and the note says why. */
#ifndef TOPOSCOPE_MPIPLAN_H
#define TOPOSCOPE_MPIPLAN_H

#include <stddef.h>
#include "toposcope/error.h"
#include "toposcope/mpienv.h"
#include "toposcope/place.h"
#include "toposcope/policy.h"

/* The nodes of a Slurm job in Slurm's order (its hostlist expanded), where Hydra's proxies
 * are started by srun; NULL names: not a Slurm job (ssh starts each proxy on its line's host). */
typedef struct ts_mpi_nodes {
    char *const *names;
    int count;
} ts_mpi_nodes;

/* The plan for pl under p's mpi keys into *plan (initialised first; ts_mpi_plan_free): a
 * launcher that cannot be told this placement has its switch off. note gets what was left out
 * and why, "" when nothing was. TS_ENOMEM is the only failure. */
int ts_mpi_plan_make(ts_mpi_plan *plan, const ts_placement *pl, const ts_policy *p,
                     const ts_mpi_nodes *slurm, char *note, size_t note_max, ts_error *err);

#endif
