/* toposcope — a growable tree in RTT units, and its conversion to a rooted fabric. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "toposcope/utree.h"

void ts_utree_init(ts_utree *t)
{
    memset(t, 0, sizeof *t);
}

void ts_utree_free(ts_utree *t)
{
    free(t->parent);
    free(t->len);
    free(t->node);
    ts_utree_init(t);
}

int ts_utree_add(ts_utree *t, int parent, double len, int node)
{
    if (t->nvert == t->cap) {
        int cap = t->cap ? t->cap * 2 : 64;
        int *p = realloc(t->parent, sizeof *p * (size_t)cap);
        if (p)
            t->parent = p;
        double *l = realloc(t->len, sizeof *l * (size_t)cap);
        if (l)
            t->len = l;
        int *nd = realloc(t->node, sizeof *nd * (size_t)cap);
        if (nd)
            t->node = nd;
        if (!p || !l || !nd)
            return TS_ENOMEM;
        t->cap = cap;
    }
    t->parent[t->nvert] = parent;
    t->len[t->nvert] = len;
    t->node[t->nvert] = node;
    return t->nvert++;
}

int ts_utree_split_edge(ts_utree *t, int v, double from_v)
{
    int up = t->parent[v];
    double total = t->len[v];
    if (from_v < 0)
        from_v = 0;
    if (from_v > total)
        from_v = total;
    int w = ts_utree_add(t, up, total - from_v, TS_NONE);
    if (w < 0)
        return w;
    t->parent[v] = w;
    t->len[v] = from_v;
    return w;
}

/* Undirected adjacency in CSR form, with edges removed or merged as switches are contracted. */
typedef struct adj_graph {
    int n;
    int *deg, *start, *nbr;
    double *w;
    unsigned char *alive;
} adj_graph;

static void adj_free(adj_graph *g)
{
    free(g->deg);
    free(g->start);
    free(g->nbr);
    free(g->w);
    free(g->alive);
}

static int adj_build(const ts_utree *t, adj_graph *g)
{
    int n = t->nvert;
    g->n = n;
    g->deg = calloc((size_t)n, sizeof(int));
    g->start = calloc((size_t)n + 1, sizeof(int));
    g->nbr = malloc(sizeof(int) * (size_t)(2 * n + 2));
    g->w = malloc(sizeof(double) * (size_t)(2 * n + 2));
    g->alive = malloc((size_t)n + 1);
    if (!g->deg || !g->start || !g->nbr || !g->w || !g->alive)
        return TS_ENOMEM;
    for (int v = 0; v < n; v++)
        if (t->parent[v] != TS_NONE) {
            g->deg[v]++;
            g->deg[t->parent[v]]++;
        }
    for (int v = 0; v < n; v++)
        g->start[v + 1] = g->start[v] + g->deg[v];
    int *fill = calloc((size_t)n, sizeof(int));
    if (!fill)
        return TS_ENOMEM;
    for (int v = 0; v < n; v++) {
        int p = t->parent[v];
        if (p == TS_NONE)
            continue;
        g->nbr[g->start[v] + fill[v]] = p;
        g->w[g->start[v] + fill[v]++] = t->len[v];
        g->nbr[g->start[p] + fill[p]] = v;
        g->w[g->start[p] + fill[p]++] = t->len[v];
    }
    free(fill);
    for (int v = 0; v < n; v++)
        g->alive[v] = 1;
    return TS_OK;
}

static void adj_replace(adj_graph *g, int v, int old, int new_nbr, double w)
{
    for (int k = g->start[v]; k < g->start[v] + g->deg[v]; k++)
        if (g->nbr[k] == old) {
            g->nbr[k] = new_nbr;
            g->w[k] = w;
            return;
        }
}

static void adj_remove(adj_graph *g, int v, int old)
{
    int end = g->start[v] + g->deg[v];
    for (int k = g->start[v]; k < end; k++)
        if (g->nbr[k] == old) {
            g->nbr[k] = g->nbr[end - 1];
            g->w[k] = g->w[end - 1];
            g->deg[v]--;
            return;
        }
}

