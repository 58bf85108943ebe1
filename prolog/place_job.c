/* Placement for a job, in the prolog (see place_job.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "place_job.h"
#include "toposcope/emit.h"
#include "toposcope/groups.h"
#include "toposcope/hier.h"
#include "toposcope/hostlist.h"
#include "toposcope/hwtree.h"
#include "toposcope/jobplace.h"
#include "toposcope/measure.h"
#include "toposcope/model.h"
#include "toposcope/mpiplan.h"
#include "toposcope/place.h"
#include "toposcope/policy.h"
#include "toposcope/treeyaml.h"
#include "toposcope/cpus_per_node.h"
#include "toposcope/spool.h"

/* ---- the job's directory (lib/site/spool.c) ---- */

static int job_dir_open(const place_job_request *r, ts_error *err)
{
    char job[16];
    snprintf(job, sizeof job, "%u", r->job);
    return ts_spool_open(r->spool_parent, job, r->uid, r->gid, err);
}

/* status.yaml as the agents wrote it, plus the placement's outcome. */
static int status_append(const place_job_request *r, int dirfd, const char *outcome,
                         const char *policy, const ts_mpi_plan *mpi, const char *reason,
                         ts_error *err)
{
    size_t len = 0;
    char *old = NULL, *s = NULL;
    int rc = ts_spool_read(dirfd, "status.yaml", TS_STATUS_MAX_BYTES, &old, &len, err);
    if (rc != TS_OK)
        return rc;
    size_t slen;
    FILE *m = open_memstream(&s, &slen);
    if (!m) {
        free(old);
        return ts_fail(err, TS_ENOMEM, "out of memory");
    }
    if (old)
        fwrite(old, 1, len, m);
    free(old);
    ts_status_emit_placement(m, outcome, policy, reason, mpi);
    if (ferror(m) | fclose(m)) {
        free(s);
        return ts_fail(err, TS_ENOMEM, "out of memory");
    }
    rc = ts_spool_write(dirfd, "status.yaml", s, slen, r->uid, r->gid, err);
    free(s);
    return rc;
}

/* ---- the nodes' CPUs ---- */

/* This node's first `count` usable PUs, as a cpulist for ts_hwtree_load_live. */
static void first_pus(const ts_hwtree *all, int count, char *buf, size_t max)
{
    size_t used = 0;
    int taken = 0;
    buf[0] = '\0';
    for (int c = 0; c < all->ncores && taken < count; c++) {
        if (!all->core[c].usable)
            continue;
        for (int k = 0; k < all->core[c].npus && taken < count && used + 16 < max; k++, taken++)
            used += (size_t)snprintf(buf + used, max - used, "%s%d", used ? "," : "",
                                     all->pus[all->core[c].first_pu + k]);
    }
}

typedef struct job_hw {
    int n;
    int count[8];                /* distinct CPU counts seen, each with its tree */
    ts_hwtree tree[8];
    const ts_hwtree **of_node;
} job_hw;

static void job_hw_free(job_hw *j)
{
    for (int i = 0; i < j->n; i++)
        ts_hwtree_free(&j->tree[i]);
    free(j->of_node);
}

/* One tree per distinct CPU count (at most a few in a job); beyond eight distinct counts the
 * nodes get this node's whole tree, which is still a valid, if looser, placement. */
