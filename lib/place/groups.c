/* toposcope — levels, group ids, leaders and LogP estimates per level. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "toposcope/groups.h"

static const ts_hier_kind intra_kinds[] = { TS_HK_NODE, TS_HK_PACKAGE, TS_HK_NUMA, TS_HK_L3,
                                            TS_HK_CORE };
static const char *const intra_names[] = { "node", "package", "numa", "l3", "core" };

void ts_groups_free(ts_groups *g)
{
    free(g->group);
    free(g->leader);
    memset(g, 0, sizeof *g);
}

int ts_groups_level(const ts_groups *g, const char *name)
{
    for (int l = 0; l < g->nlevels; l++)
        if (!strcmp(g->level[l].name, name))
            return l;
    return -1;
}

static void add_level(ts_groups *g, const char *name, ts_hier_kind kind, int height)
{
    ts_level *l = &g->level[g->nlevels++];
    memset(l, 0, sizeof *l);
    snprintf(l->name, sizeof l->name, "%s", name);
    l->kind = kind;
    l->height = height;
    l->logp = (ts_logp){ NAN, NAN, NAN, NAN, 0, "none", NULL };
}

static int make_levels(ts_groups *g, const ts_fabric *f, int with_cores)
{
    int height = f->v[f->root].height;
    if (height + 6 > TS_LEVELS_MAX)
        return TS_ELIMIT;
    add_level(g, "job", TS_HK_SWITCH, height);
    for (int k = height - 1; k >= 2; k--) {
        char name[TS_LEVEL_NAME_MAX];
        snprintf(name, sizeof name, "switch%d", k);
        add_level(g, name, TS_HK_SWITCH, k);
    }
    add_level(g, "leaf", TS_HK_SWITCH, 1);
    for (int i = 0; i < (with_cores ? 5 : 1); i++)
        add_level(g, intra_names[i], intra_kinds[i], 0);
    return TS_OK;
}

/* The group (a fabric vertex) of a node at switch level of height k: its nearest ancestor of
 * at least that height. */
static int switch_group(const ts_fabric *f, int node, int k)
{
    int x = f->v[f->node_vertex[node]].parent;
    while (f->v[x].parent != TS_NONE && f->v[x].height < k)
        x = f->v[x].parent;
    return x;
}

/* Where each usable core of a template finds its package, NUMA, L3 and core group: template
 * indices (-1 where the node lacks the level), 4 per core. Looked up per rank instead of walking
 * the hierarchy, which a spread placement would visit in random order. */
static int *template_keys(const ts_hier_template *t)
{
    int ncores = t->hw->ncores;
    int *keys = malloc(sizeof(int) * (size_t)(4 * ncores + 1));
    if (!keys)
        return NULL;
    for (int c = 0; c < ncores; c++) {
        int *k = keys + 4 * c;
        k[0] = k[1] = k[2] = k[3] = -1;
        for (int v = t->core_vertex[c]; v >= 0; v = t->v[v].parent)
            for (int i = 0; i < 4; i++)
                if ((t->v[v].kinds & TS_HK_BIT(intra_kinds[i + 1])) && k[i] < 0)
                    k[i] = v;
    }
    return keys;
}

typedef struct key_tables {
    int nnet;                /* switch levels */
    int *net;                /* nnodes x nnet: fabric vertex of the group */
    int **tmpl;              /* per template: template_keys() */
} key_tables;

/* A member's group key at every level: fabric vertices for switch levels, hierarchy vertices
 * below (both fit one key space by offsetting the hierarchy by the fabric's size). */
static void member_keys(const ts_groups *g, const ts_hierarchy *h, const ts_placement *pl,
                        const key_tables *kt, int member, int *key)
{
    int node = pl ? pl->rank[member].node : member;
    int off = h->fabric->nvert;
    memcpy(key, kt->net + (size_t)node * kt->nnet, sizeof(int) * (size_t)kt->nnet);
    if (kt->nnet == g->nlevels)
        return;
    int at = kt->nnet, nv = h->node_vertex[node];
    key[at] = off + nv;
    if (!pl)
        return;
    int ncores;
    const int *cores = ts_placement_cores(pl, member, &ncores);
    const int *tk = kt->tmpl[h->node_template[node]] + 4 * cores[0];
    /* a level the node lacks takes the group of the level out of it */
    for (int i = 0; i < 4; i++)
        key[at + 1 + i] = tk[i] >= 0 ? off + nv + 1 + tk[i] : key[at + i];
}

static void key_tables_free(key_tables *kt, int ntemplates)
{
    for (int k = 0; kt->tmpl && k < ntemplates; k++)
        free(kt->tmpl[k]);
    free(kt->tmpl);
    free(kt->net);
    memset(kt, 0, sizeof *kt);
}