/* Drop switches that lead to no node (degree 1) and splice out switches of degree 2: distances
 * cannot see them. A work list keeps this linear. */
static int adj_reduce(const ts_utree *t, adj_graph *g)
{
    int n = g->n, *work = malloc(sizeof(int) * (size_t)(n + 1) * 4), top = 0;
    if (!work)
        return TS_ENOMEM;
    for (int v = 0; v < n; v++)
        if (t->node[v] == TS_NONE && g->deg[v] <= 2)
            work[top++] = v;
    while (top > 0) {
        int v = work[--top];
        if (!g->alive[v] || t->node[v] != TS_NONE || g->deg[v] > 2)
            continue;
        int s = g->start[v];
        if (g->deg[v] == 2) {
            int a = g->nbr[s], b = g->nbr[s + 1];
            double w = g->w[s] + g->w[s + 1];
            adj_replace(g, a, v, b, w);
            adj_replace(g, b, v, a, w);
            g->alive[v] = 0;
            g->deg[v] = 0;
        } else {
            for (int k = s; k < s + g->deg[v]; k++) {
                int a = g->nbr[k];
                adj_remove(g, a, v);
                if (t->node[a] == TS_NONE && g->deg[a] <= 2 && top < 4 * n)
                    work[top++] = a;
            }
            g->alive[v] = 0;
            g->deg[v] = 0;
        }
    }
    free(work);
    return TS_OK;
}

/* Eccentricity (largest distance to a node) of every alive vertex, by one pass down and one
 * pass up a BFS order; returns the switch with the smallest, ties to the lowest index. */
static int centre_switch(const ts_utree *t, const adj_graph *g, int start)
{
    int n = g->n, best = TS_NONE;
    int *order = malloc(sizeof(int) * (size_t)n), *par = malloc(sizeof(int) * (size_t)n);
    double *parw = malloc(sizeof(double) * (size_t)n);
    double *down1 = malloc(sizeof(double) * (size_t)n), *down2 = malloc(sizeof(double) * (size_t)n);
    int *down1_child = malloc(sizeof(int) * (size_t)n);
    double *up = malloc(sizeof(double) * (size_t)n);
    if (!order || !par || !parw || !down1 || !down2 || !down1_child || !up)
        goto out;
    int head = 0, tail = 0;
    order[tail++] = start;
    par[start] = TS_NONE;
    parw[start] = 0;
    while (head < tail) {
        int v = order[head++];
        for (int k = g->start[v]; k < g->start[v] + g->deg[v]; k++) {
            int u = g->nbr[k];
            if (u == par[v])
                continue;
            par[u] = v;
            parw[u] = g->w[k];
            order[tail++] = u;
        }
    }
    for (int i = tail - 1; i >= 0; i--) {
        int v = order[i];
        down1[v] = t->node[v] != TS_NONE ? 0 : -INFINITY;
        down2[v] = -INFINITY;
        down1_child[v] = TS_NONE;
    }
    for (int i = tail - 1; i > 0; i--) {
        int v = order[i], p = par[v];
        double d = down1[v] + parw[v];
        if (d > down1[p]) {
            down2[p] = down1[p];
            down1[p] = d;
            down1_child[p] = v;
        } else if (d > down2[p]) {
            down2[p] = d;
        }
    }
    up[start] = -INFINITY;
    for (int i = 1; i < tail; i++) {
        int v = order[i], p = par[v];
        double via_sibling = down1_child[p] == v ? down2[p] : down1[p];
        double here = t->node[p] != TS_NONE ? 0 : -INFINITY;
        up[v] = parw[v] + fmax(fmax(up[p], via_sibling), here);
    }
    double best_ecc = INFINITY;
    for (int i = 0; i < tail; i++) {
        int v = order[i];
        if (t->node[v] != TS_NONE)
            continue;
        double ecc = fmax(down1[v], up[v]);
        if (ecc < best_ecc - 1e-9 || (fabs(ecc - best_ecc) <= 1e-9 && v < best)) {
            best_ecc = ecc;
            best = v;
        }
    }
out:
    free(order);
    free(par);
    free(parw);
    free(down1);
    free(down2);
    free(down1_child);
    free(up);
    return best;
}

