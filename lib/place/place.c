/* toposcope — placement of ranks on nodes and cores (compact, spread, block). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "toposcope/place.h"

/* ---- slots of one kind of node ---- */

/* The two group keys between package and core, outer first, as the node nests them. */
static void inner_keys(const ts_hwtree *hw, const ts_hwcore *c, int *outer, int *inner)
{
    int numa = hw->nnuma > 0 ? c->numa : -1;
    *outer = hw->l3_above_numa ? c->l3 : numa;
    *inner = hw->l3_above_numa ? numa : c->l3;
}

typedef struct chunker {
    const ts_hwtree *hw;
    int size;                /* cores per chunk */
    ts_node_slots *s;
    int *pool[3];            /* leftovers of the inner group, the outer group, the package */
    int npool[3];
} chunker;

/* Cut whole chunks from the front of a pool, in order; the rest moves to the next pool out
 * (level 2, the package, drops it: a rank never spans packages). */
static void cut(chunker *k, int level)
{
    int n = k->npool[level], whole = n / k->size * k->size;
    for (int i = 0; i < whole; i++) {
        k->s->chunk_core[k->s->chunk_first[k->s->nchunks] + i % k->size] = k->pool[level][i];
        if (i % k->size == k->size - 1) {
            k->s->nchunks++;
            k->s->chunk_first[k->s->nchunks] = k->s->chunk_first[k->s->nchunks - 1] + k->size;
        }
    }
    if (level < 2)
        for (int i = whole; i < n; i++)
            k->pool[level + 1][k->npool[level + 1]++] = k->pool[level][i];
    k->npool[level] = 0;
}

static int cmp_first_core(const void *a, const void *b, void *ctx)
{
    const ts_node_slots *s = ctx;
    int x = s->chunk_core[s->chunk_first[*(const int *)a]];
    int y = s->chunk_core[s->chunk_first[*(const int *)b]];
    return (x > y) - (x < y);
}

/* Chunks in tree order (by first core), rewritten in place. */
static int sort_chunks(ts_node_slots *s, int size)
{
    int *order = malloc(sizeof(int) * (size_t)(s->nchunks + 1));
    int *cores = malloc(sizeof(int) * (size_t)(s->nchunks * size + 1));
    if (!order || !cores) {
        free(order);
        free(cores);
        return TS_ENOMEM;
    }
    for (int i = 0; i < s->nchunks; i++)
        order[i] = i;
    qsort_r(order, (size_t)s->nchunks, sizeof(int), cmp_first_core, s);
    for (int i = 0; i < s->nchunks; i++)
        memcpy(cores + i * size, s->chunk_core + s->chunk_first[order[i]], sizeof(int) * (size_t)size);
    memcpy(s->chunk_core, cores, sizeof(int) * (size_t)(s->nchunks * size));
    free(order);
    free(cores);
    return TS_OK;
}

static int make_chunks(ts_node_slots *s, const ts_hwtree *hw, int size)
{
    int n = hw->nusable;
    s->chunk_first = calloc((size_t)n + 2, sizeof(int));
    s->chunk_core = malloc(sizeof(int) * (size_t)(n + 1));
    chunker k = { .hw = hw, .size = size, .s = s };
    for (int l = 0; l < 3; l++)
        k.pool[l] = malloc(sizeof(int) * (size_t)(n + 1));
    int rc = TS_OK;
    if (!s->chunk_first || !s->chunk_core || !k.pool[0] || !k.pool[1] || !k.pool[2]) {
        rc = TS_ENOMEM;
        goto out;
    }
    int have = 0, pkg = 0, outer = 0, inner = 0;
    for (int c = 0; c < hw->ncores; c++) {
        const ts_hwcore *core = &hw->core[c];
        if (!core->usable)
            continue;
        int o, i;
        inner_keys(hw, core, &o, &i);
        /* close the groups this core leaves, innermost first */
        if (have && (core->package != pkg || o != outer || i != inner))
            cut(&k, 0);
        if (have && (core->package != pkg || o != outer))
            cut(&k, 1);
        if (have && core->package != pkg)
            cut(&k, 2);
        k.pool[0][k.npool[0]++] = c;
        pkg = core->package;
        outer = o;
        inner = i;
        have = 1;
    }
    cut(&k, 0);
    cut(&k, 1);
    cut(&k, 2);
    rc = sort_chunks(s, size);
out:
    for (int l = 0; l < 3; l++)
        free(k.pool[l]);
    return rc;
}

