/* toposcope — the merged hierarchy: fabric switches and nodes, and each node's hwloc tree. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "toposcope/hier.h"

static void vertex_init(ts_hier_vertex *x, unsigned kinds, int parent)
{
    memset(x, 0, sizeof *x);
    x->kinds = kinds;
    x->parent = parent;
    x->first_child = x->next_sibling = x->last_child = TS_NONE;
    x->fabric_vertex = x->node = x->core = TS_NONE;
    for (int k = 0; k < TS_HK_COUNT; k++)
        x->index[k] = TS_NONE;
}

/* ---- templates: one per distinct ts_hwtree ---- */

typedef struct level_key {
    ts_hier_kind kind;
    int value;          /* -1: the level is absent for this core */
} level_key;

/* The levels above a core, outermost first, in the order this machine nests them. */
static void core_keys(const ts_hwtree *hw, const ts_hwcore *c, level_key key[3])
{
    key[0] = (level_key){ TS_HK_PACKAGE, c->package };
    level_key numa = { TS_HK_NUMA, hw->nnuma > 0 ? c->numa : -1 };
    level_key l3 = { TS_HK_L3, c->l3 };
    key[1] = hw->l3_above_numa ? l3 : numa;
    key[2] = hw->l3_above_numa ? numa : l3;
}

static int template_build(ts_hier_template *t, const ts_hwtree *hw, ts_error *err)
{
    memset(t, 0, sizeof *t);
    t->hw = hw;
    /* at most one package, upper, lower group and core vertex per core */
    int cap = 4 * hw->ncores;
    ts_hier_vertex *v = malloc(sizeof *v * (size_t)(cap ? cap : 1));
    int *nkids = calloc((size_t)(cap ? cap : 1), sizeof(int));
    unsigned char *dead = calloc((size_t)(cap ? cap : 1), 1);
    t->core_vertex = malloc(sizeof(int) * (size_t)(hw->ncores ? hw->ncores : 1));
    if (!v || !nkids || !dead || !t->core_vertex) {
        free(v);
        free(nkids);
        free(dead);
        free(t->core_vertex);
        return ts_fail(err, TS_ENOMEM, "out of memory");
    }
    int n = 0, open[3] = { -1, -1, -1 };
    level_key last[3] = { { 0, 0 } };
    int first = 1;
    for (int c = 0; c < hw->ncores; c++) {
        t->core_vertex[c] = TS_NONE;
        const ts_hwcore *core = &hw->core[c];
        if (!core->usable)
            continue;
        level_key key[3];
        core_keys(hw, core, key);
        /* hwloc's logical order is tree order: a level opens a new vertex when its key (or an
         * outer one) changes from the previous usable core */
        int changed = first;
        int parent = -1;
        for (int l = 0; l < 3; l++) {
            changed = changed || key[l].value != last[l].value;
            if (key[l].value < 0) {
                open[l] = parent;      /* absent level: the outer vertex stands in */
                continue;
            }
            if (changed) {
                vertex_init(&v[n], TS_HK_BIT(key[l].kind), parent);
                v[n].index[key[l].kind] = key[l].value;
                if (parent >= 0)
                    nkids[parent]++;
                open[l] = n++;
            }
            parent = open[l];
        }
        vertex_init(&v[n], TS_HK_BIT(TS_HK_CORE), parent);
        v[n].index[TS_HK_CORE] = core->core;
        v[n].core = c;
        if (parent >= 0)
            nkids[parent]++;
        t->core_vertex[c] = n++;
        memcpy(last, key, sizeof last);
        first = 0;
    }
    /* Merge every group with a single child into that child; parents come first, so a chain
     * (Package + NUMA + L3 + Core) folds down to its last vertex. */
    for (int i = 0; i < n; i++) {
        if (v[i].kinds & TS_HK_BIT(TS_HK_CORE) || nkids[i] != 1)
            continue;
        /* vertices are made depth first, so a vertex's first child is the next one made */
        int child = i + 1;
        v[child].kinds |= v[i].kinds;
        for (int k = 0; k < TS_HK_COUNT; k++)
            if (v[i].kinds & TS_HK_BIT(k))
                v[child].index[k] = v[i].index[k];
        v[child].parent = v[i].parent;
        dead[i] = 1;
    }
    /* compact: renumber the living vertices, keeping parents before children */
    int *renum = nkids;                  /* reused: the counts are not needed any more */
    int m = 0;
    for (int i = 0; i < n; i++) {
        renum[i] = dead[i] ? -1 : m;
        if (!dead[i]) {
            v[m] = v[i];
            v[m].parent = v[i].parent >= 0 ? renum[v[i].parent] : -1;
            m++;
        }
    }
    for (int c = 0; c < hw->ncores; c++)
        if (t->core_vertex[c] != TS_NONE)
            t->core_vertex[c] = renum[t->core_vertex[c]];
    free(nkids);
    free(dead);
    t->v = v;
    t->nvert = m;
    return TS_OK;
}