int ts_utree_to_fabric(const ts_utree *t, char *const *names, int nnodes, ts_fabric *out,
                       ts_error *err)
{
    ts_fabric_init(out);
    adj_graph g = {0};
    int rc = adj_build(t, &g);
    if (rc == TS_OK)
        rc = adj_reduce(t, &g);
    if (rc != TS_OK) {
        adj_free(&g);
        return ts_fail(err, TS_ENOMEM, "out of memory");
    }
    int any_node = TS_NONE, any_switch = TS_NONE;
    for (int v = 0; v < g.n; v++) {
        if (!g.alive[v])
            continue;
        if (t->node[v] != TS_NONE && any_node == TS_NONE)
            any_node = v;
        if (t->node[v] == TS_NONE && any_switch == TS_NONE)
            any_switch = v;
        if (t->node[v] != TS_NONE && (t->node[v] < 0 || t->node[v] >= nnodes)) {
            adj_free(&g);
            return ts_fail(err, TS_EINPUT, "tree vertex %d names node %d of %d", v, t->node[v], nnodes);
        }
    }
    if (any_node == TS_NONE) {
        adj_free(&g);
        return ts_fail(err, TS_EINPUT, "the inferred tree has no nodes");
    }
    /* One or two nodes leave no switch after reduction: hang them from a single switch. */
    int root = any_switch != TS_NONE ? centre_switch(t, &g, any_switch) : TS_NONE;
    int *fab_of = malloc(sizeof(int) * (size_t)g.n), *queue = malloc(sizeof(int) * (size_t)g.n);
    int *par = malloc(sizeof(int) * (size_t)g.n);
    if (!fab_of || !queue || !par) {
        rc = ts_fail(err, TS_ENOMEM, "out of memory");
        goto done;
    }
    char name[32];
    int nswitch = 0;
    if (root == TS_NONE) {
        int s = ts_fabric_add_vertex(out, "s1", TS_SWITCH, err);
        if (s < 0) {
            rc = s;
            goto done;
        }
        for (int v = 0; v < g.n; v++) {
            if (!g.alive[v])
                continue;
            int x = ts_fabric_add_vertex(out, names[t->node[v]], TS_NODE, err);
            if (x < 0 || (rc = ts_fabric_attach(out, s, x, err)) != TS_OK) {
                rc = x < 0 ? x : rc;
                goto done;
            }
            /* with one neighbour the whole distance is this node's; split a pair evenly */
            double w = g.deg[v] ? g.w[g.start[v]] : 0;
            out->v[x].link_us = w / 4;
        }
        rc = ts_fabric_finalize(out, err);
        goto done;
    }
    int head = 0, tail = 0;
    queue[tail++] = root;
    par[root] = TS_NONE;
    while (head < tail) {
        int v = queue[head++];
        int x;
        if (t->node[v] == TS_NONE) {
            snprintf(name, sizeof name, "s%d", ++nswitch);
            x = ts_fabric_add_vertex(out, name, TS_SWITCH, err);
        } else {
            x = ts_fabric_add_vertex(out, names[t->node[v]], TS_NODE, err);
        }
        if (x < 0) {
            rc = x;
            goto done;
        }
        fab_of[v] = x;
        if (par[v] != TS_NONE) {
            if ((rc = ts_fabric_attach(out, fab_of[par[v]], x, err)) != TS_OK)
                goto done;
        }
        for (int k = g.start[v]; k < g.start[v] + g.deg[v]; k++) {
            int u = g.nbr[k];
            if (u == par[v]) {
                out->v[x].link_us = g.w[k] / 2;   /* RTT contribution -> one way */
                continue;
            }
            par[u] = v;
            queue[tail++] = u;
        }
    }
    rc = ts_fabric_finalize(out, err);
done:
    free(fab_of);
    free(queue);
    free(par);
    adj_free(&g);
    if (rc != TS_OK)
        ts_fabric_free(out);
    return rc;
}

