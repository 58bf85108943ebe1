/* toposcope — the identifiable links of a tree and the combinatorial link-coverage plan.
 *
 * PMM (seed 000) finds a maximal independent set of node-pair paths by Gaussian elimination
 * over all n(n-1)/2 paths. On a tree the answer can be written down instead. Contract the tree
 * spanned by the nodes at its degree-2 switches (the reduced tree T'; its edges are the
 * identifiable links, one unknown each) and root it at the nodes' common ancestor S. Then, for
 * every switch v of T' with children c_1..c_k, bottom-up:
 *
 *   k >= 3: k pairs (x_i, x_j), x_i a node below c_i, along the edges of a graph on the
 *           children whose every component holds an odd cycle (one k-cycle for odd k; for even
 *           k a triangle and a (k-3)-cycle, or a triangle and a spoke for k = 4). Each pair
 *           reads e(c_i) + e(c_j) + (lengths below c_i and c_j), and such a system on a graph
 *           with k edges is regular exactly when each component has an odd cycle;
 *   k == 2, v != S: the pair (x, y) across v, and, once v's parent is planned, (z, w) where
 *           (q, w) is one of the parent's pairs that enter v's subtree (q below one child of v,
 *           z below the other): (z, w) - (q, w) reads e(c_2) - e(c_1) + known lengths, the pair
 *           across v their sum;
 *   k == 2, v == S: the two edges below S are one aggregated link; one pair reads it.
 *
 * Induction from the leaves: once all edges below c_i are known, the node below c_i that a pair
 * uses is free, and a pair at a parent can serve as the shared side (q, w) of any 2-child switch
 * it passes, because only the difference of two pairs sharing w enters there. So the pair count
 * is the sum over switches of their children (one less for a 2-child S): the number of edges of
 * T', the rank. The free choices spread the load: every endpoint is the node whose path is
 * least loaded, counting a link as full at one pair per round and a switch of degree d at d/2
 * pairs through it.
 *
 * Rounds: first fit, longest paths first, then iterated greedy. A node's access link is part
 * of every path from it, so link-disjoint pairs are also node-disjoint. Any plan needs
 * rank / (n/2) rounds; on the 1024-node fat tree the core plan meets that bound (3 rounds).
 *
 * Redundancy: in every round, each switch of T' bottom-up pairs the free "ports" its children
 * offer (a node whose path up to the child is still free in this round, one per child since
 * the child's edge carries one path) in a different random order every round, keeping one for
 * its parent while its uplink is free. This keeps nodes busy that the core plan leaves idle and
 * costs no extra round; extra rounds of such pairs alone tighten the upper links, which only
 * differences of long paths reach. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "toposcope/links.h"
#include "toposcope/rng.h"

/* ---- the identifiable links ---- */

void ts_link_set_free(ts_link_set *s)
{
    if (!s)
        return;
    free(s->first);
    free(s->members);
    free(s->of_vertex);
    memset(s, 0, sizeof *s);
    s->span_root = TS_NONE;
}

/* Vertices in breadth-first order from `from` (only its subtree); returns the count. */
static int bfs_order(const ts_fabric *f, int from, int *order)
{
    int head = 0, tail = 0;
    order[tail++] = from;
    while (head < tail) {
        int v = order[head++];
        for (int c = f->v[v].first_child; c != TS_NONE; c = f->v[c].next_sibling)
            order[tail++] = c;
    }
    return tail;
}

/* Nodes below every vertex (cnt) and children with nodes below (ech). */
static void count_nodes(const ts_fabric *f, const int *order, int norder, int *cnt, int *ech)
{
    for (int i = 0; i < f->nvert; i++)
        cnt[i] = ech[i] = 0;
    for (int i = norder - 1; i >= 0; i--) {
        int v = order[i];
        if (f->v[v].kind == TS_NODE)
            cnt[v] = 1;
        int p = f->v[v].parent;
        if (p != TS_NONE && cnt[v] > 0) {
            cnt[p] += cnt[v];
            ech[p]++;
        }
    }
}