/* A small trie over the chunks (node -> package -> outer -> inner -> chunk) for round-robin. */
typedef struct rr_trie {
    int n;
    int *parent, *key, *remaining, *cursor, *chunk;
    int *kid_first, *kid_count;   /* children: kids[kid_first .. + kid_count) after building */
    int *kids;
} rr_trie;

static void trie_free(rr_trie *t)
{
    free(t->parent);
    free(t->key);
    free(t->remaining);
    free(t->cursor);
    free(t->chunk);
    free(t->kid_first);
    free(t->kid_count);
    free(t->kids);
}

/* Deal `capacity` turns round-robin at every level: at each vertex the next child (in tree
 * order) that still has room. */
static int spread_order(ts_node_slots *s, const ts_hwtree *hw, int per_chunk)
{
    int max = 4 * s->nchunks + 2;
    rr_trie t = { 0 };
    t.parent = malloc(sizeof(int) * (size_t)max);
    t.key = malloc(sizeof(int) * (size_t)max);
    t.remaining = calloc((size_t)max, sizeof(int));
    t.cursor = calloc((size_t)max, sizeof(int));
    t.chunk = malloc(sizeof(int) * (size_t)max);
    t.kid_first = calloc((size_t)max + 1, sizeof(int));
    t.kid_count = calloc((size_t)max, sizeof(int));
    t.kids = malloc(sizeof(int) * (size_t)max);
    if (!t.parent || !t.key || !t.remaining || !t.cursor || !t.chunk || !t.kid_first || !t.kid_count ||
        !t.kids) {
        trie_free(&t);
        return TS_ENOMEM;
    }
    t.parent[0] = -1;
    t.chunk[0] = -1;
    t.n = 1;
    int last[3] = { -1, -1, -1 };    /* the trie vertex of the current package, outer, inner */
    int last_key[3] = { 0, 0, 0 };
    for (int k = 0; k < s->nchunks; k++) {
        const int *cores = s->chunk_core + s->chunk_first[k];
        int size = s->chunk_first[k + 1] - s->chunk_first[k];
        const ts_hwcore *first = &hw->core[cores[0]];
        int keys[3];
        keys[0] = first->package;
        inner_keys(hw, first, &keys[1], &keys[2]);
        /* a chunk spanning groups hangs from the lowest group holding all of its cores */
        for (int i = 1; i < size; i++) {
            int o, in;
            inner_keys(hw, &hw->core[cores[i]], &o, &in);
            if (o != keys[1])
                keys[1] = keys[2] = -1;
            if (in != keys[2])
                keys[2] = -1;
        }
        int at = 0, changed = 0;
        for (int l = 0; l < 3; l++) {
            if (keys[l] < 0)
                break;
            /* chunks come in tree order, so a group's chunks are consecutive */
            changed = changed || last[l] < 0 || last_key[l] != keys[l] || t.parent[last[l]] != at;
            if (changed) {
                t.parent[t.n] = at;
                t.key[t.n] = keys[l];
                t.chunk[t.n] = -1;
                last[l] = t.n++;
                last_key[l] = keys[l];
                for (int j = l + 1; j < 3; j++)
                    last[j] = -1;
            }
            at = last[l];
        }
        t.parent[t.n] = at;
        t.chunk[t.n] = k;
        t.remaining[t.n] = per_chunk;
        t.n++;
    }
    /* children lists (vertices were made parents first, children in order) and room */
    for (int v = 1; v < t.n; v++)
        t.kid_count[t.parent[v]]++;
    for (int v = 0; v < t.n; v++)
        t.kid_first[v + 1] = t.kid_first[v] + t.kid_count[v];
    int *fill = t.cursor;             /* zero now; reset below */
    for (int v = 1; v < t.n; v++)
        t.kids[t.kid_first[t.parent[v]] + fill[t.parent[v]]++] = v;
    memset(t.cursor, 0, sizeof(int) * (size_t)t.n);
    for (int v = t.n - 1; v > 0; v--)
        t.remaining[t.parent[v]] += t.remaining[v];
    for (int turn = 0; turn < s->capacity; turn++) {
        int v = 0;
        while (t.chunk[v] < 0) {
            int nk = t.kid_count[v], pick = -1;
            for (int tries = 0; tries < nk && pick < 0; tries++) {
                int c = t.kids[t.kid_first[v] + t.cursor[v]];
                t.cursor[v] = (t.cursor[v] + 1) % nk;
                if (t.remaining[c] > 0)
                    pick = c;
            }
            v = pick;
        }
        s->spread[turn] = t.chunk[v];
        for (; v >= 0; v = t.parent[v])
            t.remaining[v]--;
    }
    trie_free(&t);
    return TS_OK;
}

