/* toposcope — link estimates against a truth fabric, and links.yaml.
 *
 * An estimated link and a truth link are the same link when they split the nodes the same way.
 * Node sets are compared by a 64-bit sum of per-name hashes (and their sizes), so the mapping
 * costs one pass over each tree; an inferred tree may be rooted elsewhere than the truth, so a
 * link matches a truth link whose node set is either its own or the complement. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "toposcope/links.h"
#include "toposcope/linksolve.h"
#include "toposcope/linkreport.h"
#include "toposcope/textout.h"

static uint64_t name_key(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ULL;
    return h ^ (h >> 33);
}

/* Node-set hash and size of every vertex's subtree. */
static int subtree_sets(const ts_fabric *f, uint64_t *h, int *cnt)
{
    int *order = malloc(sizeof(int) * (size_t)f->nvert);
    if (!order)
        return TS_ENOMEM;
    int head = 0, tail = 0;
    order[tail++] = f->root;
    while (head < tail) {
        int v = order[head++];
        for (int c = f->v[v].first_child; c != TS_NONE; c = f->v[c].next_sibling)
            order[tail++] = c;
    }
    for (int i = 0; i < f->nvert; i++) {
        h[i] = 0;
        cnt[i] = 0;
    }
    for (int i = tail - 1; i >= 0; i--) {
        int v = order[i];
        if (f->v[v].kind == TS_NODE) {
            h[v] += name_key(f->v[v].name);
            cnt[v]++;
        }
        int p = f->v[v].parent;
        if (p != TS_NONE) {
            h[p] += h[v];
            cnt[p] += cnt[v];
        }
    }
    free(order);
    return TS_OK;
}

void ts_link_truth_free(ts_link_truth *t)
{
    if (!t)
        return;
    free(t->first);
    free(t->members);
    free(t->truth_us);
    memset(t, 0, sizeof *t);
}

typedef struct setindex {
    int cap;
    int *head;               /* slot -> first truth vertex with that hash */
    int *next;               /* truth vertex -> next with the same slot */
    const uint64_t *h;
} setindex;

static void setindex_add(setindex *x, int v)
{
    int s = (int)(x->h[v] & (uint64_t)(x->cap - 1));
    x->next[v] = x->head[s];
    x->head[s] = v;
}

static int cmp_depth_desc(const void *a, const void *b, void *ctx)
{
    const ts_fabric *f = ctx;
    int x = *(const int *)a, y = *(const int *)b;
    if (f->v[x].depth != f->v[y].depth)
        return f->v[y].depth - f->v[x].depth;
    return strcmp(f->v[x].name, f->v[y].name);
}

/* A node's share of every round trip it takes part in, folded into its access link because no
 * measurement can tell them apart: a quarter of its host overhead (two hosts, two directions)
 * as the application sees it on average, that is with the model's run noise included: the
 * lognormal factor's mean exp(sigma^2 / 2), the mean of the additive jitter (exponential and
 * skewed) and the mean cost of the rare spikes (outliers, power-state wake-ups), which round
 * trips pay on average just as they pay the overhead. Without the model, the hardware's
 * overhead alone. */
static double pendant_us(const ts_model *model, const ts_fabric *truth, int v)
{
    if (!model)
        return truth->v[v].host_us / 4;
    const ts_model_params *p = &model->p;
    double spikes = p->outlier_prob * (p->outlier_min_us + p->outlier_max_us) / 2 +
                    p->power_prob * (p->power_min_us + p->power_max_us) / 2;
    return (model->host_us[v] * exp(0.5 * p->jitter_sigma * p->jitter_sigma) +
            ts_model_mean_jitter_us(p) + spikes) / 4;
}