int ts_link_set_build(const ts_fabric *tree, ts_link_set *out, ts_error *err)
{
    memset(out, 0, sizeof *out);
    out->span_root = TS_NONE;
    if (tree->root == TS_NONE)
        return ts_fail(err, TS_EINPUT, "the tree is not finalized");
    if (tree->nnodes < 2)
        return ts_fail(err, TS_EINPUT, "links need at least 2 nodes (got %d)", tree->nnodes);
    int nv = tree->nvert, rc = TS_OK;
    int *order = malloc(sizeof(int) * (size_t)nv), *cnt = malloc(sizeof(int) * (size_t)nv);
    int *ech = malloc(sizeof(int) * (size_t)nv), *size = calloc((size_t)nv + 1, sizeof(int));
    out->of_vertex = malloc(sizeof(int) * (size_t)nv);
    out->members = malloc(sizeof(int) * (size_t)nv);
    out->first = malloc(sizeof(int) * (size_t)(nv + 1));
    if (!order || !cnt || !ech || !size || !out->of_vertex || !out->members || !out->first) {
        rc = ts_fail(err, TS_ENOMEM, "out of memory");
        goto done;
    }
    int norder = bfs_order(tree, tree->root, order);
    count_nodes(tree, order, norder, cnt, ech);
    int s = tree->root;
    while (ech[s] == 1) {
        int c = tree->v[s].first_child;
        while (cnt[c] == 0)
            c = tree->v[c].next_sibling;
        s = c;
    }
    out->span_root = s;
    for (int i = 0; i < nv; i++)
        out->of_vertex[i] = TS_NONE;
    /* Top-down from S: a link continues the one above it when the switch between them has
     * one child with nodes (or is S with two). */
    norder = bfs_order(tree, s, order);
    int nlinks = 0, first_below_s = TS_NONE, measurable = 0;
    for (int i = 1; i < norder; i++) {
        int v = order[i], p = tree->v[v].parent;
        if (cnt[v] == 0)
            continue;
        measurable++;
        if (p != s && ech[p] == 1)
            out->of_vertex[v] = out->of_vertex[p];
        else if (p == s && ech[s] == 2 && first_below_s != TS_NONE)
            out->of_vertex[v] = out->of_vertex[first_below_s];
        else
            out->of_vertex[v] = nlinks++;
        if (p == s && first_below_s == TS_NONE)
            first_below_s = v;
        size[out->of_vertex[v] + 1]++;
    }
    out->nunmeasurable = nv - 1 - measurable;
    out->nlinks = nlinks;
    for (int k = 0; k < nlinks; k++)
        size[k + 1] += size[k];
    memcpy(out->first, size, sizeof(int) * (size_t)(nlinks + 1));
    /* deepest first: breadth-first order reversed */
    for (int i = norder - 1; i >= 1; i--) {
        int v = order[i];
        if (out->of_vertex[v] != TS_NONE)
            out->members[size[out->of_vertex[v]]++] = v;
    }
done:
    free(order);
    free(cnt);
    free(ech);
    free(size);
    if (rc != TS_OK)
        ts_link_set_free(out);
    return rc;
}

int ts_link_set_path(const ts_link_set *s, const ts_fabric *tree, int node_a, int node_b, int *out,
                     int max)
{
    int va = tree->node_vertex[node_a], vb = tree->node_vertex[node_b];
    int l = ts_fabric_lca(tree, va, vb), n = 0;
    for (int side = 0; side < 2; side++)
        for (int x = side ? vb : va; x != l; x = tree->v[x].parent) {
            int id = s->of_vertex[x];
            if (id == TS_NONE)
                continue;
            /* insertion into a short sorted list, dropping repeats (chains) */
            int j = n < max ? n : max;
            int dup = 0;
            for (int k = 0; k < j && !dup; k++)
                dup = out[k] == id;
            if (dup)
                continue;
            if (n < max) {
                while (j > 0 && out[j - 1] > id) {
                    out[j] = out[j - 1];
                    j--;
                }
                out[j] = id;
            }
            n++;
        }
    return n;
}

/* ---- the plan ---- */