static int node_slots_build(ts_node_slots *s, const ts_hwtree *hw, int cpus_per_rank,
                            int ranks_per_core)
{
    memset(s, 0, sizeof *s);
    int rc = make_chunks(s, hw, cpus_per_rank);
    if (rc != TS_OK)
        return rc;
    s->capacity = s->nchunks * ranks_per_core;
    s->compact = malloc(sizeof(int) * (size_t)(s->capacity + 1));
    s->spread = malloc(sizeof(int) * (size_t)(s->capacity + 1));
    if (!s->compact || !s->spread)
        return TS_ENOMEM;
    for (int i = 0; i < s->capacity; i++)
        s->compact[i] = i / ranks_per_core;
    return spread_order(s, hw, ranks_per_core);
}

static void node_slots_free(ts_node_slots *s)
{
    free(s->chunk_first);
    free(s->chunk_core);
    free(s->compact);
    free(s->spread);
}

/* ---- ranks to nodes ---- */

typedef struct leaf_group {
    int first, count;        /* nodes: leaf_nodes[first .. first + count) in hierarchy order */
    int free;                /* slots left on them */
    int cursor;              /* spread: next node; block: first node with room */
} leaf_group;

typedef struct distributor {
    ts_placement *pl;
    const int *cap;          /* per node index: slots it offers */
    int *used;               /* per node index: ranks on it so far */
    int nleaves;
    leaf_group *leaf;
    int *leaf_nodes;
} distributor;

static void assign(distributor *d, int r, int node)
{
    d->pl->rank[r].node = node;
    d->used[node]++;
}

static void place_compact(distributor *d)
{
    int r = 0;
    for (int i = 0; i < d->pl->h->nnodes && r < d->pl->nranks; i++) {
        int node = d->pl->node_order[i];
        while (d->used[node] < d->cap[node] && r < d->pl->nranks)
            assign(d, r++, node);
    }
}

static void place_spread(distributor *d)
{
    int cursor = 0;
    for (int r = 0; r < d->pl->nranks; r++) {
        leaf_group *g = NULL;
        for (int tries = 0; tries < d->nleaves && !g; tries++) {
            leaf_group *x = &d->leaf[cursor];
            cursor = (cursor + 1) % d->nleaves;
            if (x->free > 0)
                g = x;
        }
        /* the total was checked: some leaf has room */
        int node = -1;
        while (node < 0) {
            int cand = d->leaf_nodes[g->first + g->cursor];
            g->cursor = (g->cursor + 1) % g->count;
            if (d->used[cand] < d->cap[cand])
                node = cand;
        }
        assign(d, r, node);
        g->free--;
    }
}

/* Fill ranks [r, r + n) into leaf g, compactly from its first node with room. */
static void fill_leaf(distributor *d, leaf_group *g, int r, int n)
{
    while (n > 0 && g->free > 0) {
        int node = d->leaf_nodes[g->first + g->cursor];
        if (d->used[node] >= d->cap[node]) {
            g->cursor++;
            continue;
        }
        assign(d, r++, node);
        g->free--;
        n--;
    }
}

static void place_block(distributor *d, int block)
{
    int cursor = 0, r = 0;
    while (r < d->pl->nranks) {
        int n = d->pl->nranks - r < block ? d->pl->nranks - r : block;
        leaf_group *g = NULL;
        for (int tries = 0; tries < d->nleaves && !g; tries++) {
            leaf_group *x = &d->leaf[cursor];
            cursor = (cursor + 1) % d->nleaves;
            if (x->free >= n)
                g = x;
        }
        if (g) {
            fill_leaf(d, g, r, n);
            r += n;
            continue;
        }
        /* no switch has room for a whole block: spill it over the free slots in order */
        for (int k = 0; k < d->nleaves && n > 0; k++) {
            int before = d->leaf[k].free;
            fill_leaf(d, &d->leaf[k], r, n);
            r += before - d->leaf[k].free;
            n -= before - d->leaf[k].free;
        }
    }
}

