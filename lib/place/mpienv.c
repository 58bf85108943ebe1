/* toposcope — the environment that points an MPI launcher at a placement (see mpienv.h).
 * Linked into the SPANK plugin: libc only, no placement. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "toposcope/mpienv.h"

/* path, or NULL when there is none or it is too long to pass on whole */
static const char *usable(const char *path)
{
    return path && strnlen(path, TS_MPI_PATH_MAX) < TS_MPI_PATH_MAX ? path : NULL;
}

void ts_mpi_env_each(const ts_mpi_plan *plan, const ts_mpi_paths *paths, ts_env_setter set,
                     void *ctx)
{
    char value[32];
    const char *rankfile = usable(paths->rankfile), *hostfile = usable(paths->hostfile);
    const char *hydra_hosts = usable(paths->hydra_hosts);
    const char *lsf_affinity = usable(paths->lsf_affinity);
    /* Open MPI 4 reads the first, Open MPI 5 the second; each ignores the other's */
    if (plan->open_mpi && rankfile)
        set(ctx, TS_MPI_ENV_OMPI4, rankfile);
    if (plan->open_mpi && lsf_affinity)
        set(ctx, TS_MPI_ENV_LSF_AFFINITY, lsf_affinity);
    if (plan->hydra && hydra_hosts) {
        set(ctx, TS_MPI_ENV_HYDRA_HOSTS, hydra_hosts);
        if (plan->hydra_binding)
            set(ctx, TS_MPI_ENV_HYDRA_BINDING, plan->hydra_binding);
    }
    /* without its ranks per host Intel MPI would deal the ranks its own way: all or nothing */
    if (plan->intel_mpi && hostfile && plan->intel_perhost > 0) {
        set(ctx, TS_MPI_ENV_INTEL_HOSTS, hostfile);
        snprintf(value, sizeof value, "%d", plan->intel_perhost);
        set(ctx, TS_MPI_ENV_INTEL_PERHOST, value);
        if (plan->intel_pin)
            set(ctx, TS_MPI_ENV_INTEL_PIN, plan->intel_pin);
    }
}

void ts_mpi_plan_free(ts_mpi_plan *plan)
{
    free(plan->hydra_binding);
    free(plan->intel_pin);
    plan->hydra_binding = plan->intel_pin = NULL;
}