void ts_link_plan_free(ts_link_plan *p)
{
    if (!p)
        return;
    free(p->pairs);
    free(p->round_start);
    memset(p, 0, sizeof *p);
}

void ts_link_plan_options_default(ts_link_plan_options *o)
{
    o->redundancy = 1;
    o->extra_rounds = TS_LINK_EXTRA_ROUNDS_DEFAULT;
}

/* The reduced tree T' and the planner's state. Vertices keep their fabric indices. */
typedef struct planner {
    const ts_fabric *f;
    const ts_link_set *ls;
    int s;                   /* T' root */
    int *tpar;               /* T' parent, TS_NONE for S and for vertices not in T' */
    int *kstart, *kids;      /* T' children: kids[kstart[v] .. kstart[v+1]-1] */
    int *post;               /* T' vertices, children before parents */
    int npost;
    int *usage;              /* pairs planned across each link */
    int *through;            /* pairs planned through each T' vertex (not ending there) */
    /* Pairs at a vertex's T' parent that cross its edge, as (end below it, far end): a 2-child
     * switch completes its triangle with one of them. At most 3 per vertex (odd-cycle graphs
     * have degree <= 3). */
    int *ncand, (*cand_q)[3], (*cand_w)[3];
    int *stack;              /* scratch for descend */
    ts_pair *pairs;
    int npairs, cap;
} planner;

static int is_tvertex(const ts_fabric *f, const ts_link_set *ls, const int *ech, int v)
{
    if (v == ls->span_root)
        return 1;
    if (ls->of_vertex[v] == TS_NONE)
        return 0;
    return f->v[v].kind == TS_NODE || ech[v] >= 2;
}

static void planner_free(planner *P)
{
    free(P->tpar);
    free(P->kstart);
    free(P->kids);
    free(P->post);
    free(P->usage);
    free(P->through);
    free(P->ncand);
    free(P->cand_q);
    free(P->cand_w);
    free(P->stack);
    free(P->pairs);
}

static int planner_init(planner *P, const ts_fabric *f, const ts_link_set *ls, ts_error *err)
{
    memset(P, 0, sizeof *P);
    P->f = f;
    P->ls = ls;
    P->s = ls->span_root;
    int nv = f->nvert;
    int *order = malloc(sizeof(int) * (size_t)nv), *cnt = malloc(sizeof(int) * (size_t)nv);
    int *ech = malloc(sizeof(int) * (size_t)nv);
    P->tpar = malloc(sizeof(int) * (size_t)nv);
    P->kstart = calloc((size_t)nv + 1, sizeof(int));
    P->kids = malloc(sizeof(int) * (size_t)nv);
    P->post = malloc(sizeof(int) * (size_t)nv);
    P->usage = calloc((size_t)(ls->nlinks + 1), sizeof(int));
    P->through = calloc((size_t)nv, sizeof(int));
    P->ncand = calloc((size_t)nv, sizeof(int));
    P->cand_q = malloc(sizeof *P->cand_q * (size_t)nv);
    P->cand_w = malloc(sizeof *P->cand_w * (size_t)nv);
    P->stack = malloc(sizeof(int) * (size_t)nv);
    P->cap = 2 * ls->nlinks + 16;
    P->pairs = malloc(sizeof(ts_pair) * (size_t)P->cap);
    int rc = TS_OK;
    if (!order || !cnt || !ech || !P->tpar || !P->kstart || !P->kids || !P->post || !P->usage || !P->through ||
        !P->ncand || !P->cand_q || !P->cand_w || !P->stack || !P->pairs) {
        rc = ts_fail(err, TS_ENOMEM, "out of memory");
        goto done;
    }
    int norder = bfs_order(f, f->root, order);
    count_nodes(f, order, norder, cnt, ech);
    norder = bfs_order(f, P->s, order);
    for (int i = 0; i < nv; i++)
        P->tpar[i] = TS_NONE;
    /* T' parent: the nearest T' ancestor (top-down, so the parent's is known) */
    int *near = cnt;             /* reuse: nearest T' vertex at or above v */
    near[P->s] = P->s;
    for (int i = 1; i < norder; i++) {
        int v = order[i], p = f->v[v].parent;
        near[v] = near[p];
        if (!is_tvertex(f, ls, ech, v))
            continue;
        P->tpar[v] = near[p];
        near[v] = v;
        P->kstart[near[p] + 1]++;
    }
    for (int i = 0; i < nv; i++)
        P->kstart[i + 1] += P->kstart[i];
    int *fill = ech;             /* reuse as insertion cursors */
    memcpy(fill, P->kstart, sizeof(int) * (size_t)nv);
    for (int i = 1; i < norder; i++) {
        int v = order[i];
        if (P->tpar[v] != TS_NONE)
            P->kids[fill[P->tpar[v]]++] = v;
    }
    /* post-order: reversed breadth-first order of T' vertices */
    P->npost = 0;
    for (int i = norder - 1; i >= 0; i--) {
        int v = order[i];
        if (v == P->s || P->tpar[v] != TS_NONE)
            P->post[P->npost++] = v;
    }
done:
    free(order);
    free(cnt);
    free(ech);
    return rc;
}

