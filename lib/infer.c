/* toposcope — additive-tree reconstruction from a full (or partly filled) distance matrix.
 *
 * Seen from a reference node r, the Gromov product g(a,b) = (d(r,a) + d(r,b) - d(a,b)) / 2 is
 * the distance from r to where the paths r->a and r->b part: the tree rooted at r is the
 * hierarchy of g. Average linkage over g averages the noise of many pairs away (single
 * linkage would follow the one worst pair); merges closer than the tolerance are one switch. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "toposcope/infer.h"

void ts_infer_report_free(ts_infer_report *r)
{
    free(r->unmeasured);
    r->unmeasured = NULL;
    r->nunmeasured = 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Typical standard error of one distance, from the confidence half-widths (90% intervals are
 * about 1.7 standard errors wide on each side). */
static double typical_sd(const ts_distmat *dm, const int *ids, int m)
{
    if (!dm->ci)
        return NAN;
    long cap = (long)m * (m - 1) / 2, k = 0;
    if (cap > 200000)
        cap = 200000;
    double *v = malloc(sizeof *v * (size_t)(cap > 0 ? cap : 1));
    if (!v)
        return NAN;
    for (int i = 0; i < m && k < cap; i++)
        for (int j = i + 1; j < m && k < cap; j++) {
            double c = dm->ci[(size_t)ids[i] * dm->n + ids[j]];
            if (isfinite(c) && c > 0)
                v[k++] = c / 1.7;
        }
    double sd = NAN;
    if (k > 0) {
        qsort(v, (size_t)k, sizeof *v, cmp_double);
        sd = v[k / 2];
    }
    free(v);
    return sd;
}

typedef struct dendro {
    int left, right;     /* children: < m leaves (positions in ids), >= m internal (m + k) */
    double height;
} dendro;

/* NN-chain average linkage over similarities sim (m x m, sum and count kept separately so
 * missing pairs are simply left out of the averages). Writes m-1 merges. */
static int average_linkage(int m, float *sum, float *cnt, dendro *merges)
{
    int *cluster = malloc(sizeof(int) * (size_t)m);   /* slot -> dendrogram id */
    int *size = malloc(sizeof(int) * (size_t)m);
    unsigned char *active = malloc((size_t)m);
    int *chain = malloc(sizeof(int) * (size_t)m);
    if (!cluster || !size || !active || !chain) {
        free(cluster);
        free(size);
        free(active);
        free(chain);
        return TS_ENOMEM;
    }
    for (int i = 0; i < m; i++) {
        cluster[i] = i;
        size[i] = 1;
        active[i] = 1;
    }
    int len = 0, nmerge = 0, next_start = 0;
#define SIM(i, j) (cnt[(size_t)(i) * m + (j)] > 0 ? sum[(size_t)(i) * m + (j)] / cnt[(size_t)(i) * m + (j)] : -INFINITY)
    while (nmerge < m - 1) {
        if (len == 0) {
            while (!active[next_start])
                next_start++;
            chain[len++] = next_start;
        }
        int a = chain[len - 1], best = -1;
        double best_sim = -INFINITY;
        /* prefer the previous chain element on ties so the chain terminates */
        if (len > 1) {
            best = chain[len - 2];
            best_sim = SIM(a, best);
        }
        for (int j = 0; j < m; j++) {
            if (!active[j] || j == a)
                continue;
            double s = SIM(a, j);
            if (s > best_sim || best < 0) {
                best_sim = s;
                best = j;
            }
        }
        if (len > 1 && best == chain[len - 2]) {
            int b = best;
            len -= 2;
            merges[nmerge].left = cluster[a];
            merges[nmerge].right = cluster[b];
            merges[nmerge].height = best_sim;
            /* merge b into a (Lance-Williams for average linkage on sums and counts) */
            for (int k = 0; k < m; k++) {
                if (!active[k] || k == a || k == b)
                    continue;
                size_t ak = (size_t)a * m + k, bk = (size_t)b * m + k, ka = (size_t)k * m + a;
                sum[ak] += sum[bk];
                cnt[ak] += cnt[bk];
                sum[ka] = sum[ak];
                cnt[ka] = cnt[ak];
            }
            active[b] = 0;
            size[a] += size[b];
            cluster[a] = m + nmerge;
            nmerge++;
        } else {
            chain[len++] = best;
        }
    }
#undef SIM
    free(cluster);
    free(size);
    free(active);
    free(chain);
    return TS_OK;
}