static int key_tables_build(key_tables *kt, const ts_groups *g, const ts_hierarchy *h)
{
    const ts_fabric *f = h->fabric;
    memset(kt, 0, sizeof *kt);
    while (kt->nnet < g->nlevels && g->level[kt->nnet].kind == TS_HK_SWITCH)
        kt->nnet++;
    kt->net = malloc(sizeof(int) * (size_t)(h->nnodes * kt->nnet + 1));
    kt->tmpl = calloc((size_t)h->ntemplates + 1, sizeof *kt->tmpl);
    if (!kt->net || !kt->tmpl)
        return TS_ENOMEM;
    for (int n = 0; n < h->nnodes; n++)
        for (int l = 0; l < kt->nnet; l++)
            kt->net[n * kt->nnet + l] = l == 0 ? f->root : switch_group(f, n, g->level[l].height);
    for (int k = 0; k < h->ntemplates; k++)
        if (!(kt->tmpl[k] = template_keys(&h->templates[k])))
            return TS_ENOMEM;
    return TS_OK;
}

int ts_groups_compute(ts_groups *g, const ts_hierarchy *h, const ts_placement *pl, ts_error *err)
{
    memset(g, 0, sizeof *g);
    const ts_fabric *f = h->fabric;
    if (pl && pl->nranks == 0)
        pl = NULL;
    if (make_levels(g, f, pl != NULL) != TS_OK)
        return ts_fail(err, TS_ELIMIT, "the tree is too deep for %d levels", TS_LEVELS_MAX);
    g->members_are_nodes = pl == NULL;
    g->nmembers = pl ? pl->nranks : h->nnodes;
    size_t cells = (size_t)g->nmembers * (size_t)g->nlevels;
    int nkeys = f->nvert + h->nvert;
    key_tables kt;
    g->group = malloc(sizeof(int) * (cells ? cells : 1));
    g->leader = malloc(cells ? cells : 1);
    int *id = malloc(sizeof(int) * (size_t)nkeys);
    int *stamp = calloc((size_t)nkeys, sizeof(int));
    int rc = key_tables_build(&kt, g, h);
    if (!g->group || !g->leader || !id || !stamp || rc != TS_OK) {
        free(id);
        free(stamp);
        key_tables_free(&kt, h->ntemplates);
        ts_groups_free(g);
        return ts_fail(err, TS_ENOMEM, "out of memory");
    }
    /* keys first (into the group array), then dense ids per level in member order */
    for (int m = 0; m < g->nmembers; m++)
        member_keys(g, h, pl, &kt, m, g->group + (size_t)m * g->nlevels);
    key_tables_free(&kt, h->ntemplates);
    for (int l = 0; l < g->nlevels; l++) {
        int next = 0;
        for (int m = 0; m < g->nmembers; m++) {
            size_t at = (size_t)m * g->nlevels + l;
            int key = g->group[at];
            int fresh = stamp[key] != l + 1;
            if (fresh) {
                stamp[key] = l + 1;
                id[key] = next++;
            }
            g->group[at] = id[key];
            g->leader[at] = (unsigned char)fresh;
        }
        g->level[l].ngroups = next;
    }
    free(id);
    free(stamp);
    return TS_OK;
}

/* ---- LogP ---- */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    if (n == 0)
        return NAN;
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* The model's nominal one-way latency of the link above vertex x. */
static double model_link_us(const ts_fabric *f, const ts_model_params *mp, int x)
{
    int level = f->v[x].kind == TS_NODE ? 0 : f->v[x].height;
    double us = level < TS_MODEL_MAX_LEVELS ? mp->level[level].latency_us : NAN;
    return isnan(us) ? mp->link_latency_us : us;
}

typedef struct pair_estimate {
    double L, o;             /* o = o_s = o_r */
    int from_model;
} pair_estimate;

static int estimate_pair(const ts_fabric *f, const ts_model_params *mp, int a, int b, int *links,
                         pair_estimate *e)
{
    int va = f->node_vertex[a], vb = f->node_vertex[b];
    int n = ts_fabric_path_links(f, va, vb, links, f->nvert);
    double tree = 0, model = 0;
    int known = 1;
    for (int i = 0; i < n; i++) {
        double us = f->v[links[i]].link_us;
        known = known && isfinite(us);
        tree += us;
        model += model_link_us(f, mp, links[i]);
    }
    double ha = f->v[va].host_us, hb = f->v[vb].host_us;
    int hosts_given = isfinite(ha) && isfinite(hb);
    double host = hosts_given ? 0.5 * (ha + hb) : mp->host_overhead_us;
    e->o = host / 4;
    e->from_model = !known;
    if (!known)
        e->L = model;
    else if (hosts_given)
        e->L = tree;
    else
        e->L = fmax(0, tree - 2 * e->o);   /* estimates carry the host part: take it out */
    return TS_OK;
}

/* Groups of level l in which two members meet there: two members of the group in different
 * groups of level l + 1 (the innermost level: any two members). */