static int add_pair(planner *P, int va, int vb, ts_error *err)
{
    if (P->npairs == P->cap) {
        int cap = P->cap * 2;
        ts_pair *p = realloc(P->pairs, sizeof *p * (size_t)cap);
        if (!p)
            return ts_fail(err, TS_ENOMEM, "out of memory");
        P->pairs = p;
        P->cap = cap;
    }
    P->pairs[P->npairs].a = P->f->v[va].node_index;
    P->pairs[P->npairs].b = P->f->v[vb].node_index;
    P->npairs++;
    return TS_OK;
}

static int link_of(const planner *P, int v)
{
    return P->ls->of_vertex[v];
}

/* Count a planned path from node vertex x up to T' vertex top (the pair's meeting point,
 * counted by the caller): its links and the vertices it passes. */
static void use_path(planner *P, int x, int top)
{
    for (int v = x; v != top; v = P->tpar[v]) {
        P->usage[link_of(P, v)]++;
        if (v != x)
            P->through[v]++;
    }
}

/* How full a path from x up to top would make the rounds: a link carries one pair per round,
 * a switch of degree d at most d/2 pairs through it. The largest of these over the path, and
 * their total. */
static void path_load(const planner *P, int x, int top, double *max, double *sum)
{
    *max = *sum = 0;
    for (int v = x; v != top; v = P->tpar[v]) {
        double u = P->usage[link_of(P, v)] + 1;
        if (v != x) {
            int deg = P->kstart[v + 1] - P->kstart[v] + (v != P->s);
            double t = (P->through[v] + 1.0) / (deg / 2);
            u = fmax(u, t);
        }
        *max = fmax(*max, u);
        *sum += u;
    }
}

static int better(double mx, double sm, double best_max, double best_sum)
{
    return mx < best_max - 1e-9 || (mx <= best_max + 1e-9 && sm < best_sum - 1e-9);
}

/* A node below T' vertex c whose path up to c is least loaded (path_load): a depth-first walk
 * over c's subtree. */
static int descend(const planner *P, int c)
{
    if (P->f->v[c].kind == TS_NODE)
        return c;
    int best = TS_NONE, top = 0;
    double best_max = 0, best_sum = 0;
    P->stack[top++] = c;
    while (top > 0) {
        int v = P->stack[--top];
        if (P->f->v[v].kind == TS_NODE) {
            double mx, sm;
            path_load(P, v, c, &mx, &sm);
            if (best == TS_NONE || better(mx, sm, best_max, best_sum)) {
                best = v;
                best_max = mx;
                best_sum = sm;
            }
            continue;
        }
        for (int i = P->kstart[v + 1] - 1; i >= P->kstart[v]; i--)
            P->stack[top++] = P->kids[i];
    }
    return best;
}

static void add_candidate(planner *P, int c, int q, int w)
{
    if (P->ncand[c] < 3) {
        P->cand_q[c][P->ncand[c]] = q;
        P->cand_w[c][P->ncand[c]] = w;
        P->ncand[c]++;
    }
}