/* Leaf switches (the parents of nodes) in hierarchy order, each with its nodes. */
static int group_leaves(distributor *d)
{
    const ts_hierarchy *h = d->pl->h;
    int *leaf_of_parent = malloc(sizeof(int) * (size_t)(h->nvert + 1));
    d->leaf = calloc((size_t)h->nnodes + 1, sizeof *d->leaf);
    d->leaf_nodes = malloc(sizeof(int) * (size_t)(h->nnodes + 1));
    int *count = calloc((size_t)h->nnodes + 1, sizeof(int));
    if (!leaf_of_parent || !d->leaf || !d->leaf_nodes || !count) {
        free(leaf_of_parent);
        free(count);
        return TS_ENOMEM;
    }
    for (int i = 0; i < h->nvert; i++)
        leaf_of_parent[i] = -1;
    int *leaf_idx = malloc(sizeof(int) * (size_t)(h->nnodes + 1));
    if (!leaf_idx) {
        free(leaf_of_parent);
        free(count);
        return TS_ENOMEM;
    }
    for (int i = 0; i < h->nnodes; i++) {
        int node = d->pl->node_order[i], p = h->v[h->node_vertex[node]].parent;
        if (leaf_of_parent[p] < 0)
            leaf_of_parent[p] = d->nleaves++;
        leaf_idx[i] = leaf_of_parent[p];
        count[leaf_idx[i]]++;
    }
    for (int k = 0, at = 0; k < d->nleaves; k++) {
        d->leaf[k].first = at;
        at += count[k];
        count[k] = 0;
    }
    for (int i = 0; i < h->nnodes; i++) {
        int node = d->pl->node_order[i];
        leaf_group *g = &d->leaf[leaf_idx[i]];
        d->leaf_nodes[g->first + g->count++] = node;
        g->free += d->cap[node];
    }
    free(leaf_idx);
    free(leaf_of_parent);
    free(count);
    return TS_OK;
}

/* ---- the whole placement ---- */

void ts_placement_free(ts_placement *pl)
{
    if (pl->slots && pl->h)
        for (int k = 0; k < pl->h->ntemplates; k++)
            node_slots_free(&pl->slots[k]);
    free(pl->slots);
    free(pl->rank);
    free(pl->node_ranks);
    free(pl->node_order);
    memset(pl, 0, sizeof *pl);
}

const ts_hwtree *ts_placement_hwtree(const ts_placement *pl, int node)
{
    return pl->h->templates[pl->h->node_template[node]].hw;
}

const int *ts_placement_cores(const ts_placement *pl, int r, int *n)
{
    const ts_rank_slot *rs = &pl->rank[r];
    const ts_node_slots *s = &pl->slots[pl->h->node_template[rs->node]];
    *n = s->chunk_first[rs->chunk + 1] - s->chunk_first[rs->chunk];
    return s->chunk_core + s->chunk_first[rs->chunk];
}

static int distribute(ts_placement *pl, const int *cap, ts_error *err)
{
    const ts_hierarchy *h = pl->h;
    distributor d = { .pl = pl, .cap = cap };
    d.used = calloc((size_t)h->nnodes + 1, sizeof(int));
    int rc = d.used ? group_leaves(&d) : TS_ENOMEM;
    if (rc == TS_OK) {
        if (pl->kind == TS_PLACE_SPREAD)
            place_spread(&d);
        else if (pl->kind == TS_PLACE_BLOCK)
            place_block(&d, pl->block_size);
        else
            place_compact(&d);
        /* the j-th rank on a node takes the j-th slot of the node's order */
        memset(d.used, 0, sizeof(int) * (size_t)h->nnodes);
        for (int r = 0; r < pl->nranks; r++) {
            int node = pl->rank[r].node;
            const ts_node_slots *s = &pl->slots[h->node_template[node]];
            const int *order = pl->kind == TS_PLACE_SPREAD ? s->spread : s->compact;
            pl->rank[r].chunk = order[d.used[node]++];
        }
        memcpy(pl->node_ranks, d.used, sizeof(int) * (size_t)h->nnodes);
    }
    free(d.used);
    free(d.leaf);
    free(d.leaf_nodes);
    return rc == TS_OK ? TS_OK : ts_fail(err, TS_ENOMEM, "out of memory");
}

