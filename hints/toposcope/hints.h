/* toposcope hints for MPI programs: communicators that follow the network and the node.
 *
 * A job placed by toposcope knows, for every rank, its group at each level of the hierarchy,
 * outermost first: job, switchK, leaf (the leaf switch), node, package, numa, l3, core (levels a
 * job's hierarchy lacks are left out or repeat the next one). Group ids are dense per level and
 * numbered in the order of their lowest rank; a group's leader is its lowest rank, so rank 0
 * leads a group at every level.
 *
 * Where the hints come from, for the calling process (MPI_COMM_WORLD rank R on host H):
 *   1. the environment, when it describes this process: TOPOSCOPE_RANK=R (or, for measure-only
 *      hints, TOPOSCOPE_NODE_INDEX) and TOPOSCOPE_NODE=H, with TOPOSCOPE_LEVELS and per level
 *      TOPOSCOPE_GROUP_<LEVEL> / TOPOSCOPE_LEADER_<LEVEL>. srun tasks get these from the
 *      toposcope SPANK plugin (or `srun toposcope hints --exec PROG`). An environment that
 *      describes another rank (hints.env sourced by a batch script reaches every rank) is
 *      passed over, never used.
 *   2. otherwise hints.yaml at $TOPOSCOPE_HINTS (mpirun --rankfile jobs): the entry of rank R,
 *      which must put R on host H and must describe as many ranks as MPI_COMM_WORLD has.
 * H is $SLURMD_NODENAME where set (Slurm's name for the node), else the host name up to its
 * first dot.
 *
 * Every function returns MPI_SUCCESS or an MPI error class (MPI_ERR_ARG: a bad argument or a
 * level the hints lack; MPI_ERR_NO_SUCH_FILE: no hints file; MPI_ERR_OTHER: no hints, hints of
 * another job or layout, a broken file; MPI_ERR_NO_MEM), and on failure leaves a message for
 * toposcope_error_message(). Each call reads the hints afresh (hints.yaml up to this rank's
 * entry): call them at start-up, not in a loop. Link with -ltoposcope-hints -lyaml. */
#ifndef TOPOSCOPE_HINTS_H
#define TOPOSCOPE_HINTS_H

#include <mpi.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TOPOSCOPE_HINTS_ERROR_MAX 600

/* Collective over comm: *out gets the ranks of comm in the caller's group at level, ordered
 * as in comm, so the group's leader (its lowest world rank) is rank 0 of *out when comm is
 * MPI_COMM_WORLD. When any rank of comm cannot find its group every rank returns the error
 * (none hangs in MPI_Comm_split); *out is MPI_COMM_NULL then. */
int toposcope_comm_split(MPI_Comm comm, const char *level, MPI_Comm *out);

/* The caller's group id at level and whether it leads that group (1 or 0). Local. */
int toposcope_group(const char *level, int *group, int *leader);

/* The levels, outermost first, as "job,leaf,node,..." into names (len bytes); their count in
 * *count (either may be NULL). */
int toposcope_levels(char *names, int len, int *count);

/* Where the caller's hints came from: "environment" or the path of hints.yaml. */
int toposcope_hints_origin(char *origin, int len);

/* The message of this thread's last failed call ("" if none), e.g.
 *   "no level 'rack' in the hints; the levels are job,leaf,node,package,numa,l3,core". */
const char *toposcope_error_message(void);

#ifdef __cplusplus
}
#endif

#endif