/* One pair at T' vertex v between its children ci and cj. */
static int pair_at(planner *P, int v, int ci, int cj, ts_error *err)
{
    int x = descend(P, ci), y = descend(P, cj);
    use_path(P, x, v);
    use_path(P, y, v);
    P->through[v]++;
    add_candidate(P, ci, x, y);
    add_candidate(P, cj, y, x);
    return add_pair(P, x, y, err);
}

/* The graph on k >= 3 children: every component has an odd cycle, k edges in all. */
static void odd_cycle_edge(int k, int e, int *i, int *j)
{
    if (k % 2 == 1) {
        *i = e;
        *j = (e + 1) % k;
    } else if (e < 3) {
        *i = e;
        *j = (e + 1) % 3;
    } else if (k == 4) {
        *i = 3;
        *j = 0;
    } else {
        int m = k - 3;
        *i = 3 + (e - 3);
        *j = 3 + (e - 3 + 1) % m;
    }
}

/* The child of T' vertex u whose subtree holds node vertex q. */
static int child_towards(const planner *P, int u, int q)
{
    while (P->tpar[q] != u)
        q = P->tpar[q];
    return q;
}

/* The third pair of a 2-child switch u: given a pair (q, w) counted at u's parent with q below
 * child c of u, the pair (z, w) with z below u's other child. The difference of the two reads
 * dist(u, z) - dist(u, q), the pair across u reads their sum. */
static int complete_triangle(planner *P, int u, ts_error *err)
{
    int best_z = TS_NONE, best_w = TS_NONE;
    double best_max = 0, best_sum = 0;
    for (int i = 0; i < P->ncand[u]; i++) {
        int q = P->cand_q[u][i], w = P->cand_w[u][i];
        int c = child_towards(P, u, q);
        int o = P->kids[P->kstart[u]] == c ? P->kids[P->kstart[u] + 1] : P->kids[P->kstart[u]];
        int z = descend(P, o);
        int l = ts_fabric_lca(P->f, z, w);
        double m1, s1, m2, s2;
        path_load(P, z, l, &m1, &s1);
        path_load(P, w, l, &m2, &s2);
        double mx = fmax(m1, m2), sm = s1 + s2;
        if (best_z == TS_NONE || better(mx, sm, best_max, best_sum)) {
            best_z = z;
            best_w = w;
            best_max = mx;
            best_sum = sm;
        }
    }
    if (best_z == TS_NONE)
        return ts_fail(err, TS_EINPUT, "internal: switch %s has no pair across its uplink",
                       P->f->v[u].name);
    int l = ts_fabric_lca(P->f, best_z, best_w);
    use_path(P, best_z, l);
    use_path(P, best_w, l);
    P->through[l]++;
    return add_pair(P, best_z, best_w, err);
}

static int plan_core(planner *P, ts_error *err)
{
    int rc = TS_OK;
    for (int pi = 0; pi < P->npost && rc == TS_OK; pi++) {
        int v = P->post[pi];
        int k = P->kstart[v + 1] - P->kstart[v];
        const int *kid = P->kids + P->kstart[v];
        if (k == 0)
            continue;                       /* a node */
        if (k == 1)
            return ts_fail(err, TS_EINPUT, "internal: T' vertex %s has one child", P->f->v[v].name);
        if (k == 2) {
            rc = pair_at(P, v, kid[0], kid[1], err);
            continue;
        }
        for (int e = 0; e < k && rc == TS_OK; e++) {
            int i, j;
            odd_cycle_edge(k, e, &i, &j);
            rc = pair_at(P, v, kid[i], kid[j], err);
        }
    }
    /* the third side of every 2-child switch's triangle, top-down */
    for (int pi = P->npost - 1; pi >= 0 && rc == TS_OK; pi--) {
        int v = P->post[pi];
        if (v != P->s && P->kstart[v + 1] - P->kstart[v] == 2)
            rc = complete_triangle(P, v, err);
    }
    return rc;
}

