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
#include "toposcope/rng.h"

void ts_infer_report_free(ts_infer_report *r)
{
    free(r->unmeasured);
    r->unmeasured = NULL;
    r->nunmeasured = 0;
    free(r->ambiguous);
    r->ambiguous = NULL;
    r->nambiguous = 0;
    free(r->unresolved_of);
    r->unresolved_of = NULL;
    free(r->grouping_only);
    r->grouping_only = NULL;
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

/* Each internal dendrogram edge (c below p) is checked with many references, not only r:
 * for a in L, b in R (c's two sides), s in S (c's sibling under p) and x outside p's subtree
 * (or r), the branch points seen from x give
 *     len(c,p) = g_x(a,b) - g_x(a,s) = (d(x,b) - d(x,s) + d(a,s) - d(a,b)) / 2,
 * so the estimate averages over many x, a, b, s and the only error that does not average away
 * is that of the few d(a,b) when L and R are small. An edge shorter than z standard errors is
 * noise inside one switch and is contracted. */
#define VERIFY_SAMPLES 96
#define VERIFY_Z 5.0

static double mean_quartet_length(const ts_distmat *dm, int r, const int *ids, const int *order,
                                  int lo_c, int mid_c, int hi_c, int lo_s, int hi_s, int lo_p,
                                  int hi_p, int m, ts_rng *rng, int *used, double *var)
{
    int n = dm->n, nl = mid_c - lo_c, nr = hi_c - mid_c, ns = hi_s - lo_s;
    int outside = m - (hi_p - lo_p);        /* measured nodes outside p's subtree, plus r */
    double sum = 0, sum2 = 0;
    int k = 0;
    for (int t = 0; t < VERIFY_SAMPLES; t++) {
        int a = ids[order[lo_c + (int)ts_rng_below(rng, (uint64_t)nl)]];
        int b = ids[order[mid_c + (int)ts_rng_below(rng, (uint64_t)nr)]];
        int s = ids[order[lo_s + (int)ts_rng_below(rng, (uint64_t)ns)]];
        int xi = (int)ts_rng_below(rng, (uint64_t)outside + 1), x;
        if (xi == outside)
            x = r;
        else
            x = ids[order[xi < lo_p ? xi : xi + (hi_p - lo_p)]];
        double v = dm->d[(size_t)x * n + b] - dm->d[(size_t)x * n + s] + dm->d[(size_t)a * n + s] -
                   dm->d[(size_t)a * n + b];
        if (isfinite(v)) {
            sum += 0.5 * v;
            sum2 += 0.25 * v * v;
            k++;
        }
    }
    *used = k;
    double mean = k ? sum / k : NAN;
    *var = k > 1 ? (sum2 - k * mean * mean) / (k - 1) : NAN;
    return mean;
}

/* build_verified_tree's dendrogram, laid out so that every node's leaves are one range, and the
 * tree it becomes. Dendrogram ids: < m leaves (positions in ids), >= m internal (m + k). */
typedef struct verify_work {
    const ts_distmat *dm;
    const dendro *merges;
    const int *ids;
    int r, m, total, top;
    int *lo, *hi, *mid;     /* node id's leaves: order[lo, hi), its left child's order[lo, mid) */
    int *parent;
    int *order;             /* leaves in depth-first order */
    int *stack;
    double *len;            /* length of the edge to the parent, NAN once contracted */
    int *vert;              /* the output tree's vertex of each node */
    double *depth;          /* ... and its distance below the reference */
} verify_work;

/* The other child of id's parent. */
static int dendro_sibling(const verify_work *V, int id)
{
    const dendro *pn = &V->merges[V->parent[id] - V->m];
    return pn->left == id ? pn->right : pn->left;
}

static void layout_dendrogram(verify_work *V)
{
    int m = V->m, *lo = V->lo, *hi = V->hi, *stack = V->stack;
    /* Leaves in depth-first order: every dendrogram node's members are one range of `order`. */
    int sp = 0, pos = 0;
    V->parent[V->top] = TS_NONE;
    stack[sp++] = V->top;
    while (sp > 0) {
        int id = stack[--sp];
        if (id < m) {
            lo[id] = pos;
            V->order[pos++] = id;
            hi[id] = pos;
            continue;
        }
        const dendro *dn = &V->merges[id - m];
        V->parent[dn->left] = V->parent[dn->right] = id;
        stack[sp++] = dn->right;     /* left is visited first */
        stack[sp++] = dn->left;
    }
    for (int id = m; id < V->total; id++) {
        const dendro *dn = &V->merges[id - m];
        lo[id] = lo[dn->left] < lo[dn->right] ? lo[dn->left] : lo[dn->right];
        hi[id] = hi[dn->left] > hi[dn->right] ? hi[dn->left] : hi[dn->right];
        V->mid[id] = hi[dn->left] < hi[dn->right] ? hi[dn->left] : hi[dn->right];
    }
}

/* The noise of one distance from sd, the intervals' typical standard error, and the npool
 * variances of well-sampled quartet estimates (sorted here). */
static double distance_noise(double sd, double *pool, int npool)
{
    /* The noise of one distance: the sampling error the intervals report, or -- when larger --
     * what the quartets show, which also holds errors constant within a pair's samples (flows
     * of the same round sharing a link). A quartet value holds four distances: var = 4 sd^2 / 4. */
    double z_sd = isfinite(sd) ? sd : 0;
    if (npool > 0) {
        qsort(pool, (size_t)npool, sizeof *pool, cmp_double);
        double quartet_sd = sqrt(pool[npool / 2]);
        if (quartet_sd > z_sd)
            z_sd = quartet_sd;
    }
    return z_sd;
}

/* Every internal edge's length from the quartets, and in *z_sd the noise of one distance. */
static int estimate_edges(verify_work *V, double sd, double *z_sd)
{
    int m = V->m, total = V->total;
    ts_rng rng;
    ts_rng_seed_stream(&rng, (uint64_t)m * 7919u + (uint64_t)V->r, 0x1f);
    /* First pass: every edge's length estimate and the spread of its quartet values. */
    double *var = malloc(sizeof(double) * (size_t)total), *pool = malloc(sizeof(double) * (size_t)total);
    if (!var || !pool) {
        free(var);
        free(pool);
        return TS_ENOMEM;
    }
    int npool = 0;
    for (int id = 0; id < total; id++) {
        V->len[id] = var[id] = NAN;
        if (id < m || id == V->top)
            continue;
        int p = V->parent[id], sib = dendro_sibling(V, id);
        int used;
        V->len[id] = mean_quartet_length(V->dm, V->r, V->ids, V->order, V->lo[id], V->mid[id], V->hi[id],
                                         V->lo[sib], V->hi[sib], V->lo[p], V->hi[p], m, &rng, &used,
                                         &var[id]);
        if (!isfinite(V->len[id]))
            V->len[id] = V->merges[id - m].height - V->merges[p - m].height;    /* too little data: reference only */
        if (used >= 8 && isfinite(var[id]))
            pool[npool++] = var[id];
    }
    *z_sd = distance_noise(sd, pool, npool);
    free(pool);
    free(var);
    return TS_OK;
}

/* Contracts the edges shorter than their tolerance (fixed_tol, or VERIFY_Z standard errors of
 * their estimate with distances of noise z_sd); returns the smallest tolerance applied. */
static double contract_short_edges(verify_work *V, double z_sd, double fixed_tol)
{
    int m = V->m, *lo = V->lo, *hi = V->hi, *mid = V->mid;
    double min_tol = INFINITY;
    for (int id = m; id < V->total; id++) {
        if (id == V->top)
            continue;
        int p = V->parent[id], sib = dendro_sibling(V, id);
        /* each of the four distances averages over at most this many distinct pairs */
        double nl = mid[id] - lo[id], nr = hi[id] - mid[id], ns = hi[sib] - lo[sib];
        double nx = m - (hi[p] - lo[p]) + 1;
        double se = 0.5 * z_sd * sqrt(1.0 / fmin(nl * nr, VERIFY_SAMPLES) + 1.0 / fmin(nl * ns, VERIFY_SAMPLES) +
                                      1.0 / fmin(nx * nr, VERIFY_SAMPLES) + 1.0 / fmin(nx * ns, VERIFY_SAMPLES));
        double tol = fixed_tol > 0 ? fixed_tol : VERIFY_Z * se;
        if (tol < min_tol)
            min_tol = tol;
        if (!(V->len[id] >= tol))
            V->len[id] = NAN;     /* contracted into the switch above */
    }
    return min_tol;
}

/* The verified dendrogram into out, the reference r hanging from the root; dr: each leaf's
 * distance from r. */
static int emit_verified_tree(verify_work *V, const double *dr, ts_utree *out)
{
    int m = V->m, top = V->top, *vert = V->vert, *stack = V->stack, rc = TS_OK;
    double *depth = V->depth;
    /* Build top-down: a contracted node hangs its children from its parent's switch. */
    /* Two nodes alone: split their distance evenly around the one switch. */
    double top_h = m > 1 ? V->merges[top - m].height : 0.5 * dr[0];
    if (!isfinite(top_h) || top_h < 0)
        top_h = 0;
    int root = ts_utree_add(out, TS_NONE, 0, TS_NONE);
    if (root < 0 || ts_utree_add(out, root, top_h, V->r) < 0)
        return TS_ENOMEM;
    vert[top] = root;
    depth[top] = top_h;
    int sp = 0;
    stack[sp++] = top;
    while (sp > 0 && rc == TS_OK) {
        int id = stack[--sp];
        if (id == top && id < m) {
            if (ts_utree_add(out, root, fmax(dr[id] - top_h, 0), V->ids[id]) < 0)
                rc = TS_ENOMEM;
            continue;
        }
        if (id != top) {
            int p = V->parent[id];
            if (id < m) {
                if (ts_utree_add(out, vert[p], fmax(dr[id] - depth[p], 0), V->ids[id]) < 0)
                    rc = TS_ENOMEM;
                continue;
            }
            if (isnan(V->len[id])) {
                vert[id] = vert[p];
                depth[id] = depth[p];
            } else {
                vert[id] = ts_utree_add(out, vert[p], V->len[id], TS_NONE);
                depth[id] = depth[p] + V->len[id];
                if (vert[id] < 0)
                    rc = TS_ENOMEM;
            }
        }
        if (id >= m) {
            stack[sp++] = V->merges[id - m].left;
            stack[sp++] = V->merges[id - m].right;
        }
    }
    return rc;
}

static int build_verified_tree(const ts_distmat *dm, int r, const int *ids, int m, const double *dr,
                               const dendro *merges, double fixed_tol, double sd, ts_utree *out,
                               ts_infer_report *rep)
{
    int nint = m - 1, total = m + nint;
    verify_work V = {.dm = dm, .merges = merges, .ids = ids, .r = r, .m = m, .total = total};
    V.lo = malloc(sizeof(int) * (size_t)total);
    V.hi = malloc(sizeof(int) * (size_t)total);
    V.mid = malloc(sizeof(int) * (size_t)total);
    V.parent = malloc(sizeof(int) * (size_t)total);
    V.order = malloc(sizeof(int) * (size_t)m);
    V.stack = malloc(sizeof(int) * (size_t)(total + 1));
    V.vert = malloc(sizeof(int) * (size_t)total);
    V.len = malloc(sizeof(double) * (size_t)total);
    V.depth = malloc(sizeof(double) * (size_t)total);
    int rc = TS_OK;
    if (!V.lo || !V.hi || !V.mid || !V.parent || !V.order || !V.stack || !V.vert || !V.len || !V.depth) {
        rc = TS_ENOMEM;
        goto done;
    }
    V.top = m > 1 ? total - 1 : 0;
    layout_dendrogram(&V);
    double z_sd;
    if ((rc = estimate_edges(&V, sd, &z_sd)) != TS_OK)
        goto done;
    double min_tol = contract_short_edges(&V, z_sd, fixed_tol);
    rep->tol_us = isfinite(min_tol) ? min_tol : fixed_tol;
    rep->noise_us = z_sd;
    rc = emit_verified_tree(&V, dr, out);
done:
    free(V.lo);
    free(V.hi);
    free(V.mid);
    free(V.parent);
    free(V.order);
    free(V.stack);
    free(V.vert);
    free(V.len);
    free(V.depth);
    return rc;
}

/* Nodes the reference saw too close (a low d(r,a) lowers all of a's Gromov products) hang one
 * level too high, beside the clade they belong to. For a node a at switch V and a child switch
 * W of V, seen from x whose path enters V from elsewhere, with w under W and s under another
 * child of V:
 *     q = g_x(a,w) - g_x(w,s) = (d(x,a) - d(x,s) + d(w,s) - d(w,a)) / 2
 * is 0 when a hangs from V and at least len(W) when a belongs under W. Averaged over many
 * x, w, s, a's own errors average out; a moves down when q is clearly positive. */
typedef struct tree_index {
    int nvert;
    int *child_start, *child;    /* CSR children */
    int *lo, *hi, *order;        /* node vertices under v: order[lo[v]..hi[v]) */
    int nnodes_in_tree;
} tree_index;

static void tree_index_free(tree_index *ix)
{
    free(ix->child_start);
    free(ix->child);
    free(ix->lo);
    free(ix->hi);
    free(ix->order);
}

static int tree_index_build(const ts_utree *t, tree_index *ix)
{
    int n = t->nvert;
    memset(ix, 0, sizeof *ix);
    ix->nvert = n;
    ix->child_start = calloc((size_t)n + 1, sizeof(int));
    ix->child = malloc(sizeof(int) * (size_t)(n > 0 ? n : 1));
    ix->lo = malloc(sizeof(int) * (size_t)n);
    ix->hi = malloc(sizeof(int) * (size_t)n);
    ix->order = malloc(sizeof(int) * (size_t)n);
    int *fill = calloc((size_t)n + 1, sizeof(int)), *stack = malloc(sizeof(int) * (size_t)(2 * n + 2));
    if (!ix->child_start || !ix->child || !ix->lo || !ix->hi || !ix->order || !fill || !stack) {
        free(fill);
        free(stack);
        tree_index_free(ix);
        return TS_ENOMEM;
    }
    int root = TS_NONE;
    for (int v = 0; v < n; v++) {
        if (t->parent[v] == TS_NONE)
            root = v;
        else
            ix->child_start[t->parent[v] + 1]++;
    }
    for (int v = 0; v < n; v++)
        ix->child_start[v + 1] += ix->child_start[v];
    for (int v = 0; v < n; v++)
        if (t->parent[v] != TS_NONE) {
            int p = t->parent[v];
            ix->child[ix->child_start[p] + fill[p]++] = v;
        }
    /* iterative DFS: a vertex is pushed once (enter) and once more (leave, encoded as -v-1) */
    int sp = 0, pos = 0;
    stack[sp++] = root;
    while (sp > 0) {
        int e = stack[--sp];
        if (e < 0) {
            ix->hi[-e - 1] = pos;
            continue;
        }
        ix->lo[e] = pos;
        if (t->node[e] != TS_NONE)
            ix->order[pos++] = e;
        stack[sp++] = -e - 1;
        for (int k = ix->child_start[e]; k < ix->child_start[e + 1]; k++)
            stack[sp++] = ix->child[k];
    }
    ix->nnodes_in_tree = pos;
    free(fill);
    free(stack);
    return TS_OK;
}

/* The child of v whose subtree holds vertex u (u below v). */
static int child_towards(const ts_utree *t, int v, int u)
{
    while (t->parent[u] != v)
        u = t->parent[u];
    return u;
}

static int refine_node_placement(const ts_distmat *dm, ts_utree *t, double noise, int *moved)
{
    int n = dm->n;
    for (int pass = 0; pass < 3; pass++) {
        tree_index ix;
        if (tree_index_build(t, &ix) != TS_OK)
            return TS_ENOMEM;
        ts_rng rng;
        ts_rng_seed_stream(&rng, (uint64_t)t->nvert * 31u + (uint64_t)pass, 0x2e);
        int changed = 0, total = ix.nnodes_in_tree;
        for (int a = 0; a < t->nvert; a++) {
            if (t->node[a] == TS_NONE)
                continue;
            int v = t->parent[a];
            int best = TS_NONE;
            double best_margin = 0, best_q = 0;
            for (int k = ix.child_start[v]; k < ix.child_start[v + 1]; k++) {
                int w = ix.child[k];
                if (t->node[w] != TS_NONE || ix.hi[w] - ix.lo[w] < 1)
                    continue;
                double sum = 0;
                int got = 0;
                for (int tries = 0; tries < 4 * VERIFY_SAMPLES && got < VERIFY_SAMPLES / 2; tries++) {
                    int wv = ix.order[ix.lo[w] + (int)ts_rng_below(&rng, (uint64_t)(ix.hi[w] - ix.lo[w]))];
                    int sv = ix.order[ix.lo[v] + (int)ts_rng_below(&rng, (uint64_t)(ix.hi[v] - ix.lo[v]))];
                    if (sv == a || (ix.lo[sv] >= ix.lo[w] && ix.lo[sv] < ix.hi[w]))
                        continue;
                    /* x: outside v, or under a child of v other than those of a, w and s */
                    int xv = ix.order[(int)ts_rng_below(&rng, (uint64_t)total)];
                    if (xv == a || xv == sv)
                        continue;
                    if (ix.lo[xv] >= ix.lo[v] && ix.lo[xv] < ix.hi[v]) {
                        int cx = child_towards(t, v, xv);
                        if (cx == w || cx == child_towards(t, v, sv))
                            continue;
                    }
                    int na = t->node[a], nw = t->node[wv], ns = t->node[sv], nx = t->node[xv];
                    double q = dm->d[(size_t)nx * n + na] - dm->d[(size_t)nx * n + ns] +
                               dm->d[(size_t)nw * n + ns] - dm->d[(size_t)nw * n + na];
                    if (isfinite(q)) {
                        sum += 0.5 * q;
                        got++;
                    }
                }
                if (got < 8)
                    continue;
                double q = sum / got, se = noise * sqrt(4.0 / got) / 2;
                double need = fmax(VERIFY_Z * se, 0.5 * t->len[w]);
                if (q - need > best_margin) {
                    best_margin = q - need;
                    best = w;
                    best_q = q;
                }
            }
            if (best != TS_NONE) {
                /* a's pendant now starts below w; the part of it w's edge covers is gone */
                t->parent[a] = best;
                t->len[a] = fmax(t->len[a] - fmin(best_q, t->len[best]), 0);
                changed++;
            }
        }
        tree_index_free(&ix);
        *moved += changed;
        if (!changed)
            break;
    }
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
    rc = build_verified_tree(dm, r, ids, m, dr, merges, tol_us, sd, out, rep);
    if (rc == TS_OK && m > 2)
        rc = refine_node_placement(dm, out, rep->noise_us, &rep->moved);
    if (rc != TS_OK)
        rc = ts_fail(err, rc, "out of memory");
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