static int meeting_groups(const ts_groups *g, int l, int *count)
{
    int ng = g->level[l].ngroups, finer = l + 1 < g->nlevels;
    int *first = malloc(sizeof(int) * (size_t)(ng + 1));   /* group -> the first member's finer group */
    unsigned char *met = calloc((size_t)ng + 1, 1);
    if (!first || !met) {
        free(first);
        free(met);
        return TS_ENOMEM;
    }
    for (int x = 0; x < ng; x++)
        first[x] = -1;
    *count = 0;
    for (int m = 0; m < g->nmembers; m++) {
        const int *grp = g->group + (size_t)m * g->nlevels;
        int x = grp[l], below = finer ? grp[l + 1] : m;
        if (first[x] < 0)
            first[x] = below;
        else if (!met[x] && first[x] != below) {
            met[x] = 1;
            (*count)++;
        }
    }
    free(first);
    free(met);
    return TS_OK;
}

/* An intra-node level: the model's intra_node values where a parameter file gives them. */
static int intra_logp(ts_groups *g, int l, const ts_model_params *mp, ts_error *err)
{
    ts_level *lv = &g->level[l];
    int k = 0;
    while (k < TS_INTRA_LEVELS && strcmp(ts_intra_level_names[k], lv->name))
        k++;
    int npairs;
    if (k == TS_INTRA_LEVELS)
        return TS_OK;
    if (meeting_groups(g, l, &npairs) != TS_OK)
        return ts_fail(err, TS_ENOMEM, "out of memory");
    if (npairs == 0) {
        lv->logp.reason = "no two members of the job meet at this level";
        return TS_OK;
    }
    double L = mp->intra_latency_us[k], o = mp->intra_overhead_us;
    if (isnan(L) || isnan(o)) {
        lv->logp.reason = "not measured (the node agents time messages between nodes only) and "
                          "not modelled (give intra_node in --params, doc/params.md)";
        return TS_OK;
    }
    lv->logp.L_us = L;
    lv->logp.o_s_us = lv->logp.o_r_us = o;
    lv->logp.g_us = o;
    lv->logp.pairs = npairs;
    lv->logp.source = "model";
    return TS_OK;
}

int ts_groups_logp(ts_groups *g, const ts_hierarchy *h, const ts_model_params *mp, ts_error *err)
{
    const ts_fabric *f = h->fabric;
    int nnodes = h->nnodes;
    int *first = malloc(sizeof(int) * (size_t)f->nvert);        /* group -> its first node */
    int *done = malloc(sizeof(int) * (size_t)f->nvert);
    int *links = malloc(sizeof(int) * (size_t)(f->nvert + 1));
    double *Ls = malloc(sizeof(double) * (size_t)(nnodes + 1));
    double *os = malloc(sizeof(double) * (size_t)(nnodes + 1));
    int rc = TS_OK;
    if (!first || !done || !links || !Ls || !os) {
        rc = ts_fail(err, TS_ENOMEM, "out of memory");
        goto out;
    }
    for (int l = 0; l < g->nlevels; l++)      /* a second call starts afresh */
        g->level[l].logp = (ts_logp){ NAN, NAN, NAN, NAN, 0, "none", NULL };
    for (int l = 0; l < g->nlevels && g->level[l].kind == TS_HK_SWITCH; l++) {
        ts_level *lv = &g->level[l];
        int finer_is_switch = l + 1 < g->nlevels && g->level[l + 1].kind == TS_HK_SWITCH;
        for (int x = 0; x < f->nvert; x++)
            first[x] = done[x] = -1;
        int npairs = 0, any_model = 0;
        for (int n = 0; n < nnodes; n++) {
            int grp = l == 0 ? f->root : switch_group(f, n, lv->height);
            if (first[grp] < 0) {
                first[grp] = n;
                continue;
            }
            if (done[grp] >= 0)
                continue;
            int a = first[grp];
            /* a pair that meets at this level, not below it */
            int below_a = finer_is_switch ? switch_group(f, a, g->level[l + 1].height) : a;
            int below_n = finer_is_switch ? switch_group(f, n, g->level[l + 1].height) : n;
            if (below_a == below_n)
                continue;
            pair_estimate e;
            estimate_pair(f, mp, a, n, links, &e);
            Ls[npairs] = e.L;
            os[npairs] = e.o;
            any_model |= e.from_model;
            npairs++;
            done[grp] = 1;
        }
        if (npairs == 0) {
            lv->logp.reason = "no two nodes of the job meet at this level";
            continue;
        }
        lv->logp.L_us = median(Ls, npairs);
        lv->logp.o_s_us = lv->logp.o_r_us = median(os, npairs);
        lv->logp.g_us = lv->logp.o_s_us + mp->flow_penalty_us;
        lv->logp.pairs = npairs;
        lv->logp.source = any_model ? "model" : "tree";
    }
    for (int l = 0; l < g->nlevels && rc == TS_OK; l++)
        if (g->level[l].kind != TS_HK_SWITCH)
            rc = intra_logp(g, l, mp, err);
out:
    free(first);
    free(done);
    free(links);
    free(Ls);
    free(os);
    return rc;
}