/* ---- rounds ---- */

typedef struct bitrows {
    int words;               /* 64-bit words per link */
    uint64_t *bits;          /* nlinks x words: rounds using the link */
    int nlinks;
} bitrows;

static int bitrows_grow(bitrows *b, int words)
{
    uint64_t *nb = calloc((size_t)b->nlinks * (size_t)words, sizeof(uint64_t));
    if (!nb)
        return TS_ENOMEM;
    for (int l = 0; l < b->nlinks; l++)
        for (int w = 0; w < b->words; w++)
            nb[(size_t)l * words + w] = b->bits[(size_t)l * b->words + w];
    free(b->bits);
    b->bits = nb;
    b->words = words;
    return TS_OK;
}

typedef struct pathbuf {
    int n;
    int *ids;
} pathbuf;

static int cmp_by_len_desc(const void *a, const void *b, void *ctx)
{
    const int *len = ctx;
    int x = *(const int *)a, y = *(const int *)b;
    if (len[x] != len[y])
        return len[y] - len[x];
    return x - y;
}

/* One first-fit pass in the given order; returns the number of rounds or a negative code. */
static int first_fit(bitrows *b, const int *ids, const int *len, int maxlen, const int *order, int np,
                     int *round)
{
    memset(b->bits, 0, sizeof(uint64_t) * (size_t)b->nlinks * (size_t)b->words);
    int nrounds = 0;
    for (int oi = 0; oi < np; oi++) {
        int i = order[oi];
        const int *p = ids + (size_t)i * maxlen;
        int r = -1;
        for (int w = 0; r < 0; w++) {
            if (w == b->words && bitrows_grow(b, 2 * b->words) != TS_OK)
                return TS_ENOMEM;
            uint64_t busy = 0;
            for (int x = 0; x < len[i]; x++)
                busy |= b->bits[(size_t)p[x] * b->words + w];
            if (~busy)
                r = 64 * w + __builtin_ctzll(~busy);
        }
        round[i] = r;
        for (int x = 0; x < len[i]; x++)
            b->bits[(size_t)p[x] * b->words + r / 64] |= 1ull << (r % 64);
        if (r + 1 > nrounds)
            nrounds = r + 1;
    }
    return nrounds;
}

#define COLOUR_PASSES 24

/* Rounds for the pairs: first fit, longest paths first, then Culberson's iterated greedy (first
 * fit again with the previous rounds' pairs kept together, the rounds in reverse order, which
 * never needs more rounds) until the largest load of a link, a lower bound, is reached.
 * Writes round[i] for every pair and returns the number of rounds. */
static int colour(const ts_fabric *f, const ts_link_set *ls, const ts_pair *pairs, int np, int *round,
                  ts_error *err)
{
    int maxlen = 2 * (ts_fabric_max_depth(f) + 1);
    int *ids = malloc(sizeof(int) * (size_t)(np ? np : 1) * (size_t)maxlen);
    int *len = malloc(sizeof(int) * (size_t)(np ? np : 1));
    int *order = malloc(sizeof(int) * (size_t)(np ? np : 1));
    int *trial = malloc(sizeof(int) * (size_t)(np ? np : 1));
    int *load = calloc((size_t)ls->nlinks + 1, sizeof(int));
    bitrows b = {0, NULL, ls->nlinks};
    int rc = TS_OK, nrounds = 0, bound = 1;
    if (!ids || !len || !order || !trial || !load || bitrows_grow(&b, 1) != TS_OK) {
        rc = ts_fail(err, TS_ENOMEM, "out of memory");
        goto done;
    }
    for (int i = 0; i < np; i++) {
        len[i] = ts_link_set_path(ls, f, pairs[i].a, pairs[i].b, ids + (size_t)i * maxlen, maxlen);
        order[i] = i;
        for (int x = 0; x < len[i]; x++)
            if (++load[ids[(size_t)i * maxlen + x]] > bound)
                bound = load[ids[(size_t)i * maxlen + x]];
    }
    qsort_r(order, (size_t)np, sizeof(int), cmp_by_len_desc, len);
    nrounds = first_fit(&b, ids, len, maxlen, order, np, round);
    for (int pass = 0; pass < COLOUR_PASSES && nrounds > bound && nrounds > 0; pass++) {
        /* counting sort by round, last round first */
        int *cnt = load;                 /* reuse: the bound is known */
        memset(cnt, 0, sizeof(int) * (size_t)(nrounds + 1));
        for (int i = 0; i < np; i++)
            cnt[nrounds - 1 - round[i] + 1]++;
        for (int r = 0; r < nrounds; r++)
            cnt[r + 1] += cnt[r];
        for (int i = 0; i < np; i++)
            order[cnt[nrounds - 1 - round[i]]++] = i;
        int got = first_fit(&b, ids, len, maxlen, order, np, trial);
        if (got < 0) {
            rc = ts_fail(err, TS_ENOMEM, "out of memory");
            goto done;
        }
        if (got <= nrounds) {
            memcpy(round, trial, sizeof(int) * (size_t)np);
            nrounds = got;
        }
    }
    if (nrounds < 0)
        rc = ts_fail(err, TS_ENOMEM, "out of memory");
done:
    free(ids);
    free(len);
    free(order);
    free(trial);
    free(load);
    free(b.bits);
    return rc == TS_OK ? nrounds : rc;
}

