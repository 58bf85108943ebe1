/* toposcope — what the MPI launchers can be told of one placement (see mpiplan.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "toposcope/mpiplan.h"

static const char *node_name(const ts_placement *pl, int r)
{
    const ts_fabric *f = pl->h->fabric;
    return f->v[f->node_vertex[pl->rank[r].node]].name;
}

/* ---- each rank's CPUs ---- */

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* Rank r's PUs (OS indices, ascending, so equal sets read equal) joined by '+', as Hydra's user
 * binding wants an entry; NULL when out of memory. */
static char *rank_pus(const ts_placement *pl, int r)
{
    int ncores;
    const int *cores = ts_placement_cores(pl, r, &ncores);
    const ts_hwtree *hw = ts_placement_hwtree(pl, pl->rank[r].node);
    int n = 0;
    for (int k = 0; k < ncores; k++)
        n += hw->core[cores[k]].npus;
    int *pus = malloc(sizeof *pus * (size_t)(n ? n : 1));
    char *text = malloc((size_t)n * 12 + 1);
    if (!pus || !text) {
        free(pus);
        free(text);
        return NULL;
    }
    n = 0;
    for (int k = 0; k < ncores; k++)
        for (int i = 0; i < hw->core[cores[k]].npus; i++)
            pus[n++] = hw->pus[hw->core[cores[k]].first_pu + i];
    qsort(pus, (size_t)n, sizeof *pus, cmp_int);
    size_t used = 0;
    text[0] = '\0';
    for (int i = 0; i < n; i++)
        used += (size_t)sprintf(text + used, "%s%d", i ? "+" : "", pus[i]);
    free(pus);
    return text;
}

/* ---- the k-th process of a proxy or a host ---- */

/* Per rank its index among the ranks Hydra starts together: MPICH's proxy is a run of
 * consecutive ranks on one node, Intel MPI's a whole host. NULL when out of memory. */
static int *local_index(const ts_placement *pl, int per_host)
{
    int *local = malloc(sizeof *local * (size_t)pl->nranks);
    int *seen = per_host ? calloc((size_t)pl->h->nnodes, sizeof *seen) : NULL;
    if (!local || (per_host && !seen)) {
        free(local);
        free(seen);
        return NULL;
    }
    for (int r = 0; r < pl->nranks; r++) {
        if (per_host)
            local[r] = seen[pl->rank[r].node]++;
        else
            local[r] = r > 0 && pl->rank[r].node == pl->rank[r - 1].node ? local[r - 1] + 1 : 0;
    }
    free(seen);
    return local;
}

static void append(char *note, size_t max, const char *fmt, ...) TS_PRINTF(3, 4);
static void append(char *note, size_t max, const char *fmt, ...)
{
    size_t used = strlen(note);
    if (used && used + 2 < max)
        used += (size_t)snprintf(note + used, max - used, "; ");
    va_list ap;
    va_start(ap, fmt);
    if (used < max)
        vsnprintf(note + used, max - used, fmt, ap);
    va_end(ap);
}

/* The list of CPUs by local index: entry k holds the PUs of the ranks with local index k, which
 * must all have the same ones. *out stays NULL when they differ (the note says which ranks), or
 * when one_cpu asks for a single PU per rank and a rank has more. */
static int list_by_local(const ts_placement *pl, char *const *pus, const int *local,
                         const char *prefix, int one_cpu, const char *var, const char *group,
                         char **out, char *note, size_t max)
{
    *out = NULL;
    int *first = malloc(sizeof *first * (size_t)pl->nranks), nlocal = 0;
    if (!first)
        return TS_ENOMEM;
    size_t len = strlen(prefix) + 1;
    for (int r = 0; r < pl->nranks; r++) {
        int k = local[r];
        if (k == nlocal) {
            first[nlocal++] = r;
            len += strlen(pus[r]) + 1;
        }
        if (one_cpu && strchr(pus[r], '+')) {
            append(note, max, "%s left out: rank %d has CPUs %s, and it pins a rank to one CPU",
                   var, r, pus[r]);
            free(first);
            return TS_OK;
        }
        if (strcmp(pus[r], pus[first[k]]) != 0) {
            append(note, max, "%s left out: ranks %d (%s) and %d (%s) are each process %d of "
                   "their %s but have CPUs %s and %s", var, first[k], node_name(pl, first[k]),
                   r, node_name(pl, r), k, group, pus[first[k]], pus[r]);
            free(first);
            return TS_OK;
        }
    }
    char *list = malloc(len);
    if (!list) {
        free(first);
        return TS_ENOMEM;
    }
    size_t used = (size_t)sprintf(list, "%s", prefix);
    for (int k = 0; k < nlocal; k++)
        used += (size_t)sprintf(list + used, "%s%s", k ? "," : "", pus[first[k]]);
    free(first);
    *out = list;
    return TS_OK;
}

/* ---- the order srun starts the proxies in ---- */

/* nodes[k] (node indices) against the job's k-th node in Slurm's order: the first k where they
 * differ, or -1. Without a Slurm job every order holds. */
static int off_slurm_order(const ts_placement *pl, const int *nodes, int count,
                           const ts_mpi_nodes *slurm)
{
    if (!slurm || !slurm->names)
        return -1;
    const ts_fabric *f = pl->h->fabric;
    for (int k = 0; k < count; k++)
        if (k >= slurm->count || strcmp(f->v[f->node_vertex[nodes[k]]].name, slurm->names[k]) != 0)
            return k;
    return -1;
}