static void template_free(ts_hier_template *t)
{
    free(t->v);
    free(t->core_vertex);
    memset(t, 0, sizeof *t);
}

/* ---- the hierarchy ---- */

static int add(ts_hierarchy *h, const ts_hier_vertex *proto, ts_error *err)
{
    if (h->nvert == h->cap) {
        int cap = h->cap ? h->cap * 2 : 256;
        ts_hier_vertex *v = realloc(h->v, sizeof *v * (size_t)cap);
        if (!v)
            return ts_fail(err, TS_ENOMEM, "out of memory");
        h->v = v;
        h->cap = cap;
    }
    int i = h->nvert++;
    ts_hier_vertex *x = &h->v[i];
    *x = *proto;
    x->first_child = x->next_sibling = x->last_child = TS_NONE;
    x->nchildren = 0;
    if (x->parent != TS_NONE) {
        ts_hier_vertex *p = &h->v[x->parent];
        if (p->last_child != TS_NONE)
            h->v[p->last_child].next_sibling = i;
        else
            p->first_child = i;
        p->last_child = i;
        p->nchildren++;
        x->depth = p->depth + 1;
    }
    if (x->depth > h->max_depth)
        h->max_depth = x->depth;
    return i;
}

static int template_of(ts_hierarchy *h, const ts_hwtree *hw, ts_error *err)
{
    for (int k = 0; k < h->ntemplates; k++)
        if (h->templates[k].hw == hw)
            return k;
    int rc = template_build(&h->templates[h->ntemplates], hw, err);
    return rc == TS_OK ? h->ntemplates++ : rc;
}

static int add_node(ts_hierarchy *h, int fv, int parent, ts_error *err)
{
    const ts_fabric *f = h->fabric;
    int node = f->v[fv].node_index;
    int k = template_of(h, h->templates_hw[node], err);
    if (k < 0)
        return k;
    const ts_hier_template *t = &h->templates[k];
    if (t->nvert == 0)
        return ts_fail(err, TS_EINPUT, "node '%s' has no usable core", f->v[fv].name);
    ts_hier_vertex proto;
    vertex_init(&proto, TS_HK_BIT(TS_HK_NODE), parent);
    proto.fabric_vertex = fv;
    proto.node = node;
    int nv = add(h, &proto, err);
    if (nv < 0)
        return nv;
    h->node_vertex[node] = nv;
    h->node_template[node] = k;
    for (int i = 0; i < t->nvert; i++) {
        proto = t->v[i];
        proto.parent = t->v[i].parent >= 0 ? nv + 1 + t->v[i].parent : nv;
        proto.node = node;
        int x = add(h, &proto, err);
        if (x < 0)
            return x;
    }
    return TS_OK;
}

typedef struct child_key {
    int block;      /* the first node of the child's block: its subtree, or the switch's own nodes */
    int first_node;
    int vertex;
} child_key;

static int cmp_child(const void *a, const void *b)
{
    const child_key *x = a, *y = b;
    if (x->block != y->block)
        return (x->block > y->block) - (x->block < y->block);
    return (x->first_node > y->first_node) - (x->first_node < y->first_node);
}

/* For every fabric vertex the smallest node index below it (node indices are hostname order). */
static int *subtree_first_node(const ts_fabric *f)
{
    int *first = malloc(sizeof(int) * (size_t)(f->nvert + 1));
    if (!first)
        return NULL;
    for (int i = 0; i < f->nvert; i++)
        first[i] = f->nnodes;
    /* node indices grow, so the first node to reach an ancestor is its smallest: stop there */
    for (int n = 0; n < f->nnodes; n++)
        for (int x = f->node_vertex[n]; x != TS_NONE && first[x] == f->nnodes; x = f->v[x].parent)
            first[x] = n;
    return first;
}