int ts_place(const ts_hierarchy *h, const ts_policy *p, const ts_place_options *o,
             ts_placement *pl, ts_error *err)
{
    memset(pl, 0, sizeof *pl);
    pl->h = h;
    pl->kind = p->kind;
    pl->cpus_per_rank = o && o->cpus_per_rank > 0 ? o->cpus_per_rank : p->cpus_per_rank;
    pl->ranks_per_core = p->ranks_per_core;
    pl->ranks_per_node = p->ranks_per_node;
    pl->block_size = p->block_size > 0 ? p->block_size : 1;
    if (pl->cpus_per_rank > 1 && pl->ranks_per_core > 1)
        return ts_fail(err, TS_EINPUT, "%d cores per rank and %d ranks per core exclude each other",
                       pl->cpus_per_rank, pl->ranks_per_core);
    if (pl->cpus_per_rank > TS_POLICY_MAX_CPUS_PER_RANK)
        return ts_fail(err, TS_EINPUT, "cores per rank must be 1 to %d, not %d",
                       TS_POLICY_MAX_CPUS_PER_RANK, pl->cpus_per_rank);
    pl->slots = calloc((size_t)h->ntemplates + 1, sizeof *pl->slots);
    pl->node_ranks = calloc((size_t)h->nnodes + 1, sizeof(int));
    pl->node_order = malloc(sizeof(int) * (size_t)(h->nnodes + 1));
    int *cap = malloc(sizeof(int) * (size_t)(h->nnodes + 1));
    int rc = TS_OK;
    if (!pl->slots || !pl->node_ranks || !pl->node_order || !cap) {
        rc = ts_fail(err, TS_ENOMEM, "out of memory");
        goto out;
    }
    for (int k = 0; k < h->ntemplates && rc == TS_OK; k++)
        if (node_slots_build(&pl->slots[k], h->templates[k].hw, pl->cpus_per_rank,
                             pl->ranks_per_core) != TS_OK)
            rc = ts_fail(err, TS_ENOMEM, "out of memory");
    if (rc != TS_OK)
        goto out;
    int n = 0;
    long capacity = 0;
    for (int i = 0; i < h->nvert; i++)
        if (h->v[i].kinds & TS_HK_BIT(TS_HK_NODE))
            pl->node_order[n++] = h->v[i].node;
    for (int node = 0; node < h->nnodes; node++) {
        int c = pl->slots[h->node_template[node]].capacity;
        if (pl->ranks_per_node > 0 && c > pl->ranks_per_node)
            c = pl->ranks_per_node;
        cap[node] = c;
        capacity += c;
    }
    pl->capacity = capacity > TS_PLACE_MAX_RANKS ? TS_PLACE_MAX_RANKS : (int)capacity;
    if (p->kind == TS_PLACE_MEASURE_ONLY)
        goto out;                          /* hints only: no ranks */
    pl->nranks = o && o->nranks > 0 ? o->nranks : pl->capacity;
    if (pl->capacity == 0) {
        rc = ts_fail(err, TS_EINPUT, "no node offers a slot: no package has %d usable cores for "
                     "one rank", pl->cpus_per_rank);
        goto out;
    }
    if (pl->nranks > pl->capacity) {
        rc = ts_fail(err, TS_EINPUT, "%d ranks do not fit: the %d nodes offer %d slots (%d cores "
                     "per rank, %d ranks per core, ranks_per_node %d%s)", pl->nranks, h->nnodes,
                     pl->capacity, pl->cpus_per_rank, pl->ranks_per_core, pl->ranks_per_node,
                     pl->ranks_per_node ? "" : " = no limit");
        goto out;
    }
    pl->rank = malloc(sizeof *pl->rank * (size_t)pl->nranks);
    if (!pl->rank) {
        rc = ts_fail(err, TS_ENOMEM, "out of memory");
        goto out;
    }
    rc = distribute(pl, cap, err);
out:
    free(cap);
    if (rc != TS_OK)
        ts_placement_free(pl);
    return rc;
}