static void explain_order(const ts_placement *pl, const int *nodes, int k, const ts_mpi_nodes *slurm,
                          const char *who, const char *line, char *note, size_t max)
{
    const ts_fabric *f = pl->h->fabric;
    append(note, max, "%s left out: srun starts %s %d on the job's node %d in Slurm's order (%s), "
           "and the placement needs %s there", who, line, k + 1, k + 1,
           k < slurm->count ? slurm->names[k] : "none", f->v[f->node_vertex[nodes[k]]].name);
}

/* ---- MPICH ---- */

static int plan_hydra(ts_mpi_plan *plan, const ts_placement *pl, char *const *pus,
                      const ts_mpi_nodes *slurm, char *note, size_t max)
{
    int *local = local_index(pl, 0);
    int *lines = calloc((size_t)pl->nranks, sizeof *lines);
    int *runs = calloc((size_t)pl->h->nnodes, sizeof *runs);
    int rc = local && lines && runs ? TS_OK : TS_ENOMEM, nlines = 0, split = -1;
    for (int r = 0; rc == TS_OK && r < pl->nranks; r++) {
        if (local[r] != 0)
            continue;
        lines[nlines++] = pl->rank[r].node;
        if (++runs[pl->rank[r].node] == 2 && split < 0)
            split = r;
    }
    int off = rc == TS_OK ? off_slurm_order(pl, lines, nlines, slurm) : -1;
    if (off >= 0) {
        explain_order(pl, lines, off, slurm, "MPICH's variables", "host-file line", note, max);
        plan->hydra = 0;
    } else if (rc == TS_OK) {
        if (split >= 0)
            append(note, max, "%s is on several lines of the Hydra host file (again from rank %d): "
                   "MPICH takes each line for a node of its own", node_name(pl, split), split);
        rc = list_by_local(pl, pus, local, "user:", 0, TS_MPI_ENV_HYDRA_BINDING,
                           "Hydra host-file line", &plan->hydra_binding, note, max);
    }
    free(local);
    free(lines);
    free(runs);
    return rc;
}

/* ---- Intel MPI ---- */

/* The I_MPI_PERHOST that deals the ranks as placed: K consecutive ranks to each host in the
 * order of their first rank, round after round, those hosts being the job's first in Slurm's
 * order; 0 (and why) when no K does. */
static int intel_perhost(const ts_placement *pl, const ts_mpi_nodes *slurm, char *note, size_t max,
                         int *perhost)
{
    int *order = malloc(sizeof *order * (size_t)pl->h->nnodes);
    char *seen = calloc((size_t)pl->h->nnodes, 1);
    if (!order || !seen) {
        free(order);
        free(seen);
        return TS_ENOMEM;
    }
    int hosts = 0, k = 1;
    for (int r = 0; r < pl->nranks; r++)
        if (!seen[pl->rank[r].node]++)
            order[hosts++] = pl->rank[r].node;
    while (k < pl->nranks && pl->rank[k].node == pl->rank[0].node)
        k++;
    *perhost = k;
    for (int r = 0; r < pl->nranks; r++) {
        int want = order[(r / k) % hosts];
        if (pl->rank[r].node != want) {
            const ts_fabric *f = pl->h->fabric;
            append(note, max, "Intel MPI's variables left out: rank %d is on %s, where "
                   "I_MPI_PERHOST=%d over the hosts in the order of their first rank would put "
                   "it on %s", r, node_name(pl, r), k, f->v[f->node_vertex[want]].name);
            *perhost = 0;
            break;
        }
    }
    int off = *perhost ? off_slurm_order(pl, order, hosts, slurm) : -1;
    if (off >= 0) {
        explain_order(pl, order, off, slurm, "Intel MPI's variables", "host", note, max);
        *perhost = 0;
    }
    free(order);
    free(seen);
    return TS_OK;
}

static int plan_intel(ts_mpi_plan *plan, const ts_placement *pl, char *const *pus,
                      const ts_mpi_nodes *slurm, char *note, size_t max)
{
    int rc = intel_perhost(pl, slurm, note, max, &plan->intel_perhost);
    if (rc != TS_OK || plan->intel_perhost == 0) {
        plan->intel_mpi = 0;
        return rc;
    }
    int *local = local_index(pl, 1);
    if (!local)
        return TS_ENOMEM;
    rc = list_by_local(pl, pus, local, "", 1, TS_MPI_ENV_INTEL_PIN, "host", &plan->intel_pin,
                       note, max);
    free(local);
    return rc;
}

int ts_mpi_plan_make(ts_mpi_plan *plan, const ts_placement *pl, const ts_policy *p,
                     const ts_mpi_nodes *slurm, char *note, size_t note_max, ts_error *err)
{
    memset(plan, 0, sizeof *plan);
    note[0] = '\0';
    if (!pl || pl->nranks == 0)
        return TS_OK;
    plan->open_mpi = p->export_mca;
    plan->hydra = p->hydra;
    plan->intel_mpi = p->intel_mpi;
    if (!p->hydra && !p->intel_mpi)
        return TS_OK;
    char **pus = calloc((size_t)pl->nranks, sizeof *pus);
    int rc = pus ? TS_OK : TS_ENOMEM;
    for (int r = 0; rc == TS_OK && r < pl->nranks; r++)
        if (!(pus[r] = rank_pus(pl, r)))
            rc = TS_ENOMEM;
    if (rc == TS_OK && p->hydra)
        rc = plan_hydra(plan, pl, pus, slurm, note, note_max);
    if (rc == TS_OK && p->intel_mpi)
        rc = plan_intel(plan, pl, pus, slurm, note, note_max);
    for (int r = 0; pus && r < pl->nranks; r++)
        free(pus[r]);
    free(pus);
    if (rc != TS_OK) {
        ts_mpi_plan_free(plan);
        return ts_fail(err, rc, "out of memory planning the MPI launchers' variables");
    }
    return TS_OK;
}