static int job_hw_load(job_hw *j, const ts_fabric *tree, const place_job_request *r, ts_error *err)
{
    memset(j, 0, sizeof *j);
    int *counts = calloc((size_t)r->nnodes, sizeof *counts);
    j->of_node = calloc((size_t)tree->nnodes + 1, sizeof *j->of_node);
    ts_hwtree all;
    ts_hwtree_init(&all);
    int rc = !counts || !j->of_node ? ts_fail(err, TS_ENOMEM, "out of memory") : TS_OK;
    if (rc == TS_OK && r->cpus_per_node)
        rc = ts_cpus_per_node_parse(r->cpus_per_node, r->nnodes, counts, err);
    if (rc == TS_OK)
        rc = ts_hwtree_load_live(&all, NULL, err);
    for (int i = 0; rc == TS_OK && i < tree->nnodes; i++) {
        const char *name = tree->v[tree->node_vertex[i]].name;
        int node = -1;
        for (int k = 0; k < r->nnodes && node < 0; k++)
            if (strcmp(r->names[k], name) == 0)
                node = k;
        if (node < 0) {
            rc = ts_fail(err, TS_EINPUT, "tree.yaml names node %s, which is not in the job", name);
            break;
        }
        int want = r->cpus_per_node ? counts[node] : all.npus;
        if (want > all.npus)
            want = all.npus;
        int t;
        for (t = 0; t < j->n && j->count[t] != want; t++)
            ;
        if (t == j->n && j->n == 8) {
            want = all.npus;
            for (t = 0; t < j->n && j->count[t] != want; t++)
                ;
        }
        if (t == j->n) {
            char list[4096];
            first_pus(&all, want, list, sizeof list);
            ts_hwtree_init(&j->tree[t]);
            if ((rc = ts_hwtree_load_live(&j->tree[t], list, err)) != TS_OK)
                break;
            j->count[t] = want;
            j->n++;
        }
        j->of_node[i] = &j->tree[t];
    }
    ts_hwtree_free(&all);
    free(counts);
    return rc;
}

/* ---- placement ---- */

typedef int (*emit_fn)(FILE *out, const ts_hierarchy *h, const ts_placement *pl,
                       const ts_groups *g, const ts_policy *p);
static int emit_rankfile(FILE *o, const ts_hierarchy *h, const ts_placement *pl, const ts_groups *g,
                         const ts_policy *p) { return ts_emit_rankfile(pl, o); }
static int emit_hostfile(FILE *o, const ts_hierarchy *h, const ts_placement *pl, const ts_groups *g,
                         const ts_policy *p) { return ts_emit_hostfile(pl, o); }
static int emit_machinefile(FILE *o, const ts_hierarchy *h, const ts_placement *pl,
                            const ts_groups *g, const ts_policy *p) { return ts_emit_machinefile(pl, o); }
static int emit_hydra_hosts(FILE *o, const ts_hierarchy *h, const ts_placement *pl,
                            const ts_groups *g, const ts_policy *p) { return ts_emit_hydra_hosts(pl, o); }
static int emit_lsf_affinity(FILE *o, const ts_hierarchy *h, const ts_placement *pl,
                             const ts_groups *g, const ts_policy *p) { return ts_emit_lsf_affinity(pl, o); }
static int emit_hints(FILE *o, const ts_hierarchy *h, const ts_placement *pl, const ts_groups *g,
                      const ts_policy *p) { return ts_emit_hints_yaml(h, pl, g, p, o); }
static int emit_text(FILE *o, const ts_hierarchy *h, const ts_placement *pl, const ts_groups *g,
                     const ts_policy *p) { return ts_emit_tree_text(h, pl, o); }

static const struct {
    const char *name;
    emit_fn emit;
    int ranks_only;              /* measure-only writes no rankfile, hostfile, machinefile */
    enum { ANY_LAUNCHER, HYDRA, OPEN_MPI } only_for;   /* a launcher the policy's mpi: names */
} outputs[] = {
    {"rankfile", emit_rankfile, 1, ANY_LAUNCHER}, {"hostfile", emit_hostfile, 1, ANY_LAUNCHER},
    {"machinefile", emit_machinefile, 1, ANY_LAUNCHER},
    {TS_MPI_HYDRA_HOSTS_FILE, emit_hydra_hosts, 1, HYDRA},
    {TS_MPI_LSF_AFFINITY_FILE, emit_lsf_affinity, 1, OPEN_MPI},
    {"hints.yaml", emit_hints, 0, ANY_LAUNCHER}, {"tree.txt", emit_text, 0, ANY_LAUNCHER},
};