int ts_infer_matrix(const ts_distmat *dm, double tol_us, ts_utree *out, ts_infer_report *rep,
                    ts_error *err)
{
    int n = dm->n;
    ts_utree_init(out);
    memset(rep, 0, sizeof *rep);
    rep->reference = TS_NONE;
    if (n <= 0)
        return ts_fail(err, TS_EINPUT, "no nodes to infer a tree for");
    /* The reference: the node with the most measured partners. */
    int *known = calloc((size_t)n, sizeof(int));
    rep->unmeasured = malloc(sizeof(int) * (size_t)n);
    if (!known || !rep->unmeasured) {
        free(known);
        return ts_fail(err, TS_ENOMEM, "out of memory");
    }
    int r = TS_NONE;
    for (int a = 0; a < n; a++) {
        for (int b = 0; b < n; b++)
            if (a != b && isfinite(dm->d[(size_t)a * n + b]))
                known[a]++;
        if (r == TS_NONE || known[a] > known[r])
            r = a;
    }
    /* Nodes the reference cannot see are left out; they are reported as unmeasured. */
    int *ids = malloc(sizeof(int) * (size_t)n), m = 0;
    if (!ids) {
        free(known);
        return ts_fail(err, TS_ENOMEM, "out of memory");
    }
    for (int a = 0; a < n; a++) {
        if (a == r)
            continue;
        if (known[a] > 0 && isfinite(dm->d[(size_t)r * n + a]))
            ids[m++] = a;
        else
            rep->unmeasured[rep->nunmeasured++] = a;
    }
    free(known);
    rep->reference = r;
    int rc = TS_OK;
    if (m == 0) {
        /* A lone node: one switch above it. */
        int s = ts_utree_add(out, TS_NONE, 0, TS_NONE);
        if (s < 0 || ts_utree_add(out, s, 0, r) < 0)
            rc = ts_fail(err, TS_ENOMEM, "out of memory");
        free(ids);
        return rc;
    }
    double sd = typical_sd(dm, ids, m);
    if (tol_us <= 0) {
        /* A merge height is an average that still carries one node's own error (about half a
         * distance's), twice (child and parent): 2.5 of those is far below a level step on any
         * fabric where a level can be seen at all. */
        tol_us = isfinite(sd) ? 2.5 * sd : 0;
    }
    rep->tol_us = tol_us;
    size_t mm = (size_t)m * m;
    float *sum = malloc(sizeof(float) * mm), *cnt = malloc(sizeof(float) * mm);
    dendro *merges = malloc(sizeof(dendro) * (size_t)(m > 1 ? m - 1 : 1));
    double *dr = malloc(sizeof(double) * (size_t)m);
    if (!sum || !cnt || !merges || !dr) {
        rc = ts_fail(err, TS_ENOMEM, "out of memory (%d nodes)", m);
        goto out;
    }
    for (int i = 0; i < m; i++)
        dr[i] = dm->d[(size_t)r * n + ids[i]];
    for (int i = 0; i < m; i++) {
        sum[(size_t)i * m + i] = 0;
        cnt[(size_t)i * m + i] = 0;
        for (int j = i + 1; j < m; j++) {
            double dab = dm->d[(size_t)ids[i] * n + ids[j]];
            float s = 0, c = 0;
            if (isfinite(dab)) {
                s = (float)(0.5 * (dr[i] + dr[j] - dab));
                c = 1;
            }
            sum[(size_t)i * m + j] = sum[(size_t)j * m + i] = s;
            cnt[(size_t)i * m + j] = cnt[(size_t)j * m + i] = c;
        }
    }
    if (m > 1 && average_linkage(m, sum, cnt, merges) != TS_OK) {
        rc = ts_fail(err, TS_ENOMEM, "out of memory");
        goto out;
    }
    /* Top-down: each dendrogram node is either absorbed into the switch above it (its height
     * is within the tolerance of that switch's) or becomes a switch of its own. */
    {
        int top_id = m > 1 ? m + (m - 2) : 0;
        double top_h = m > 1 ? merges[m - 2].height : dr[0];
        if (!isfinite(top_h))
            top_h = 0;
        int top = ts_utree_add(out, TS_NONE, 0, TS_NONE);
        if (top < 0 || ts_utree_add(out, top, fmax(top_h, 0), r) < 0) {
            rc = ts_fail(err, TS_ENOMEM, "out of memory");
            goto out;
        }
        int *stack_id = malloc(sizeof(int) * (size_t)(2 * m + 2));
        int *stack_v = malloc(sizeof(int) * (size_t)(2 * m + 2));
        double *stack_h = malloc(sizeof(double) * (size_t)(2 * m + 2));
        if (!stack_id || !stack_v || !stack_h) {
            free(stack_id);
            free(stack_v);
            free(stack_h);
            rc = ts_fail(err, TS_ENOMEM, "out of memory");
            goto out;
        }
        int sp = 0;
        stack_id[sp] = top_id;
        stack_v[sp] = top;
        stack_h[sp++] = top_h;
        while (sp > 0 && rc == TS_OK) {
            sp--;
            int id = stack_id[sp], v = stack_v[sp];
            double hv = stack_h[sp];
            if (id < m) {
                if (ts_utree_add(out, v, fmax(dr[id] - hv, 0), ids[id]) < 0)
                    rc = ts_fail(err, TS_ENOMEM, "out of memory");
                continue;
            }
            const dendro *dn = &merges[id - m];
            int children[2] = {dn->left, dn->right};
            for (int c = 0; c < 2; c++) {
                int cid = children[c];
                if (cid < m) {
                    stack_id[sp] = cid;
                    stack_v[sp] = v;
                    stack_h[sp++] = hv;
                    continue;
                }
                double hc = merges[cid - m].height;
                if (!isfinite(hc) || hc - hv < tol_us) {
                    stack_id[sp] = cid;     /* same switch */
                    stack_v[sp] = v;
                    stack_h[sp++] = hv;
                } else {
                    int w = ts_utree_add(out, v, hc - hv, TS_NONE);
                    if (w < 0) {
                        rc = ts_fail(err, TS_ENOMEM, "out of memory");
                        break;
                    }
                    stack_id[sp] = cid;
                    stack_v[sp] = w;
                    stack_h[sp++] = hc;
                }
            }
        }
        free(stack_id);
        free(stack_v);
        free(stack_h);
    }
out:
    free(sum);
    free(cnt);
    free(merges);
    free(dr);
    free(ids);
    if (rc != TS_OK)
        ts_utree_free(out);
    return rc;
}
