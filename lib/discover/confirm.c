/* toposcope — the splits of a guessed tree that the measurements confirm (confirm.h).
 *
 * A split is an inner edge x–y of the tree: the branches at x (A_1..A_p, the subtrees x holds
 * apart from y) against those at y (B_1..B_q). For nodes a ∈ A_i, a' in another A branch,
 * b ∈ B_j and b' in another B branch, the round trips of a tree metric give
 *     d(a,b) + d(a',b') - d(a,a') - d(b,b') = 2 len(x–y)
 * whatever the rest of the tree: the four-point condition. Each host's offset enters both
 * positive terms once and both negative ones once, so it cancels (what is left of it after
 * fast's offset fit, that is). Averaged over quartets, the estimate is a sum of means of the
 * measured round trips between branches, whose standard error is that of independent means.
 *
 * A split not in the fabric puts a branch on the wrong side: a node (or group) across the split
 * from the nodes it really shares a switch with. The quartets through that branch then
 * estimate 0 or less, and pooled with every quartet they would only dilute a positive mean.
 * So each branch of either side is tested on its own, against the whole other side (a guess
 * that joins two clades which are not one, say two leaves of different pods under one switch,
 * shows so too: quartets across them estimate less than 0). The split stands only when every
 * one of these estimates is significantly positive (an intersection-union test: each at the level the split is
 * tested at, without a correction for their number), at false_split spread over the tree's
 * splits (Bonferroni). The round trips may come in sets (one per count of samples per pair:
 * a minimum of more samples sits lower); each set gives its own estimate, as the offsets, a
 * set's shift cancels in it, and the sets' estimates are pooled by inverse variance. The
 * weakest failing split is contracted and the tree tested again, since a contraction changes
 * its neighbours' branches. */
#include <math.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include "confirm.h"
#include "toposcope/probe.h"

typedef struct graph {
    int nv;
    int *deg, *cap, **nbr;
    double **w;
    unsigned char *alive;
    const int *node;        /* the utree's: node index or TS_NONE */
} graph;

static void graph_free(graph *g)
{
    for (int v = 0; v < g->nv && g->nbr && g->w; v++) {
        free(g->nbr[v]);
        free(g->w[v]);
    }
    free(g->nbr);
    free(g->w);
    free(g->deg);
    free(g->cap);
    free(g->alive);
}

static int add_arc(graph *g, int v, int u, double w)
{
    if (g->deg[v] == g->cap[v]) {
        int cap = g->cap[v] ? 2 * g->cap[v] : 4;
        int *n = realloc(g->nbr[v], sizeof(int) * (size_t)cap);
        if (!n)
            return TS_ENOMEM;
        g->nbr[v] = n;
        double *ww = realloc(g->w[v], sizeof(double) * (size_t)cap);
        if (!ww)
            return TS_ENOMEM;
        g->w[v] = ww;
        g->cap[v] = cap;
    }
    g->nbr[v][g->deg[v]] = u;
    g->w[v][g->deg[v]++] = w;
    return TS_OK;
}

static void drop_arc(graph *g, int v, int u)
{
    for (int k = 0; k < g->deg[v]; k++)
        if (g->nbr[v][k] == u) {
            g->deg[v]--;
            g->nbr[v][k] = g->nbr[v][g->deg[v]];
            g->w[v][k] = g->w[v][g->deg[v]];
            return;
        }
}

static int is_switch(const graph *g, int v)
{
    return g->node[v] == TS_NONE;
}

/* Switches that lead to no node go, switches between two neighbours are spliced out: distances
 * cannot see either, and neither is a split. */