int ts_hierarchy_build(ts_hierarchy *h, const ts_fabric *f, const ts_hwtree *const *hw,
                       ts_error *err)
{
    memset(h, 0, sizeof *h);
    h->fabric = f;
    h->root = TS_NONE;
    h->nnodes = f->nnodes;
    if (f->root == TS_NONE)
        return ts_fail(err, TS_EINPUT, "the tree is not finalized");
    h->node_vertex = malloc(sizeof(int) * (size_t)(f->nnodes + 1));
    h->node_template = malloc(sizeof(int) * (size_t)(f->nnodes + 1));
    h->templates = calloc((size_t)f->nnodes + 1, sizeof *h->templates);
    h->templates_hw = hw;
    int *stack = malloc(sizeof(int) * (size_t)(2 * f->nvert + 2));
    child_key *kids = malloc(sizeof *kids * (size_t)(f->nvert + 1));
    int *first_node = subtree_first_node(f);
    if (!h->node_vertex || !h->node_template || !h->templates || !stack || !kids || !first_node) {
        free(stack);
        free(kids);
        free(first_node);
        ts_hierarchy_free(h);
        return ts_fail(err, TS_ENOMEM, "out of memory");
    }
    /* depth-first from the root, children in the fabric's order: pairs (fabric vertex, parent) */
    int top = 0, rc = TS_OK;
    stack[top++] = f->root;
    stack[top++] = TS_NONE;
    while (top > 0 && rc == TS_OK) {
        int parent = stack[--top], fv = stack[--top];
        if (f->v[fv].kind == TS_NODE) {
            rc = add_node(h, fv, parent, err);
            continue;
        }
        ts_hier_vertex proto;
        vertex_init(&proto, TS_HK_BIT(TS_HK_SWITCH), parent);
        proto.fabric_vertex = fv;
        int x = add(h, &proto, err);
        if (x < 0) {
            rc = x;
            break;
        }
        if (parent == TS_NONE)
            h->root = x;
        /* children in hostname order of their first node (inference leaves them in whatever
         * order it found them), the switch's own nodes kept together: they are closer to each
         * other than to any node of a child switch, and a placement fills them in a row (the
         * root of an inferred tree may hold nodes and one switch: distances cannot tell that
         * from two leaves under a spine). Pushed in reverse so the first is visited first. */
        int nkids = 0, own_first = f->nnodes;
        for (int c = f->v[fv].first_child; c != TS_NONE; c = f->v[c].next_sibling)
            if (f->v[c].kind == TS_NODE && first_node[c] < own_first)
                own_first = first_node[c];
        for (int c = f->v[fv].first_child; c != TS_NONE; c = f->v[c].next_sibling)
            kids[nkids++] = (child_key){ f->v[c].kind == TS_NODE ? own_first : first_node[c],
                                         first_node[c], c };
        qsort(kids, (size_t)nkids, sizeof *kids, cmp_child);
        for (int k = nkids - 1; k >= 0; k--) {
            stack[top++] = kids[k].vertex;
            stack[top++] = x;
        }
    }
    free(stack);
    free(kids);
    free(first_node);
    h->templates_hw = NULL;
    if (rc != TS_OK)
        ts_hierarchy_free(h);
    return rc;
}

void ts_hierarchy_free(ts_hierarchy *h)
{
    for (int k = 0; k < h->ntemplates; k++)
        template_free(&h->templates[k]);
    free(h->templates);
    free(h->v);
    free(h->node_vertex);
    free(h->node_template);
    memset(h, 0, sizeof *h);
    h->root = TS_NONE;
}

int ts_hierarchy_core_vertex(const ts_hierarchy *h, int node, int core)
{
    const ts_hier_template *t = &h->templates[h->node_template[node]];
    if (core < 0 || core >= t->hw->ncores || t->core_vertex[core] == TS_NONE)
        return TS_NONE;
    return h->node_vertex[node] + 1 + t->core_vertex[core];
}

void ts_hierarchy_label(const ts_hierarchy *h, int v, char *buf, size_t max)
{
    static const char *const names[TS_HK_COUNT] = { "Switch", "Node", "Package", "NUMANode", "L3",
                                                    "Core" };
    const ts_hier_vertex *x = &h->v[v];
    if (x->fabric_vertex != TS_NONE) {
        snprintf(buf, max, "%s", h->fabric->v[x->fabric_vertex].name);
        return;
    }
    size_t used = 0;
    buf[0] = '\0';
    for (int k = TS_HK_PACKAGE; k < TS_HK_COUNT && used < max; k++) {
        if (!(x->kinds & TS_HK_BIT(k)))
            continue;
        int w = snprintf(buf + used, max - used, "%s%s L#%d", used ? " + " : "", names[k],
                         x->index[k]);
        if (w < 0)
            break;
        used += (size_t)w;
    }
}