int ts_link_truth_map(const ts_fabric *tree, const ts_link_result *res, const ts_fabric *truth,
                      const ts_model *model, ts_link_truth *out, ts_error *err)
{
    memset(out, 0, sizeof *out);
    if (tree->root == TS_NONE || truth->root == TS_NONE)
        return ts_fail(err, TS_EINPUT, "both trees must be finalized");
    if (model && model->nvert != truth->nvert)
        return ts_fail(err, TS_EINPUT, "the model was realized for another fabric");
    int nt = truth->nvert, ni = tree->nvert, rc = TS_OK;
    uint64_t *ht = malloc(sizeof(uint64_t) * (size_t)nt), *hi = malloc(sizeof(uint64_t) * (size_t)ni);
    int *ct = malloc(sizeof(int) * (size_t)nt), *ci = malloc(sizeof(int) * (size_t)ni);
    int *mark = calloc((size_t)nt, sizeof(int));
    setindex X = {0};
    X.cap = 16;
    while (X.cap < 2 * nt)
        X.cap *= 2;
    X.head = malloc(sizeof(int) * (size_t)X.cap);
    X.next = malloc(sizeof(int) * (size_t)nt);
    X.h = ht;
    int total_members = 0;
    out->first = malloc(sizeof(int) * (size_t)(res->nlinks + 1));
    out->truth_us = malloc(sizeof(double) * (size_t)(res->nlinks ? res->nlinks : 1));
    int mcap = 64;
    out->members = malloc(sizeof(int) * (size_t)mcap);
    if (!ht || !hi || !ct || !ci || !mark || !X.head || !X.next || !out->first || !out->truth_us ||
        !out->members || subtree_sets(truth, ht, ct) != TS_OK || subtree_sets(tree, hi, ci) != TS_OK) {
        rc = ts_fail(err, TS_ENOMEM, "out of memory");
        goto done;
    }
    for (int s = 0; s < X.cap; s++)
        X.head[s] = TS_NONE;
    int nall = ct[truth->root];
    for (int v = 0; v < nt; v++)
        if (v != truth->root && ct[v] > 0 && ct[v] < nall)
            setindex_add(&X, v);
    /* complements are comparable only when both trees hold the same nodes */
    int same_nodes = ct[truth->root] == ci[tree->root] && ht[truth->root] == hi[tree->root];
    out->nlinks = res->nlinks;
    for (int k = 0; k < res->nlinks; k++) {
        const ts_link_estimate *L = &res->link[k];
        out->first[k] = total_members;
        int stamp = k + 1;
        for (int t = L->first; t < L->first + L->nmembers; t++) {
            int u = res->members[t];
            for (int side = 0; side < 1 + same_nodes; side++) {
                uint64_t want = side ? ht[truth->root] - hi[u] : hi[u];
                int wcnt = side ? nall - ci[u] : ci[u];
                for (int v = X.head[want & (uint64_t)(X.cap - 1)]; v != TS_NONE; v = X.next[v]) {
                    if (ht[v] != want || ct[v] != wcnt || mark[v] == stamp)
                        continue;
                    mark[v] = stamp;
                    if (total_members == mcap) {
                        mcap *= 2;
                        int *nm = realloc(out->members, sizeof(int) * (size_t)mcap);
                        if (!nm) {
                            rc = ts_fail(err, TS_ENOMEM, "out of memory");
                            goto done;
                        }
                        out->members = nm;
                    }
                    out->members[total_members++] = v;
                }
            }
        }
        int n = total_members - out->first[k];
        qsort_r(out->members + out->first[k], (size_t)n, sizeof(int), cmp_depth_desc, (void *)truth);
        double sum = n ? 0 : NAN;
        for (int t = out->first[k]; t < total_members; t++) {
            int v = out->members[t];
            sum += model ? model->link_us[v] : truth->v[v].link_us;
            if (truth->v[v].kind == TS_NODE)
                sum += pendant_us(model, truth, v);
        }
        out->truth_us[k] = sum;
    }
    out->first[res->nlinks] = total_members;
done:
    free(ht);
    free(hi);
    free(ct);
    free(ci);
    free(mark);
    free(X.head);
    free(X.next);
    if (rc != TS_OK)
        ts_link_truth_free(out);
    return rc;
}

double ts_link_rel_err_median(const ts_link_result *res, const ts_link_truth *t)
{
    if (!t || t->nlinks != res->nlinks || res->nlinks == 0)
        return NAN;
    double *e = malloc(sizeof(double) * (size_t)res->nlinks);
    if (!e)
        return NAN;
    int n = 0;
    for (int k = 0; k < res->nlinks; k++) {
        double est = res->link[k].est_us, tru = t->truth_us[k];
        if (isfinite(est) && isfinite(tru) && tru > 0)
            e[n++] = fabs(est - tru) / tru;
    }
    double m = n ? ts_median(e, n) : NAN;
    free(e);
    return m;
}

ts_link_interval_score ts_link_interval_score_of(const ts_link_result *res, const ts_link_truth *t,
                                                 int kind)
{
    ts_link_interval_score sc = { 0, NAN, NAN };
    if (!t || t->nlinks != res->nlinks || res->nlinks == 0)
        return sc;
    double *w = malloc(sizeof(double) * (size_t)res->nlinks);
    if (!w)
        return sc;
    int cover = 0;
    for (int k = 0; k < res->nlinks; k++) {
        const ts_link_estimate *L = &res->link[k];
        double tru = t->truth_us[k];
        if ((kind >= 0 && L->access != kind) || !isfinite(L->lo_us) || !isfinite(L->hi_us) ||
            !isfinite(tru) || !(tru > 0))
            continue;
        cover += L->lo_us <= tru && tru <= L->hi_us;
        w[sc.n++] = (L->hi_us - L->lo_us) / 2 / tru;
    }
    if (sc.n) {
        sc.cover = (double)cover / sc.n;
        sc.rel_halfwidth = ts_median(w, sc.n);
    }
    free(w);
    return sc;
}

/* ---- links.yaml ---- */

static void yaml_num(FILE *out, const char *key, double v, const char *fmt)
{
    fprintf(out, ", %s: ", key);
    if (isfinite(v))
        fprintf(out, fmt, v);
    else
        fputs("null", out);
}