static int reduce(graph *g)
{
    for (int changed = 1; changed;) {
        changed = 0;
        for (int v = 0; v < g->nv; v++) {
            if (!g->alive[v] || !is_switch(g, v) || g->deg[v] > 2)
                continue;
            if (g->deg[v] == 2) {
                int a = g->nbr[v][0], b = g->nbr[v][1];
                double w = g->w[v][0] + g->w[v][1];
                drop_arc(g, a, v);
                drop_arc(g, b, v);
                if (add_arc(g, a, b, w) != TS_OK || add_arc(g, b, a, w) != TS_OK)
                    return TS_ENOMEM;
            } else {
                for (int k = 0; k < g->deg[v]; k++)
                    drop_arc(g, g->nbr[v][k], v);
            }
            g->deg[v] = 0;
            g->alive[v] = 0;
            changed = 1;
        }
    }
    return TS_OK;
}

static int graph_build(const ts_utree *t, graph *g)
{
    memset(g, 0, sizeof *g);
    g->nv = t->nvert;
    g->node = t->node;
    size_t n = (size_t)t->nvert + 1;
    g->deg = calloc(n, sizeof(int));
    g->cap = calloc(n, sizeof(int));
    g->nbr = calloc(n, sizeof(int *));
    g->w = calloc(n, sizeof(double *));
    g->alive = malloc(n);
    if (!g->deg || !g->cap || !g->nbr || !g->w || !g->alive)
        return TS_ENOMEM;
    memset(g->alive, 1, n);
    for (int v = 0; v < t->nvert; v++) {
        int p = t->parent[v];
        if (p == TS_NONE)
            continue;
        if (add_arc(g, v, p, t->len[v]) != TS_OK || add_arc(g, p, v, t->len[v]) != TS_OK)
            return TS_ENOMEM;
    }
    return reduce(g);
}

/* Label every node on u's side of the arc from `from` with `label` (label[] by node index). */
static int label_side(const graph *g, int u, int from, int label, int *label_of, int *stack,
                      int *came)
{
    int top = 0;
    stack[top] = u;
    came[top++] = from;
    while (top > 0) {
        int v = stack[--top], prev = came[top];
        if (!is_switch(g, v))
            label_of[g->node[v]] = label;
        for (int k = 0; k < g->deg[v]; k++)
            if (g->nbr[v][k] != prev) {
                if (top >= g->nv)
                    return TS_EINPUT;       /* (not a tree) */
                stack[top] = g->nbr[v][k];
                came[top++] = v;
            }
    }
    return TS_OK;
}

