/* toposcope — placement and anomaly policies (YAML, doc/policy.md).
 *
 *   placement:
 *     kind: block            # compact | spread | block | measure-only
 *     block_size: 8          # block only: ranks per block on one leaf switch
 *     ranks_per_node: 0      # at most this many ranks on a node (0: as many as its cores hold)
 *     ranks_per_core: 1      # ranks sharing one core (only with cpus_per_rank 1)
 *     cpus_per_rank: 1       # cores bound to each rank
 *   mpi:                     # which launchers the job's environment points at the placement
 *     export_mca: true       # Open MPI 4: the rankfile (toposcope/mpienv.h: none for 5)
 *     hydra: false           # MPICH: HYDRA_HOST_FILE, HYDRA_BINDING
 *     intel_mpi: false       # Intel MPI: I_MPI_HYDRA_HOST_FILE, I_MPI_PERHOST, I_MPI_PIN_*
 *   measure:
 *     time_budget_ms: 2000   # the prolog's hard measurement budget
 *   anomaly:
 *     threshold_pct: 0       # a significant excess counts above baseline * (1 + pct/100) ...
 *     threshold_us: 0        # ... and baseline + us (default 0, 0: significance alone)
 *   drain:                   # optional
 *     jobs: 3                # drain a node after anomalies in this many jobs ...
 *     hours: 24              # ... within this many hours
 *
 * Every key is optional except placement.kind. Unknown keys, wrong types and out-of-range values
 * are refused with FILE:LINE:COLUMN, the key and the allowed values. */
#ifndef TOPOSCOPE_POLICY_H
#define TOPOSCOPE_POLICY_H

#include <stddef.h>
#include "toposcope/error.h"

#define TS_POLICY_MAX_BYTES (64 * 1024)
#define TS_POLICY_NAME_MAX 64
#define TS_POLICY_MAX_BLOCK 65536
#define TS_POLICY_MAX_RANKS_PER_NODE 65536
#define TS_POLICY_MAX_RANKS_PER_CORE 64
#define TS_POLICY_MAX_CPUS_PER_RANK 4096

typedef enum ts_placement_kind {
    TS_PLACE_COMPACT = 0,
    TS_PLACE_SPREAD,
    TS_PLACE_BLOCK,
    TS_PLACE_MEASURE_ONLY,
} ts_placement_kind;

typedef struct ts_policy {
    char name[TS_POLICY_NAME_MAX];   /* the file's name without .yaml, or `name:` */
    ts_placement_kind kind;
    int block_size;                  /* block: K >= 1; others 0 */
    int ranks_per_node;              /* 0 = no limit */
    int ranks_per_core;              /* >= 1 */
    int cpus_per_rank;               /* >= 1 */
    int export_mca;                  /* Open MPI: the rankfile for a plain mpirun */
    int hydra;                       /* MPICH's Hydra: host file and binding; off by default, as
                                        HYDRA_HOST_FILE replaces Slurm's nodes for every mpiexec
                                        of the job */
    int intel_mpi;                   /* Intel MPI's Hydra: host file, ranks per host, pinning */
    double time_budget_ms;
    double anomaly_pct;
    double anomaly_us;
    int drain;                       /* the drain block is present */
    int drain_jobs;
    double drain_hours;
} ts_policy;

/* The defaults every key falls back to (compact, one core per rank, 2 s budget, anomaly thresholds 0% and 0 us). */
void ts_policy_default(ts_policy *p);
const char *ts_placement_kind_name(ts_placement_kind kind);

/* Parse text (len bytes). `source` names the input in messages. p is written only on success. */
int ts_policy_parse(ts_policy *p, const char *text, size_t len, const char *source, ts_error *err);
int ts_policy_load_file(ts_policy *p, const char *path, ts_error *err);
/* NAME (letters, digits, '-', '_') is looked up as NAME.yaml in each directory of dirs (a
 * NULL-terminated list); anything containing '/' or ending in ".yaml" is a file. For the
 * command line, where the user reads their own files. */
int ts_policy_load(ts_policy *p, const char *name_or_file, const char *const *dirs, ts_error *err);
/* A site policy: NAME only (a file name, a path, anything but letters, digits, '-' and '_' is
 * refused), looked up in dirs. For root, reading what a job named. */
int ts_policy_load_site(ts_policy *p, const char *name, const char *const *dirs, ts_error *err);
/* Whether s can be a policy NAME: 1 to TS_POLICY_NAME_MAX - 1 letters, digits, '-' and '_'. */
int ts_policy_name_ok(const char *s);
/* Where ts_policy_load_site would read NAME from, into path: TS_EINPUT (naming the directories
 * searched) for a name that is not one or a policy none of dirs holds. Reads no file, so the
 * SPANK plugin can check a job's --topo-aware=NAME where the job is submitted. */
int ts_policy_find_site(const char *name, const char *const *dirs, char *path, size_t max,
                        ts_error *err);

#endif