/* ---- refining one tree by another's splits ---- */

/* Root t at switch s: the edges on the path from s to the old root turn round. */
static void utree_reroot(ts_utree *t, int s)
{
    int prev = TS_NONE, cur = s;
    double prev_len = 0;
    while (cur != TS_NONE) {
        int next = t->parent[cur];
        double next_len = t->len[cur];
        t->parent[cur] = prev;
        t->len[cur] = prev_len;
        prev = cur;
        prev_len = next_len;
        cur = next;
    }
}

int ts_utree_copy(ts_utree *dst, const ts_utree *src)
{
    ts_utree_init(dst);
    for (int v = 0; v < src->nvert; v++)
        if (ts_utree_add(dst, src->parent[v], src->len[v], src->node[v]) < 0) {
            ts_utree_free(dst);
            return TS_ENOMEM;
        }
    return TS_OK;
}

/* node index -> vertex (TS_NONE where absent) over [0, n); -1 when a node has children or
 * appears twice. */
static int node_vertices(const ts_utree *t, int n, int *vx)
{
    for (int i = 0; i < n; i++)
        vx[i] = TS_NONE;
    for (int v = 0; v < t->nvert; v++) {
        int p = t->parent[v];
        if (p != TS_NONE && t->node[p] != TS_NONE)
            return -1;
        if (t->node[v] != TS_NONE) {
            if (t->node[v] < 0 || t->node[v] >= n || vx[t->node[v]] != TS_NONE)
                return -1;
            vx[t->node[v]] = v;
        }
    }
    return 0;
}

/* The nodes below every vertex of t as one range of `order` each: [lo[v], hi[v]). */
static int below_ranges(const ts_utree *t, int *order, int *lo, int *hi)
{
    int nv = t->nvert, rc = TS_OK;
    int *first = malloc(sizeof(int) * (size_t)(nv + 1)), *next = malloc(sizeof(int) * (size_t)(nv + 1));
    int *stack = malloc(sizeof(int) * (size_t)(nv + 1));
    if (!first || !next || !stack) {
        rc = TS_ENOMEM;
        goto out;
    }
    for (int v = 0; v < nv; v++)
        first[v] = TS_NONE;
    for (int v = nv - 1; v >= 0; v--)
        if (t->parent[v] != TS_NONE) {
            next[v] = first[t->parent[v]];
            first[t->parent[v]] = v;
        }
    int n = 0;
    for (int root = 0; root < nv; root++) {
        if (t->parent[root] != TS_NONE)
            continue;
        /* iterative depth-first: a vertex is pushed once and closed when its children are */
        int top = 0;
        stack[top++] = root;
        lo[root] = n;
        while (top > 0) {
            int v = stack[top - 1];
            int c = first[v];
            if (c != TS_NONE) {
                first[v] = next[c];          /* consumed */
                lo[c] = n;
                if (t->node[c] != TS_NONE)
                    order[n++] = t->node[c];
                stack[top++] = c;
            } else {
                hi[v] = n;
                top--;
            }
        }
    }
out:
    free(first);
    free(next);
    free(stack);
    return rc;
}