/* A node's key in a split's fingerprint (splitmix64 of its index). */
static uint64_t node_key(int node)
{
    uint64_t z = (uint64_t)node + 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* The split x–y's fingerprint: the keys of the nodes on y's side, XORed, or of those on x's
 * side when that is smaller (all: the keys of every node of the tree), so either way round
 * gives one value. label[0..nnodes-1] is scratch. */
static uint64_t split_print(const graph *g, int x, int y, uint64_t all, int nnodes, int *label,
                            int *stack, int *came)
{
    uint64_t h = 0;
    for (int i = 0; i < nnodes; i++)
        label[i] = 0;
    label_side(g, y, x, 1, label, stack, came);
    for (int i = 0; i < nnodes; i++)
        if (label[i])
            h ^= node_key(i);
    return h < (h ^ all) ? h : h ^ all;
}

static uint64_t all_nodes_print(const graph *g)
{
    uint64_t all = 0;
    for (int v = 0; v < g->nv; v++)
        if (g->alive[v] && !is_switch(g, v))
            all ^= node_key(g->node[v]);
    return all;
}

static int cmp_u64(const void *x, const void *y)
{
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return (a > b) - (a < b);
}

int ts_split_set_of(const ts_utree *t, ts_split_set *out)
{
    out->print = NULL;
    out->n = 0;
    graph g;
    int rc = graph_build(t, &g), nnodes = 0;
    for (int v = 0; v < t->nvert; v++)
        if (t->node[v] != TS_NONE && t->node[v] >= nnodes)
            nnodes = t->node[v] + 1;
    int *stack = malloc(sizeof(int) * ((size_t)g.nv + 1)), *came = malloc(sizeof(int) * ((size_t)g.nv + 1));
    int *label = malloc(sizeof(int) * ((size_t)nnodes + 1));
    out->print = malloc(sizeof(uint64_t) * ((size_t)g.nv + 1));
    if (!stack || !came || !label || !out->print)
        rc = TS_ENOMEM;
    uint64_t all = rc == TS_OK ? all_nodes_print(&g) : 0;
    for (int x = 0; rc == TS_OK && x < g.nv; x++)
        for (int k = 0; g.alive[x] && is_switch(&g, x) && k < g.deg[x]; k++) {
            int y = g.nbr[x][k];
            if (y > x && is_switch(&g, y))
                out->print[out->n++] = split_print(&g, x, y, all, nnodes, label, stack, came);
        }
    if (rc == TS_OK)
        qsort(out->print, (size_t)out->n, sizeof *out->print, cmp_u64);
    graph_free(&g);
    free(stack);
    free(came);
    free(label);
    if (rc != TS_OK)
        ts_split_set_free(out);
    return rc;
}

void ts_split_set_free(ts_split_set *s)
{
    free(s->print);
    s->print = NULL;
    s->n = 0;
}

long ts_split_set_missing(const ts_split_set *want, const ts_split_set *have)
{
    long j = 0, missing = 0;
    for (long i = 0; i < want->n; i++) {
        while (j < have->n && have->print[j] < want->print[i])
            j++;
        missing += j == have->n || have->print[j] != want->print[i];
    }
    return missing;
}

typedef struct split_work {
    int *label, *stack, *came;
    double *sum, *sq;       /* by set, then pair of branches */
    long *cnt;
    size_t cells;
    double *set_sigma;      /* each set's noise, as split_z weighs it */
} split_work;

#define CELL_DOF_MIN 8      /* degrees of freedom a split's own spread needs (split_z) */

/* Branch u of one side (branches lo..hi) against the whole of the other side (branches olo..ohi), in one set of measurements (its cells S, N: sums and
 * counts by pair of branches): the four-point estimate averaged over quartets with a in u, a'
 * in the rest of u's side, b and b' in two different branches of the other side, each pair of
 * those branches alike:
 *     (1/q) sum_j [m(u,B_j) + m(U',B_j)] - m(u,U') - (2/(q(q-1))) sum_{j<j'} m(B_j,B_j')
 * where m is the mean of the measured round trips between two sets and U' the rest of u's
 * side pooled; *var its variance in units of one measurement's. Returns 0 when two of those
 * sets were never measured together: this set cannot test the branch. */
static int branch_estimate(const double *S, const long *N, int nb, int u, int lo, int hi,
                           int olo, int ohi, double *est, double *var)
{
    int q = ohi - olo;
    double s = 0;
    long n = 0;
    for (int w = lo; w < hi; w++)          /* m(u, U') */
        if (w != u)
            s += S[u * nb + w], n += N[u * nb + w];
    if (n == 0)
        return 0;
    *est = -s / (double)n;
    *var = 1.0 / (double)n;
    for (int j = olo; j < ohi; j++) {
        long nu = 0, nr = 0;
        double su = 0, sr = 0;
        for (int v = lo; v < hi; v++) {
            if (v == u)
                su += S[v * nb + j], nu += N[v * nb + j];
            else
                sr += S[v * nb + j], nr += N[v * nb + j];
        }
        if (nu == 0 || nr == 0)
            return 0;
        *est += (su / (double)nu + sr / (double)nr) / q;
        *var += (1.0 / (double)nu + 1.0 / (double)nr) / ((double)q * q);
        for (int j2 = j + 1; j2 < ohi; j2++) {
            long nj = N[j * nb + j2];
            double c = 2.0 / ((double)q * (q - 1));
            if (nj == 0)
                return 0;
            *est -= c * S[j * nb + j2] / (double)nj;
            *var += c * c / (double)nj;
        }
    }
    return 1;
}

/* A set's noise where the caller has none (no pair measured twice): the spread of the round
 * trips between the same two branches, pooled. It holds the noise and whatever the branches'
 * insides add (a deeper subtree's pairs sit higher), so it errs on the side of standing fewer
 * splits. NAN when it rests on fewer than CELL_DOF_MIN degrees of freedom. */
static double cell_spread(const double *S, const double *Q, const long *N, int nb)
{
    double ss = 0;
    long dof = 0;
    for (int i = 0; i < nb; i++)
        for (int j = i + 1; j < nb; j++) {
            long n = N[i * nb + j];
            if (n < 2)
                continue;
            ss += Q[i * nb + j] - S[i * nb + j] * S[i * nb + j] / (double)n;
            dof += n - 1;
        }
    return dof >= CELL_DOF_MIN && ss > 0 ? sqrt(ss / (double)dof) : NAN;
}

/* Branch u's estimate over every set that can test it, each weighted by its inverse variance
 * (the sets are independent measurements), in standard errors; INFINITY when none can. */
static double branch_z(const split_work *W, int nb, int nsets, const double *sigma, int u,
                       int lo, int hi, int olo, int ohi)
{
    double wsum = 0, esum = 0;
    size_t cells = (size_t)nb * (size_t)nb;
    for (int s = 0; s < nsets; s++) {
        double est, var;
        if (!(sigma[s] > 0) || !isfinite(sigma[s]) ||
            !branch_estimate(W->sum + s * cells, W->cnt + s * cells, nb, u, lo, hi, olo, ohi,
                             &est, &var))
            continue;
        double w = 1 / (var * sigma[s] * sigma[s]);
        wsum += w;
        esum += w * est;
    }
    return wsum > 0 ? esum / wsum * sqrt(wsum) : INFINITY;
}

/* The split x–y's weakest z (NAN when out of memory): each branch of either side against the
 * other side (branch_z). */
static double split_z(const graph *g, int x, int y, int nnodes, const ts_confirm_meas *m, long nm,
                      const double *sigma, int nsets, split_work *W)
{
    int p = g->deg[x] - 1, q = g->deg[y] - 1, nb = p + q;
    size_t cells = (size_t)nb * (size_t)nb, all = cells * (size_t)nsets;
    if (all > W->cells) {
        double *s = realloc(W->sum, sizeof(double) * all);
        if (s)
            W->sum = s;
        double *sq = s ? realloc(W->sq, sizeof(double) * all) : NULL;
        if (sq)
            W->sq = sq;
        long *n = sq ? realloc(W->cnt, sizeof(long) * all) : NULL;
        if (!n)
            return NAN;
        W->cnt = n;
        W->cells = all;
    }
    for (int i = 0; i < nnodes; i++)
        W->label[i] = -1;
    int b = 0;
    for (int k = 0; k < g->deg[x]; k++)
        if (g->nbr[x][k] != y && label_side(g, g->nbr[x][k], x, b++, W->label, W->stack, W->came))
            return NAN;
    for (int k = 0; k < g->deg[y]; k++)
        if (g->nbr[y][k] != x && label_side(g, g->nbr[y][k], y, b++, W->label, W->stack, W->came))
            return NAN;
    memset(W->sum, 0, sizeof(double) * all);
    memset(W->sq, 0, sizeof(double) * all);
    memset(W->cnt, 0, sizeof(long) * all);
    for (long j = 0; j < nm; j++) {
        int la = W->label[m[j].a], lb = W->label[m[j].b];
        if (la < 0 || lb < 0 || la == lb || m[j].set < 0 || m[j].set >= nsets)
            continue;
        size_t o = (size_t)m[j].set * cells;
        W->sum[o + (size_t)(la * nb + lb)] += m[j].r;
        W->cnt[o + (size_t)(la * nb + lb)]++;
        W->sum[o + (size_t)(lb * nb + la)] += m[j].r;
        W->cnt[o + (size_t)(lb * nb + la)]++;
        W->sq[o + (size_t)((la < lb ? la : lb) * nb + (la < lb ? lb : la))] += m[j].r * m[j].r;
    }
    double *own = W->set_sigma;
    for (int s = 0; s < nsets; s++)
        own[s] = sigma[s] > 0 && isfinite(sigma[s])
                     ? sigma[s]
                     : cell_spread(W->sum + s * cells, W->sq + s * cells, W->cnt + s * cells, nb);
    double weakest = INFINITY;
    int side[2][4] = {{0, p, p, nb}, {p, nb, 0, p}};    /* lo, hi, olo, ohi */
    for (int sd = 0; sd < 2; sd++) {
        int lo = side[sd][0], hi = side[sd][1], olo = side[sd][2], ohi = side[sd][3];
        for (int i = lo; i < hi; i++) {
            double z = branch_z(W, nb, nsets, own, i, lo, hi, olo, ohi);
            weakest = z < weakest ? z : weakest;
        }
    }
    return weakest;
}

/* Merge y into x: y's other neighbours become x's, over their arc and the contracted one. */
static int contract(graph *g, int x, int y)
{
    double wxy = 0;
    for (int k = 0; k < g->deg[x]; k++)
        if (g->nbr[x][k] == y)
            wxy = g->w[x][k];
    drop_arc(g, x, y);
    for (int k = 0; k < g->deg[y]; k++) {
        int u = g->nbr[y][k];
        if (u == x)
            continue;
        drop_arc(g, u, y);
        double w = g->w[y][k] + wxy;
        if (add_arc(g, x, u, w) != TS_OK || add_arc(g, u, x, w) != TS_OK)
            return TS_ENOMEM;
    }
    g->deg[y] = 0;
    g->alive[y] = 0;
    return reduce(g);
}

/* t again from g: every live vertex, rooted at a live switch, in breadth-first order. */
static int rebuild(ts_utree *t, const graph *g)
{
    int root = -1;
    for (int v = 0; v < g->nv && root < 0; v++)
        if (g->alive[v] && is_switch(g, v) && g->deg[v] > 0)
            root = v;
    if (root < 0)
        return TS_OK;
    int *queue = malloc(sizeof(int) * (size_t)g->nv), *par = malloc(sizeof(int) * (size_t)g->nv);
    int *vid = malloc(sizeof(int) * (size_t)g->nv), *node = malloc(sizeof(int) * (size_t)g->nv);
    double *len = malloc(sizeof(double) * (size_t)g->nv);
    int rc = queue && par && vid && node && len ? TS_OK : TS_ENOMEM;
    int head = 0, tail = 0;
    if (rc == TS_OK) {
        queue[tail++] = root;
        par[root] = TS_NONE;
        len[root] = 0;
        while (head < tail) {
            int v = queue[head++];
            for (int k = 0; k < g->deg[v]; k++) {
                int u = g->nbr[v][k];
                if (u == par[v])
                    continue;
                par[u] = v;
                len[u] = g->w[v][k];
                queue[tail++] = u;
            }
        }
        for (int i = 0; i < tail; i++)
            node[i] = g->node[queue[i]];
    }
    if (rc == TS_OK) {
        t->nvert = 0;
        for (int i = 0; i < tail && rc == TS_OK; i++) {
            int v = queue[i];
            int id = ts_utree_add(t, par[v] == TS_NONE ? TS_NONE : vid[par[v]], len[v], node[i]);
            if (id < 0)
                rc = TS_ENOMEM;
            vid[v] = id;
        }
    }
    free(queue);
    free(par);
    free(vid);
    free(node);
    free(len);
    return rc;
}

int ts_confirm_splits(ts_utree *t, int nnodes, const ts_confirm_meas *m, long nm,
                      const double *sigma_us, int nsets, double false_split, int apply,
                      int *contracted)
{
    *contracted = 0;
    graph g;
    split_work W = {0};
    int rc = graph_build(t, &g);
    W.label = malloc(sizeof(int) * ((size_t)nnodes + 1));
    W.stack = malloc(sizeof(int) * ((size_t)g.nv + 1));
    W.came = malloc(sizeof(int) * ((size_t)g.nv + 1));
    W.set_sigma = malloc(sizeof(double) * ((size_t)nsets + 1));
    if (!W.label || !W.stack || !W.came || !W.set_sigma)
        rc = TS_ENOMEM;
    int splits = 0;
    for (int x = 0; rc == TS_OK && x < g.nv; x++)
        for (int k = 0; g.alive[x] && is_switch(&g, x) && k < g.deg[x]; k++)
            splits += is_switch(&g, g.nbr[x][k]) && g.nbr[x][k] > x;
    /* one-sided, false_split over the tree's splits */
    double need = splits > 0 ? ts_normal_quantile(1 - false_split / splits) : 0;
    while (rc == TS_OK && splits > 0) {
        int wx = -1, wy = -1;
        double weakest = INFINITY;
        for (int x = 0; x < g.nv && rc == TS_OK; x++) {
            if (!g.alive[x] || !is_switch(&g, x))
                continue;
            for (int k = 0; k < g.deg[x]; k++) {
                int y = g.nbr[x][k];
                if (y < x || !is_switch(&g, y))
                    continue;
                double z = split_z(&g, x, y, nnodes, m, nm, sigma_us, nsets, &W);
                if (isnan(z)) {
                    rc = TS_ENOMEM;
                    break;
                }
                if (z < weakest)
                    weakest = z, wx = x, wy = y;
            }
        }
        if (rc != TS_OK || wx < 0 || weakest >= need)
            break;
        ++*contracted;
        if (!apply)
            break;
        rc = contract(&g, wx, wy);
    }
    if (rc == TS_OK && apply && *contracted > 0)
        rc = rebuild(t, &g);
    graph_free(&g);
    free(W.label);
    free(W.stack);
    free(W.came);
    free(W.sum);
    free(W.sq);
    free(W.cnt);
    free(W.set_sigma);
    return rc;
}

static int cmp_dbl(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

double ts_confirm_noise(const ts_confirm_meas *m, long nm, int set, long min_pairs)
{
    double *d = malloc(sizeof(double) * ((size_t)nm + 1));
    if (!d)
        return NAN;
    long n = 0;
    for (long j = 0; j + 1 < nm;) {
        long e = j + 1;
        while (e < nm && m[e].set == m[j].set && m[e].a == m[j].a && m[e].b == m[j].b)
            e++;
        for (long k = j + 1; k < e && m[j].set == set; k++)  /* successive repeats */
            d[n++] = fabs(m[k].r - m[k - 1].r) / sqrt(2.0);
        j = e;
    }
    double s = NAN;
    if (n >= min_pairs && n > 0) {
        qsort(d, (size_t)n, sizeof *d, cmp_dbl);
        s = 1.4826 * (n % 2 ? d[n / 2] : 0.5 * (d[n / 2 - 1] + d[n / 2]));
    }
    free(d);
    return s;
}

/* ---- where a guess disagrees with a flat tree ---- */

static int below_or_at(const ts_utree *t, int v, int u)
{
    for (; v != TS_NONE; v = t->parent[v])
        if (v == u)
            return 1;
    return 0;
}

static int common_ancestor(const ts_utree *t, const int *depth, int a, int b)
{
    while (depth[a] > depth[b])
        a = t->parent[a];
    while (depth[b] > depth[a])
        b = t->parent[b];
    while (a != b)
        a = t->parent[a], b = t->parent[b];
    return a;
}

int ts_flat_doubts(const ts_utree *flat, const ts_utree *guess, const unsigned char *live, int n,
                   int *leaf, unsigned char *doubt, ts_flat_doubt *d)
{
    int nv = guess->nvert, nf = flat->nvert;
    d->top = d->whole = 0;
    int *gv = malloc(sizeof(int) * ((size_t)n + 1)), *size = calloc((size_t)nf + 1, sizeof(int));
    int *lca = malloc(sizeof(int) * ((size_t)nf + 1)), *one = malloc(sizeof(int) * ((size_t)nv + 1));
    int *cnt = calloc((size_t)nv + 1, sizeof(int)), *whole_below = calloc((size_t)nv + 1, sizeof(int));
    int *depth = malloc(sizeof(int) * ((size_t)nv + 1));
    unsigned char *cut = calloc((size_t)nv + 1, 1), *made = calloc((size_t)nf + 1, 1);
    int rc = gv && size && lca && one && cnt && whole_below && depth && cut && made ? TS_OK : TS_ENOMEM;
    if (rc != TS_OK)
        goto out;
    memset(doubt, 0, (size_t)nf);
    /* 1. each live node's leaf in flat and its vertex in the guess */
    for (int i = 0; i < n; i++)
        leaf[i] = gv[i] = -1;
    for (int v = 0; v < nf; v++) {
        int x = flat->node[v];
        if (x != TS_NONE && x >= 0 && x < n && live[x] && flat->parent[v] != TS_NONE)
            leaf[x] = flat->parent[v], size[flat->parent[v]]++;
    }
    for (int v = 0; v < nv; v++)
        if (guess->node[v] != TS_NONE && guess->node[v] >= 0 && guess->node[v] < n)
            gv[guess->node[v]] = v;
    int nlive = 0, nleaves = 0;
    for (int i = 0; i < n; i++) {
        d->whole |= leaf[i] >= 0 && gv[i] < 0;
        nlive += leaf[i] >= 0;
    }
    if (d->whole)
        goto out;
    for (int v = 0; v < nv; v++) {
        depth[v] = 0;
        for (int u = guess->parent[v]; u != TS_NONE; u = guess->parent[u])
            depth[v]++;
        one[v] = -1;
    }
    /* 2. each leaf's common ancestor in the guess; below each guess switch: how many live
     * nodes, whether of one leaf (one), whether a leaf is only partly there (cut), and how
     * many leaves lie there whole */
    for (int v = 0; v < nf; v++)
        lca[v] = -1;
    for (int i = 0; i < n; i++)
        if (leaf[i] >= 0)
            lca[leaf[i]] = lca[leaf[i]] < 0 ? gv[i] : common_ancestor(guess, depth, lca[leaf[i]], gv[i]);
    for (int i = 0; i < n; i++) {
        if (leaf[i] < 0)
            continue;
        int L = leaf[i], above = lca[L] == gv[i];
        for (int u = guess->parent[gv[i]]; u != TS_NONE; u = guess->parent[u]) {
            above |= u == lca[L];
            cnt[u]++;
            one[u] = one[u] == -1 || one[u] == L ? L : -2;
            cut[u] |= !above;
        }
    }
    for (int L = 0; L < nf; L++)
        if (size[L] > 0) {
            nleaves++;
            for (int u = lca[L]; u != TS_NONE; u = guess->parent[u])
                whole_below[u]++;
        }
    /* 3. each group of the guess read */
    for (int u = 0; u < nv && !d->whole; u++) {
        if (guess->node[u] != TS_NONE || guess->parent[u] == TS_NONE || cnt[u] == 0 || cnt[u] == nlive)
            continue;
        if (one[u] >= 0) {
            if (cnt[u] == size[one[u]])
                made[one[u]] = 1;
            else if (cnt[u] >= 2)
                doubt[one[u]] = 1;
        } else if (cut[u]) {
            d->whole = 1;
        } else if (whole_below[u] == nleaves - 1) {   /* the other side: one leaf, whole */
            for (int L = 0; L < nf; L++)
                if (size[L] > 0 && !below_or_at(guess, lca[L], u))
                    made[L] = 1;
        } else {
            d->top = 1;
        }
    }
    int left = 0;
    for (int L = 0; L < nf; L++) {
        d->top |= size[L] >= 2 && !made[L];
        left += size[L] > 0 && !doubt[L];
    }
    d->whole |= d->top && left < 2;
out:
    free(gv);
    free(size);
    free(lca);
    free(one);
    free(cnt);
    free(whole_below);
    free(depth);
    free(cut);
    free(made);
    return rc;
}