static void yaml_names(FILE *out, const ts_fabric *f, const int *v, int n)
{
    if (n == 1) {
        ts_emit_yaml_string(out, f->v[v[0]].name);
        return;
    }
    fputc('[', out);
    for (int i = 0; i < n; i++) {
        if (i)
            fputs(", ", out);
        ts_emit_yaml_string(out, f->v[v[i]].name);
    }
    fputc(']', out);
}

int ts_links_write_yaml(const ts_fabric *tree, const ts_link_result *res, const ts_link_truth *t,
                        const ts_fabric *truth, FILE *out)
{
    int with_truth = t && truth && t->nlinks == res->nlinks;
    fprintf(out, "# toposcope links: one entry per identifiable link; est_us is its one-way latency,\n"
                 "# lo_us..hi_us the confidence interval, an aggregate (links that every path crosses\n"
                 "# together) lists its links. An access link's estimate includes a quarter of the\n"
                 "# node's host overhead per round trip, which round trips cannot separate from it.\n");
    fprintf(out, "confidence: %.2f\n", res->confidence);
    fprintf(out, "partial: %s\n", res->partial ? "true" : "false");
    fprintf(out, "rounds_planned: %d\nrounds_run: %d\nmeasurements: %d\n", res->rounds_planned,
            res->rounds_run, res->nmeas);
    fprintf(out, "undetermined: %d\n", res->undetermined);
    fprintf(out, "error_scale: %.4f\n", res->scale);
    fprintf(out, "links:\n");
    for (int k = 0; k < res->nlinks; k++) {
        const ts_link_estimate *L = &res->link[k];
        int matched = with_truth && t->first[k + 1] > t->first[k];
        fprintf(out, "  - {link: ");
        if (matched)
            yaml_names(out, truth, t->members + t->first[k], t->first[k + 1] - t->first[k]);
        else
            yaml_names(out, tree, res->members + L->first, L->nmembers);
        if (with_truth) {
            fprintf(out, ", tree_link: ");
            yaml_names(out, tree, res->members + L->first, L->nmembers);
        }
        fprintf(out, ", kind: %s", L->access ? "access" : "uplink");
        yaml_num(out, "est_us", L->est_us, "%.4f");
        yaml_num(out, "lo_us", L->lo_us, "%.4f");
        yaml_num(out, "hi_us", L->hi_us, "%.4f");
        yaml_num(out, "se_us", L->se_us, "%.4f");
        fprintf(out, ", samples: %ld, pairs: %d", L->samples, L->npairs);
        yaml_num(out, "residual_us", L->residual_us, "%.4f");
        if (with_truth) {
            double tru = t->truth_us[k];
            yaml_num(out, "truth_us", tru, "%.4f");
            yaml_num(out, "rel_err", isfinite(L->est_us) && tru > 0 ? fabs(L->est_us - tru) / tru : NAN,
                     "%.5f");
        }
        fprintf(out, "}\n");
    }
    return ferror(out) ? TS_ESYS : TS_OK;
}

/* ---- pairs.yaml ---- */

int ts_link_pairs_write_yaml(const ts_fabric *tree, const ts_link_result *res, FILE *out)
{
    fprintf(out, "# toposcope link-stage pairs: each measured pair's round trip (rtt_us, ci_us its\n"
                 "# interval's half-width), what the solved links predict for it (fit_us) and the\n"
                 "# weight the robust solve kept (below 1: an outlier). rtt_us leaves out the\n"
                 "# spikes (samples far above the pair's median); tail_us is their share of a mean\n"
                 "# round trip, pooled over the pairs, which the solve adds to every pair, so the\n"
                 "# links sum to mean round trips (tail_se_us its standard error).\n");
    fprintf(out, "measurements: %d\n", res->nmeas);
    fprintf(out, "tail_us: %.3f\ntail_se_us: %.3f\npairs:\n", res->tail_us, res->tail_se_us);
    for (int i = 0; i < res->nmeas; i++) {
        const ts_link_measurement *M = &res->meas[i];
        if (M->a < 0 || M->a >= tree->nnodes || M->b < 0 || M->b >= tree->nnodes)
            continue;
        fprintf(out, "  - {a: ");
        ts_emit_yaml_string(out, tree->v[tree->node_vertex[M->a]].name);
        fprintf(out, ", b: ");
        ts_emit_yaml_string(out, tree->v[tree->node_vertex[M->b]].name);
        fprintf(out, ", round: %d, samples: %d", M->round, M->samples);
        yaml_num(out, "rtt_us", M->rtt_us, "%.3f");
        yaml_num(out, "ci_us", M->ci_us, "%.3f");
        yaml_num(out, "fit_us", M->fit_us, "%.3f");
        yaml_num(out, "residual_us", M->residual_us, "%.3f");
        yaml_num(out, "weight", M->weight, "%.4f");
        fprintf(out, "}\n");
    }
    return ferror(out) ? TS_ESYS : TS_OK;
}