int ts_utree_refine(ts_utree *a, const ts_utree *b, int nnodes, int *added)
{
    *added = 0;
    ts_utree bb;
    int rc = ts_utree_copy(&bb, b);
    if (rc != TS_OK)
        return rc;
    int cap = a->nvert + b->nvert + 1;
    int *va = malloc(sizeof(int) * (size_t)(nnodes + 1)), *vb = malloc(sizeof(int) * (size_t)(nnodes + 1));
    int *cnt = calloc((size_t)cap, sizeof(int)), *size = calloc((size_t)cap, sizeof(int));
    int *sides = calloc((size_t)cap, sizeof(int)), *touched = malloc(sizeof(int) * (size_t)cap);
    int *order = malloc(sizeof(int) * (size_t)(nnodes + 1));
    int *lo = malloc(sizeof(int) * (size_t)(bb.nvert + 1)), *hi = malloc(sizeof(int) * (size_t)(bb.nvert + 1));
    int *moved = malloc(sizeof(int) * (size_t)cap);
    if (!va || !vb || !cnt || !size || !sides || !touched || !order || !lo || !hi || !moved) {
        rc = TS_ENOMEM;
        goto out;
    }
    /* the same nodes, each a leaf, in both */
    int r = TS_NONE, total = 0;
    if (node_vertices(a, nnodes, va) || node_vertices(&bb, nnodes, vb)) {
        rc = TS_EINPUT;
        goto out;
    }
    for (int i = 0; i < nnodes; i++) {
        if ((va[i] == TS_NONE) != (vb[i] == TS_NONE)) {
            rc = TS_EINPUT;
            goto out;
        }
        if (va[i] != TS_NONE) {
            total++;
            if (r == TS_NONE)
                r = i;
        }
    }
    if (total < 4 || a->parent[va[r]] == TS_NONE || bb.parent[vb[r]] == TS_NONE)
        goto out;                        /* no split to add */
    /* Both rooted at node r's switch: every split is then the nodes below one vertex. */
    utree_reroot(a, a->parent[va[r]]);
    utree_reroot(&bb, bb.parent[vb[r]]);
    for (int i = 0; i < nnodes; i++)
        for (int v = va[i]; v != TS_NONE; v = a->parent[v])
            size[v]++;
    for (int v = 0; v < a->nvert; v++)
        if (a->parent[v] != TS_NONE && size[v] > 0)
            sides[a->parent[v]]++;       /* children that hold nodes */
    if ((rc = below_ranges(&bb, order, lo, hi)) != TS_OK)
        goto out;
    for (int u = 0; u < bb.nvert; u++) {
        int m = hi[u] - lo[u];
        if (bb.node[u] != TS_NONE || bb.parent[u] == TS_NONE || m < 2 || m > total - 2)
            continue;
        const int *X = order + lo[u];
        int nt = 0;
        for (int k = 0; k < m; k++)
            for (int v = va[X[k]]; v != TS_NONE; v = a->parent[v])
                if (cnt[v]++ == 0)
                    touched[nt++] = v;
        int V = va[X[0]];
        while (cnt[V] < m)
            V = a->parent[V];
        /* X is a split of a's too iff every child of V it reaches lies in it whole; it is a new
         * one iff it takes two children or more and V keeps two other sides */
        int k = 0, whole = 1;
        for (int j = 0; j < nt; j++) {
            int c = touched[j];
            if (a->parent[c] == V) {
                whole &= cnt[c] == size[c];
                moved[k++] = c;
            }
        }
        int left = sides[V] - k + (a->parent[V] != TS_NONE);
        if (whole && k >= 2 && left >= 2 && a->nvert < cap) {
            double len = bb.len[u];
            for (int j = 0; j < k; j++)
                len = fmin(len, a->len[moved[j]]);
            len = len > 0 ? len : 0;
            int w = ts_utree_add(a, V, len, TS_NONE);
            if (w < 0) {
                rc = TS_ENOMEM;
                break;
            }
            for (int j = 0; j < k; j++) {
                a->parent[moved[j]] = w;
                a->len[moved[j]] -= len;
            }
            size[w] = m;
            sides[w] = k;
            sides[V] -= k - 1;
            ++*added;
        }
        for (int j = 0; j < nt; j++)
            cnt[touched[j]] = 0;
    }
out:
    ts_utree_free(&bb);
    free(va);
    free(vb);
    free(cnt);
    free(size);
    free(sides);
    free(touched);
    free(order);
    free(lo);
    free(hi);
    free(moved);
    return rc;
}