/* Extra link-disjoint pairs for one round; `used` holds the stamp for links already in use.
 * Every switch keeps one port for its parent while its uplink is free, so each free link is
 * crossed once: the upper links, which only differences of long paths reach, get a pair per
 * round, and the rest pair up below. */
static int fill_round(planner *P, int *used, int stamp, int *port, int *tmp, ts_rng *rng,
                      ts_error *err)
{
    int rc = TS_OK;
    for (int pi = 0; pi < P->npost && rc == TS_OK; pi++) {
        int v = P->post[pi];
        int k = P->kstart[v + 1] - P->kstart[v];
        port[v] = TS_NONE;
        if (k == 0) {
            if (used[link_of(P, v)] != stamp)
                port[v] = v;
            continue;
        }
        int m = 0;
        for (int i = P->kstart[v]; i < P->kstart[v + 1]; i++) {
            int c = P->kids[i];
            if (port[c] != TS_NONE && used[link_of(P, c)] != stamp)
                tmp[m++] = port[c];
        }
        ts_rng_shuffle_int(rng, tmp, m);
        if (m > 0 && v != P->s && used[link_of(P, v)] != stamp)
            port[v] = tmp[--m];
        for (int i = 0; i + 1 < m && rc == TS_OK; i += 2) {
            for (int x = tmp[i]; x != v; x = P->tpar[x])
                used[link_of(P, x)] = stamp;
            for (int x = tmp[i + 1]; x != v; x = P->tpar[x])
                used[link_of(P, x)] = stamp;
            rc = add_pair(P, tmp[i], tmp[i + 1], err);
        }
    }
    return rc;
}

int ts_link_plan_tree(const ts_fabric *tree, ts_link_plan *out, ts_error *err)
{
    ts_link_plan_options o;
    ts_link_plan_options_default(&o);
    return ts_link_plan_tree_opts(tree, &o, out, err);
}