static int write_outputs(const place_job_request *r, int dirfd, const ts_hierarchy *h,
                         const ts_placement *pl, const ts_groups *g, const ts_policy *p,
                         ts_error *err)
{
    for (size_t k = 0; k < sizeof outputs / sizeof outputs[0]; k++) {
        if ((outputs[k].ranks_only && pl->nranks == 0) ||
            (outputs[k].only_for == HYDRA && !p->hydra) ||
            (outputs[k].only_for == OPEN_MPI && !p->export_mca))
            continue;
        char *s = NULL;
        size_t len;
        FILE *m = open_memstream(&s, &len);
        if (!m)
            return ts_fail(err, TS_ENOMEM, "out of memory");
        int rc = outputs[k].emit(m, h, pl, g, p);
        if ((ferror(m) | fclose(m)) && rc == TS_OK)
            rc = ts_fail(err, TS_ENOMEM, "out of memory writing %s", outputs[k].name);
        else if (rc != TS_OK)
            ts_fail(err, rc, "cannot render %s", outputs[k].name);
        if (rc == TS_OK)
            rc = ts_spool_write(dirfd, outputs[k].name, s, len, r->uid, r->gid, err);
        free(s);
        if (rc != TS_OK)
            return rc;
    }
    return TS_OK;
}

int place_job_run(const place_job_request *r, const char *load_error, ts_error *err)
{
    int dirfd = job_dir_open(r, err);
    if (dirfd < 0)
        return dirfd;
    ts_fabric tree;
    ts_model_params params;
    job_hw hw = {0};
    ts_job_placement jp;
    char path[4096];
    int rc;
    ts_fabric_init(&tree);
    memset(&params, 0, sizeof params);
    memset(&jp, 0, sizeof jp);
    snprintf(path, sizeof path, "%s/%u/tree.yaml", r->spool_parent, r->job);
    if (load_error || !r->policy)
        rc = ts_fail(err, TS_EINPUT, "%s", load_error ? load_error : "no policy");
    else
        rc = TS_OK;
    const ts_policy *policy = r->policy;
    if (rc == TS_OK)
        rc = ts_fabric_load_tree(&tree, path, err);
    if (rc == TS_OK)
        rc = job_hw_load(&hw, &tree, r, err);
    ts_place_options po = {r->ntasks, 0};
    if (rc == TS_OK && (rc = ts_model_params_profile(&params, "ethernet", err)) == TS_OK &&
        (rc = ts_place_job(&jp, &tree, hw.of_node, policy, &po, &params, err)) == TS_OK)
        rc = write_outputs(r, dirfd, &jp.hier, &jp.placement, &jp.groups, policy, err);
    /* what the plugin will tell the MPI launchers, and what they cannot be told (the note) */
    ts_mpi_plan mpi = {0};
    char note[1024] = "";
    ts_mpi_nodes slurm_order = {r->names, r->nnodes};   /* srun starts Hydra's proxies */
    if (rc == TS_OK)
        rc = ts_mpi_plan_make(&mpi, &jp.placement, policy, &slurm_order, note, sizeof note, err);
    ts_error serr;
    char why[TS_ERROR_TEXT_MAX + sizeof note + 64];
    if (rc == TS_OK)
        snprintf(why, sizeof why, "%d ranks on %d nodes (policy %s, %s)%s%s", jp.placement.nranks,
                 jp.hier.nnodes, policy->name, ts_placement_kind_name(policy->kind),
                 note[0] ? "; " : "", note);
    else
        snprintf(why, sizeof why, "%s", err->text);
    int nranks = jp.placement.nranks;
    int src = status_append(r, dirfd, rc != TS_OK ? "failed" : nranks ? "placed" : "none",
                            r->policy_name, rc == TS_OK ? &mpi : NULL, why, &serr);
    ts_mpi_plan_free(&mpi);
    if (src != TS_OK && rc == TS_OK) {
        *err = serr;
        rc = src;
    }
    ts_job_placement_free(&jp);
    job_hw_free(&hw);
    ts_fabric_free(&tree);
    ts_model_params_free(&params);
    close(dirfd);
    return rc;
}
