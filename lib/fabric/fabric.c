/* toposcope — the fabric tree: building, checking, lowest common ancestors, paths. */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "toposcope/fabric.h"
#include "toposcope/hostlist.h"

void ts_fabric_init(ts_fabric *f)
{
    memset(f, 0, sizeof *f);
    f->root = TS_NONE;
}

static void free_lca(ts_fabric *f)
{
    free(f->euler);
    free(f->euler_first);
    free(f->lca_table);
    f->euler = f->euler_first = f->lca_table = NULL;
    f->euler_len = f->lca_levels = 0;
}

void ts_fabric_free(ts_fabric *f)
{
    for (int i = 0; i < f->nvert; i++)
        free(f->v[i].name);
    free(f->v);
    free(f->node_vertex);
    free(f->name_slot);
    free_lca(f);
    ts_fabric_init(f);
}

static uint64_t name_hash(const char *s)
{
    uint64_t h = 1469598103934665603ULL;   /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

static int name_index_grow(ts_fabric *f)
{
    int cap = f->name_cap ? f->name_cap * 2 : 64;
    int *slot = malloc(sizeof *slot * (size_t)cap);
    if (!slot)
        return TS_ENOMEM;
    for (int i = 0; i < cap; i++)
        slot[i] = TS_NONE;
    for (int i = 0; i < f->nvert; i++) {
        size_t h = name_hash(f->v[i].name) & (size_t)(cap - 1);
        while (slot[h] != TS_NONE)
            h = (h + 1) & (size_t)(cap - 1);
        slot[h] = i;
    }
    free(f->name_slot);
    f->name_slot = slot;
    f->name_cap = cap;
    return TS_OK;
}

int ts_fabric_find(const ts_fabric *f, const char *name)
{
    if (!f->name_cap)
        return TS_NONE;
    size_t h = name_hash(name) & (size_t)(f->name_cap - 1);
    while (f->name_slot[h] != TS_NONE) {
        if (strcmp(f->v[f->name_slot[h]].name, name) == 0)
            return f->name_slot[h];
        h = (h + 1) & (size_t)(f->name_cap - 1);
    }
    return TS_NONE;
}

int ts_fabric_add_vertex(ts_fabric *f, const char *name, ts_vertex_kind kind, ts_error *err)
{
    if (!name || !*name)
        return ts_fail(err, TS_EINPUT, "empty vertex name");
    if (ts_fabric_find(f, name) != TS_NONE)
        return ts_fail(err, TS_EINPUT, "'%s' is defined twice", name);
    if (f->nvert == f->cap) {
        int cap = f->cap ? f->cap * 2 : 64;
        ts_vertex *v = realloc(f->v, sizeof *v * (size_t)cap);
        if (!v)
            return ts_fail(err, TS_ENOMEM, "out of memory");
        f->v = v;
        f->cap = cap;
    }
    /* keep the hash table at most half full */
    if ((f->nvert + 1) * 2 > f->name_cap && name_index_grow(f) != TS_OK)
        return ts_fail(err, TS_ENOMEM, "out of memory");
    ts_vertex *x = &f->v[f->nvert];
    memset(x, 0, sizeof *x);
    x->name = strdup(name);
    if (!x->name)
        return ts_fail(err, TS_ENOMEM, "out of memory");
    x->kind = kind;
    x->parent = x->first_child = x->next_sibling = x->last_child = TS_NONE;
    x->node_index = TS_NONE;
    x->link_us = x->link_lo_us = x->link_hi_us = x->host_us = NAN;
    size_t h = name_hash(name) & (size_t)(f->name_cap - 1);
    while (f->name_slot[h] != TS_NONE)
        h = (h + 1) & (size_t)(f->name_cap - 1);
    f->name_slot[h] = f->nvert;
    f->root = TS_NONE;    /* structure changed: finalize again */
    return f->nvert++;
}

int ts_fabric_attach(ts_fabric *f, int parent, int child, ts_error *err)
{
    if (parent < 0 || parent >= f->nvert || child < 0 || child >= f->nvert)
        return ts_fail(err, TS_EINPUT, "vertex index out of range");
    if (f->v[parent].kind != TS_SWITCH)
        return ts_fail(err, TS_EINPUT, "'%s' is a node and cannot have children", f->v[parent].name);
    if (f->v[child].parent != TS_NONE)
        return ts_fail(err, TS_EINPUT, "'%s' is already under '%s'", f->v[child].name,
                       f->v[f->v[child].parent].name);
    if (parent == child)
        return ts_fail(err, TS_EINPUT, "'%s' cannot be its own child", f->v[child].name);
    /* append, so children keep the order they were listed in */
    f->v[child].parent = parent;
    f->v[child].next_sibling = TS_NONE;
    if (f->v[parent].last_child == TS_NONE)
        f->v[parent].first_child = child;
    else
        f->v[f->v[parent].last_child].next_sibling = child;
    f->v[parent].last_child = child;
    f->v[parent].nchildren++;
    f->root = TS_NONE;
    return TS_OK;
}

static int cmp_node_names(const void *a, const void *b, void *ctx)
{
    const ts_fabric *f = ctx;
    return ts_hostname_cmp(f->v[*(const int *)a].name, f->v[*(const int *)b].name);
}

static int build_lca(ts_fabric *f, const int *order, ts_error *err)
{
    /* Euler tour without recursion: depth can be large in hostile input. */
    free_lca(f);
    int n = f->nvert;
    int len = 2 * n - 1;
    f->euler = malloc(sizeof(int) * (size_t)len);
    f->euler_first = malloc(sizeof(int) * (size_t)n);
    int *next_child = malloc(sizeof(int) * (size_t)n);
    if (!f->euler || !f->euler_first || !next_child) {
        free(next_child);
        return ts_fail(err, TS_ENOMEM, "out of memory");
    }
    (void)order;
    for (int i = 0; i < n; i++)
        next_child[i] = f->v[i].first_child;
    int pos = 0, cur = f->root;
    f->euler_first[cur] = pos;
    f->euler[pos++] = cur;
    while (cur != TS_NONE) {
        int c = next_child[cur];
        if (c != TS_NONE) {
            next_child[cur] = f->v[c].next_sibling;
            f->euler_first[c] = pos;
            f->euler[pos++] = c;
            cur = c;
        } else {
            cur = f->v[cur].parent;
            if (cur != TS_NONE)
                f->euler[pos++] = cur;
        }
    }
    free(next_child);
    f->euler_len = pos;
    int levels = 1;
    while ((1 << levels) <= pos)
        levels++;
    f->lca_levels = levels;
    f->lca_table = malloc(sizeof(int) * (size_t)levels * (size_t)pos);
    if (!f->lca_table)
        return ts_fail(err, TS_ENOMEM, "out of memory");
    for (int i = 0; i < pos; i++)
        f->lca_table[i] = f->euler[i];
    for (int k = 1; k < levels; k++) {
        int *prev = f->lca_table + (size_t)(k - 1) * pos, *cur_row = f->lca_table + (size_t)k * pos;
        for (int i = 0; i + (1 << k) <= pos; i++) {
            int x = prev[i], y = prev[i + (1 << (k - 1))];
            cur_row[i] = f->v[x].depth <= f->v[y].depth ? x : y;
        }
    }
    return TS_OK;
}

int ts_fabric_finalize(ts_fabric *f, ts_error *err)
{
    int n = f->nvert, root = TS_NONE, nnodes = 0;
    if (n == 0)
        return ts_fail(err, TS_EINPUT, "the fabric is empty");
    for (int i = 0; i < n; i++) {
        if (f->v[i].parent == TS_NONE) {
            if (f->v[i].kind == TS_NODE)
                return ts_fail(err, TS_EINPUT, "node '%s' is not under any switch", f->v[i].name);
            if (root != TS_NONE)
                return ts_fail(err, TS_EINPUT, "switches '%s' and '%s' both have no parent",
                               f->v[root].name, f->v[i].name);
            root = i;
        }
        if (f->v[i].kind == TS_NODE)
            nnodes++;
    }
    if (root == TS_NONE)
        return ts_fail(err, TS_EINPUT, "the switches form a cycle: no root");
    if (nnodes == 0)
        return ts_fail(err, TS_EINPUT, "the fabric has no nodes");
    /* Walk down from the root (iteratively); vertices not reached sit on a cycle. */
    int *order = malloc(sizeof(int) * (size_t)n);
    if (!order)
        return ts_fail(err, TS_ENOMEM, "out of memory");
    int head = 0, tail = 0;
    order[tail++] = root;
    f->v[root].depth = 0;
    while (head < tail) {
        int x = order[head++];
        for (int c = f->v[x].first_child; c != TS_NONE; c = f->v[c].next_sibling) {
            if (tail >= n) {
                free(order);
                return ts_fail(err, TS_EINPUT, "the switches form a cycle");
            }
            f->v[c].depth = f->v[x].depth + 1;
            order[tail++] = c;
        }
    }
    if (tail != n) {
        for (int i = 0; i < n; i++) {
            int seen = 0;
            for (int j = 0; j < tail && !seen; j++)
                seen = order[j] == i;
            if (!seen) {
                free(order);
                return ts_fail(err, TS_EINPUT, "switch '%s' is part of a cycle", f->v[i].name);
            }
        }
    }
    for (int i = 0; i < n; i++)
        f->v[i].height = 0;
    for (int i = n - 1; i > 0; i--) {       /* reverse BFS order: children before parents */
        int x = order[i], p = f->v[x].parent;
        int h = f->v[x].kind == TS_NODE ? 1 : f->v[x].height + 1;
        if (f->v[x].kind == TS_SWITCH && f->v[x].height == 0)
            h = 1;                            /* a switch without nodes below counts as a leaf */
        if (h > f->v[p].height)
            f->v[p].height = h;
    }
    free(f->node_vertex);
    f->node_vertex = malloc(sizeof(int) * (size_t)nnodes);
    if (!f->node_vertex) {
        free(order);
        return ts_fail(err, TS_ENOMEM, "out of memory");
    }
    int k = 0;
    for (int i = 0; i < n; i++)
        if (f->v[i].kind == TS_NODE)
            f->node_vertex[k++] = i;
    qsort_r(f->node_vertex, (size_t)nnodes, sizeof(int), cmp_node_names, f);
    for (int i = 0; i < nnodes; i++)
        f->v[f->node_vertex[i]].node_index = i;
    f->nnodes = nnodes;
    f->root = root;
    int rc = build_lca(f, order, err);
    free(order);
    if (rc != TS_OK)
        f->root = TS_NONE;
    return rc;
}

int ts_fabric_lca(const ts_fabric *f, int va, int vb)
{
    int l = f->euler_first[va], r = f->euler_first[vb];
    if (l > r) {
        int t = l;
        l = r;
        r = t;
    }
    int k = 31 - __builtin_clz((unsigned)(r - l + 1));
    int x = f->lca_table[(size_t)k * f->euler_len + l];
    int y = f->lca_table[(size_t)k * f->euler_len + r - (1 << k) + 1];
    return f->v[x].depth <= f->v[y].depth ? x : y;
}

int ts_fabric_hops(const ts_fabric *f, int va, int vb)
{
    int l = ts_fabric_lca(f, va, vb);
    return f->v[va].depth + f->v[vb].depth - 2 * f->v[l].depth;
}

int ts_fabric_path_links(const ts_fabric *f, int va, int vb, int *links, int max)
{
    int l = ts_fabric_lca(f, va, vb), n = 0;
    for (int x = va; x != l; x = f->v[x].parent) {
        if (n < max)
            links[n] = x;
        n++;
    }
    for (int x = vb; x != l; x = f->v[x].parent) {
        if (n < max)
            links[n] = x;
        n++;
    }
    return n;
}

int ts_fabric_max_depth(const ts_fabric *f)
{
    int d = 0;
    for (int i = 0; i < f->nvert; i++)
        if (f->v[i].depth > d)
            d = f->v[i].depth;
    return d;
}

int ts_fabric_copy(ts_fabric *dst, const ts_fabric *src, ts_error *err)
{
    ts_fabric_init(dst);
    for (int i = 0; i < src->nvert; i++) {
        int rc = ts_fabric_add_vertex(dst, src->v[i].name, src->v[i].kind, err);
        if (rc < 0) {
            ts_fabric_free(dst);
            return rc;
        }
        ts_vertex *d = &dst->v[rc];
        d->line = src->v[i].line;
        d->implicit = src->v[i].implicit;
        d->link_us = src->v[i].link_us;
        d->link_lo_us = src->v[i].link_lo_us;
        d->link_hi_us = src->v[i].link_hi_us;
        d->host_us = src->v[i].host_us;
        d->unresolved = src->v[i].unresolved;
    }
    for (int i = 0; i < src->nvert; i++)
        for (int c = src->v[i].first_child; c != TS_NONE; c = src->v[c].next_sibling) {
            int rc = ts_fabric_attach(dst, i, c, err);
            if (rc != TS_OK) {
                ts_fabric_free(dst);
                return rc;
            }
        }
    if (src->root != TS_NONE) {
        int rc = ts_fabric_finalize(dst, err);
        if (rc != TS_OK) {
            ts_fabric_free(dst);
            return rc;
        }
    }
    return TS_OK;
}

static void yaml_num(FILE *out, const char *key, double v)
{
    if (!isnan(v))
        fprintf(out, ", %s: %.4f", key, v);
}

int ts_fabric_write_yaml(const ts_fabric *f, FILE *out)
{
    /* Vertices in breadth-first order so parents precede children. */
    fprintf(out, "# toposcope tree: every vertex names its parent; link_us is the one-way latency\n"
                 "# of the link to the parent (the link named after the vertex).\n");
    fprintf(out, "nodes: %d\nswitches: %d\nvertices:\n", f->nnodes, f->nvert - f->nnodes);
    int *queue = malloc(sizeof(int) * (size_t)f->nvert);
    if (!queue)
        return TS_ENOMEM;
    int head = 0, tail = 0;
    queue[tail++] = f->root;
    while (head < tail) {
        int x = queue[head++];
        const ts_vertex *v = &f->v[x];
        fprintf(out, "  - {name: \"%s\", kind: %s, parent: %s%s%s", v->name,
                v->kind == TS_NODE ? "node" : "switch", v->parent == TS_NONE ? "null" : "\"",
                v->parent == TS_NONE ? "" : f->v[v->parent].name, v->parent == TS_NONE ? "" : "\"");
        yaml_num(out, "link_us", v->link_us);
        yaml_num(out, "link_lo_us", v->link_lo_us);
        yaml_num(out, "link_hi_us", v->link_hi_us);
        if (v->kind == TS_NODE)
            yaml_num(out, "host_us", v->host_us);
        if (v->unresolved)
            fprintf(out, ", unresolved: true");
        fprintf(out, "}\n");
        for (int c = v->first_child; c != TS_NONE; c = f->v[c].next_sibling)
            queue[tail++] = c;
    }
    free(queue);
    return ferror(out) ? TS_ESYS : TS_OK;
}

static int cmp_vertex_names(const void *a, const void *b, void *ctx)
{
    const ts_fabric *f = ctx;
    return ts_hostname_cmp(f->v[*(const int *)a].name, f->v[*(const int *)b].name);
}

static int holds_node(const ts_fabric *f, int sw)
{
    for (int c = f->v[sw].first_child; c != TS_NONE; c = f->v[c].next_sibling)
        if (f->v[c].kind == TS_NODE)
            return 1;
    return 0;
}

int ts_fabric_tops(const ts_fabric *f, int *tops, int max)
{
    if (f->root == TS_NONE)
        return 0;
    const ts_vertex *r = &f->v[f->root];
    if (!r->implicit || holds_node(f, f->root)) {
        if (max > 0)
            tops[0] = f->root;
        return 1;
    }
    int n = 0;
    for (int c = r->first_child; c != TS_NONE; c = f->v[c].next_sibling, n++)
        if (n < max)
            tops[n] = c;
    qsort_r(tops, (size_t)(n < max ? n : max), sizeof *tops, cmp_vertex_names, (void *)f);
    return n;
}

/* keep[v] for every vertex: a node as keep() says, a switch when a kept node is below it.
 * Children before parents: the reverse of a breadth-first order from the root. */
static int mark_kept(const ts_fabric *src, ts_fabric_keep_fn keep, void *arg, unsigned char *kept,
                     int *order, ts_fabric_pruned *dropped)
{
    int head = 0, tail = 0;
    order[tail++] = src->root;
    while (head < tail)
        for (int c = src->v[order[head++]].first_child; c != TS_NONE; c = src->v[c].next_sibling)
            order[tail++] = c;
    for (int i = tail - 1; i >= 0; i--) {
        int x = order[i];
        const ts_vertex *v = &src->v[x];
        if (v->kind == TS_NODE) {
            kept[x] = keep(v->name, arg) != 0;
            dropped->nodes += !kept[x];
        } else {
            dropped->switches += !kept[x];
        }
        if (kept[x] && v->parent != TS_NONE)
            kept[v->parent] = 1;
    }
    return tail;
}

static int dropped_names(const ts_fabric *src, const unsigned char *kept, ts_fabric_pruned *dropped)
{
    if (!dropped->nodes)
        return TS_OK;
    char **names = malloc(sizeof *names * (size_t)dropped->nodes);
    if (!names)
        return TS_ENOMEM;
    size_t n = 0;
    for (int i = 0; i < src->nnodes; i++) {      /* node order is natural name order */
        int v = src->node_vertex[i];
        if (!kept[v])
            names[n++] = src->v[v].name;
    }
    dropped->names = ts_hostlist_compress(names, n);
    free(names);
    return dropped->names ? TS_OK : TS_ENOMEM;
}

/* The kept vertices of src into dst, parents first (order is breadth-first), below `top`. */
static int copy_kept(ts_fabric *dst, const ts_fabric *src, const unsigned char *kept, const int *order,
                     int n, int top, int *map, ts_error *err)
{
    for (int i = 0; i < n; i++) {
        int x = order[i];
        map[x] = TS_NONE;
        /* above top (an implicit root giving way) or outside what is kept */
        if (!kept[x] || (x != top && (src->v[x].parent == TS_NONE || map[src->v[x].parent] == TS_NONE)))
            continue;
        int v = ts_fabric_add_vertex(dst, src->v[x].name, src->v[x].kind, err);
        if (v < 0)
            return v;
        const ts_vertex *s = &src->v[x];
        ts_vertex *d = &dst->v[v];
        d->line = s->line;
        d->implicit = s->implicit;
        d->link_us = s->link_us;
        d->link_lo_us = s->link_lo_us;
        d->link_hi_us = s->link_hi_us;
        d->host_us = s->host_us;
        map[x] = v;
        int rc = x == top ? TS_OK : ts_fabric_attach(dst, map[s->parent], v, err);
        if (rc != TS_OK)
            return rc;
    }
    return TS_OK;
}

int ts_fabric_keep_nodes(ts_fabric *dst, const ts_fabric *src, ts_fabric_keep_fn keep, void *arg,
                         ts_fabric_pruned *dropped, ts_error *err)
{
    ts_fabric_init(dst);
    memset(dropped, 0, sizeof *dropped);
    if (src->root == TS_NONE)
        return ts_fail(err, TS_EINPUT, "the tree is not finalized");
    int n = src->nvert;
    unsigned char *kept = calloc((size_t)n, 1);
    int *order = malloc(sizeof *order * (size_t)n), *map = malloc(sizeof *map * (size_t)n);
    int rc = kept && order && map ? TS_OK : ts_fail(err, TS_ENOMEM, "out of memory");
    int reached = rc == TS_OK ? mark_kept(src, keep, arg, kept, order, dropped) : 0;
    if (rc == TS_OK && dropped_names(src, kept, dropped) != TS_OK)
        rc = ts_fail(err, TS_ENOMEM, "out of memory");
    if (rc == TS_OK && !kept[src->root])
        rc = ts_fail(err, TS_EINPUT, "none of the tree's %d nodes is kept", src->nnodes);
    int top = src->root;
    if (rc == TS_OK && src->v[top].implicit && !holds_node(src, top)) {
        int only = TS_NONE, nkept = 0;
        for (int c = src->v[top].first_child; c != TS_NONE; c = src->v[c].next_sibling)
            if (kept[c] && ++nkept == 1)
                only = c;
        if (nkept == 1)
            top = only;          /* one fabric left: the implicit root above it goes */
    }
    if (rc == TS_OK)
        rc = copy_kept(dst, src, kept, order, reached, top, map, err);
    if (rc == TS_OK)
        rc = ts_fabric_finalize(dst, err);
    if (rc != TS_OK)
        ts_fabric_free(dst);
    free(kept);
    free(order);
    free(map);
    return rc;
}