int ts_link_plan_tree_opts(const ts_fabric *tree, const ts_link_plan_options *o, ts_link_plan *out,
                           ts_error *err)
{
    memset(out, 0, sizeof *out);
    ts_link_plan_options defaults;
    ts_link_plan_options_default(&defaults);
    if (!o)
        o = &defaults;
    int extra = o->extra_rounds;
    if (extra < 0 || extra > TS_LINK_EXTRA_ROUNDS_MAX)
        return ts_fail(err, TS_EINPUT, "extra rounds must be 0..%d (got %d)", TS_LINK_EXTRA_ROUNDS_MAX,
                       extra);
    ts_link_set ls;
    int rc = ts_link_set_build(tree, &ls, err);
    if (rc != TS_OK)
        return rc;
    planner P;
    int *round = NULL, *used = NULL, *port = NULL, *tmp = NULL, *count = NULL;
    rc = planner_init(&P, tree, &ls, err);
    if (rc == TS_OK)
        rc = plan_core(&P, err);
    if (rc != TS_OK)
        goto done;
    int ncore = P.npairs;
    round = malloc(sizeof(int) * (size_t)(ncore ? ncore : 1));
    if (!round) {
        rc = ts_fail(err, TS_ENOMEM, "out of memory");
        goto done;
    }
    int nrounds = colour(tree, &ls, P.pairs, ncore, round, err);
    if (nrounds < 0) {
        rc = nrounds;
        goto done;
    }
    if (o->redundancy || extra > 0) {
        int maxlen = 2 * (ts_fabric_max_depth(tree) + 1);
        int total = nrounds + extra;
        int *ids = malloc(sizeof(int) * (size_t)maxlen);
        used = calloc((size_t)ls.nlinks + 1, sizeof(int));
        port = malloc(sizeof(int) * (size_t)tree->nvert);
        tmp = malloc(sizeof(int) * (size_t)tree->nvert);
        int *r2 = realloc(round, sizeof(int) * ((size_t)ncore + (size_t)(tree->nnodes / 2) * total + 1));
        if (r2)
            round = r2;
        if (!ids || !used || !port || !tmp || !r2) {
            free(ids);
            rc = ts_fail(err, TS_ENOMEM, "out of memory");
            goto done;
        }
        ts_rng rng;
        ts_rng_seed_stream(&rng, (uint64_t)tree->nnodes, 0x11u);
        for (int r = 0; r < total && rc == TS_OK; r++) {
            if (r < nrounds && !o->redundancy)
                continue;
            int stamp = r + 1;
            for (int i = 0; i < ncore && r < nrounds; i++) {
                if (round[i] != r)
                    continue;
                int n = ts_link_set_path(&ls, tree, P.pairs[i].a, P.pairs[i].b, ids, maxlen);
                for (int x = 0; x < n; x++)
                    used[ids[x]] = stamp;
            }
            int before = P.npairs;
            rc = fill_round(&P, used, stamp, port, tmp, &rng, err);
            for (int i = before; i < P.npairs; i++)
                round[i] = r;
        }
        free(ids);
        if (rc != TS_OK)
            goto done;
        nrounds = total;
    }
    /* group by round, keeping the order within a round */
    count = calloc((size_t)nrounds + 1, sizeof(int));
    out->pairs = malloc(sizeof(ts_pair) * (size_t)(P.npairs ? P.npairs : 1));
    out->round_start = malloc(sizeof(int) * (size_t)(nrounds + 1));
    if (!count || !out->pairs || !out->round_start) {
        rc = ts_fail(err, TS_ENOMEM, "out of memory");
        goto done;
    }
    for (int i = 0; i < P.npairs; i++)
        count[round[i] + 1]++;
    /* drop rounds left empty (a tiny tree has nothing to fill them with) */
    int kept = 0;
    for (int r = 0; r < nrounds; r++)
        if (count[r + 1] > 0)
            count[r + 1] = ++kept;
        else
            count[r + 1] = -1;
    for (int i = 0; i < P.npairs; i++)
        round[i] = count[round[i] + 1] - 1;
    memset(count, 0, sizeof(int) * (size_t)(nrounds + 1));
    nrounds = kept;
    for (int i = 0; i < P.npairs; i++)
        count[round[i] + 1]++;
    for (int r = 0; r < nrounds; r++)
        count[r + 1] += count[r];
    memcpy(out->round_start, count, sizeof(int) * (size_t)(nrounds + 1));
    for (int i = 0; i < P.npairs; i++)
        out->pairs[count[round[i]]++] = P.pairs[i];
    out->npairs = P.npairs;
    out->nrounds = nrounds;
    out->rank = ls.nlinks;
    out->paths_examined = ncore;
done:
    free(round);
    free(used);
    free(port);
    free(tmp);
    free(count);
    planner_free(&P);
    ts_link_set_free(&ls);
    if (rc != TS_OK)
        ts_link_plan_free(out);
    return rc;
}
