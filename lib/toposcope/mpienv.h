/* toposcope — the environment that points an MPI launcher at a placement (lib/place/mpienv.c).
 *
 * The policy's `mpi:` keys choose the launchers; what each can be told depends on the placement
 * (toposcope/mpiplan.h works that out):
 *
 *   export_mca  Open MPI 4   OMPI_MCA_rmaps_rank_file_path=RANKFILE
 *               Open MPI 5   LSB_AFFINITY_HOSTFILE=LSF_AFFINITY ("HOST CPUS" per rank, in rank
 *                            order: ts_emit_lsf_affinity). PRRTE removed the rank_file
 *                            component's path parameter, so it ignores the variable above, and
 *                            its own route, TS_MPI_ENV_PRTE below, breaks mpirun (see there);
 *                            PRRTE 3.0's rank_file mapper reads LSF's affinity file instead when
 *                            the command line asks for no mapping. Each Open MPI ignores the
 *                            other's variable (doc/testbed.md has the measured table).
 *   hydra       MPICH        HYDRA_HOST_FILE=HYDRA_HOSTS ("host:n", one line per run of
 *                            consecutive ranks on a node), HYDRA_BINDING=user:A+B,C+D
 *   intel_mpi   Intel MPI    I_MPI_HYDRA_HOST_FILE=HOSTFILE (it reads each host once),
 *                            I_MPI_PERHOST=K, I_MPI_PIN_PROCESSOR_LIST=A,C
 *
 * The plugin exports these from status.yaml (where the prolog keeps the plan) and hints.env
 * from the placement itself; both go through ts_mpi_env_each, so the variables are named here
 * only. */
#ifndef TOPOSCOPE_MPIENV_H
#define TOPOSCOPE_MPIENV_H

#include "toposcope/hints_read.h"

#define TS_MPI_ENV_OMPI4 "OMPI_MCA_rmaps_rank_file_path"
/* Open MPI 5's environment route to a rankfile, PRRTE's default mapping policy with the file:
 * NOT exported. PRRTE 3.0.8 (Open MPI 5.0.7, Debian 13) takes the policy but drops its file=,
 * and a plain mpirun then exits 251 without starting a rank, with OMPI_MCA_* beside it or not
 * (doc/testbed.md, tests/testbed/ompi-rankfile-routes); PRRTE's master has the fix, no release
 * yet. Once one does, ts_mpi_env_each can set it for export_mca: name and value are here. */
#define TS_MPI_ENV_PRTE "PRTE_MCA_rmaps_default_mapping_policy"
#define TS_MPI_PRTE_RANKFILE "rankfile:file="     /* the value: this, then the rankfile */
#define TS_MPI_ENV_LSF_AFFINITY "LSB_AFFINITY_HOSTFILE"
#define TS_MPI_ENV_HYDRA_HOSTS "HYDRA_HOST_FILE"
#define TS_MPI_ENV_HYDRA_BINDING "HYDRA_BINDING"
#define TS_MPI_ENV_INTEL_HOSTS "I_MPI_HYDRA_HOST_FILE"
#define TS_MPI_ENV_INTEL_PERHOST "I_MPI_PERHOST"
#define TS_MPI_ENV_INTEL_PIN "I_MPI_PIN_PROCESSOR_LIST"
/* The Hydra host file's and LSF affinity file's names beside the rankfile (the job's spool,
 * toposcope place --out). */
#define TS_MPI_HYDRA_HOSTS_FILE "hydra-hosts"
#define TS_MPI_LSF_AFFINITY_FILE "lsf-affinity"
/* The longest path ts_mpi_env_each passes on (a longer one is left out). */
#define TS_MPI_PATH_MAX 8192

/* What the launchers can be told of one placement. Strings are malloc'd (ts_mpi_plan_free). */
typedef struct ts_mpi_plan {
    int open_mpi, hydra, intel_mpi;  /* the policy's export_mca, hydra, intel_mpi, for a placement
                                        that has ranks and that launcher can follow */
    char *hydra_binding;             /* "user:0+1,2+3"; NULL: no binding fits the placement */
    int intel_perhost;               /* ranks per host and turn; 0: Intel MPI's host file cannot
                                        express the placement, so nothing is told to it */
    char *intel_pin;                 /* "0,2"; NULL: no pin list fits */
} ts_mpi_plan;

/* The files the variables point at; NULL: not written (its variables are left out). */
typedef struct ts_mpi_paths {
    const char *rankfile, *hostfile, *hydra_hosts, *lsf_affinity;
} ts_mpi_paths;

/* Calls set(ctx, KEY, VALUE) for each variable the plan and the paths give, in the order of the
 * table above. */
void ts_mpi_env_each(const ts_mpi_plan *plan, const ts_mpi_paths *paths, ts_env_setter set,
                     void *ctx);
void ts_mpi_plan_free(ts_mpi_plan *plan);

#endif
