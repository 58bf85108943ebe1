/* toposcope — the fast method on fabrics that are not level-structured.
 *
 * Why fast's own splitting fails there: it separates a region's pairs into near and far by one
 * RTT threshold, but when branches differ in depth a far pair through shallow branches is as
 * short as a near pair inside a deep one. Worse, all pairs of a round run at once, and on a
 * big region the pairs crossing its switch inflate each other by far more than a level step.
 *
 * What works instead rests on two facts of an RTT tree metric:
 *  - a pair on one leaf switch uses only its two access links, which no other pair of the
 *    round uses (every node is in one pair at most): its RTT is never inflated, and it is the
 *    lowest class of RTTs. So leaf groups come out of busy rounds exactly, with one cut on the
 *    lowest class, however inflated the other pairs are (fragments of groups test each other
 *    until every pair of fragments is known to be apart, as in fast's own rounds);
 *  - with one node per leaf group, a round holding a single pair has nothing to share a link
 *    with, so its RTT is the tree distance plus jitter. All pairs of representatives measured
 *    that way give a clean matrix, and the additive-tree inference (ts_infer_matrix) places
 *    switches of any depth from it.
 * fast's own measurements seed the grouping, so it mostly only confirms what they show. The
 * cost is one round per pair of leaf groups: L(L-1)/2 short rounds for L leaf switches,
 * against fast's few dozen busy ones; it runs only when fast's tree shows nodes at different
 * depths (or a region fast could not cut), so level-structured fabrics never pay it. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "fast_irregular.h"
#include "toposcope/rng.h"
#include "util/unionfind.h"

#define SAME_LEAF_REL 0.15  /* the cut above the same-leaf median: about half a level step */
#define GROUP_BATCH 8       /* rounds planned per gather/scatter step while grouping */

int ts_irr_level_structured(const ts_utree *t, const int *unresolved_of)
{
    int nv = t->nvert;
    if (nv == 0)
        return 1;
    int *kids = calloc((size_t)nv, sizeof(int));
    if (!kids)
        return -1;
    for (int v = 0; v < nv; v++)
        if (t->parent[v] != TS_NONE)
            kids[t->parent[v]]++;
    /* depth counts branching switches only: a switch with one child disappears from the
     * fabric (ts_utree_to_fabric contracts it); the nodes of unresolved regions are held
     * against the others' depth after it is known */
    int depth = -1, coarse_deepest = -1, same = 1;
    for (int v = 0; v < nv && same; v++) {
        if (t->node[v] == TS_NONE)
            continue;
        int d = 0;
        for (int u = t->parent[v]; u != TS_NONE; u = t->parent[u])
            d += kids[u] >= 2;
        if (unresolved_of && unresolved_of[t->node[v]] >= 0)
            coarse_deepest = d > coarse_deepest ? d : coarse_deepest;
        else if (depth < 0)
            depth = d;
        else if (d != depth)
            same = 0;
    }
    free(kids);
    return same && (depth < 0 || coarse_deepest <= depth);
}

/* A pair's round trip: the minimum of its samples, as fast takes it, unless the rule asks for
 * the mean (toposcope sim --estimator mean). */
static double irr_estimate(const ts_pair_stats *st, const ts_stop_rule *rule)
{
    return ts_pair_estimate(st, rule->estimator == TS_ESTIMATE_MEAN ? TS_ESTIMATE_MEAN : TS_ESTIMATE_MIN);
}

static int cmp_dbl(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

double ts_irr_same_leaf_cut(double *d, long m, double rel, double *unsure)
{
    if (unsure)
        *unsure = NAN;
    if (m <= 0)
        return NAN;
    qsort(d, (size_t)m, sizeof *d, cmp_dbl);
    /* noise and contention only add, so the smallest RTT belongs to the lowest class; the
     * class is what lies within rel of it, and its median is robust to the class's spread */
    long k = 0;
    while (k < m && d[k] <= d[0] * (1.0 + rel))
        k++;
    double c = d[k / 2], cut = c * (1.0 + rel);
    /* a pair of slow access links plus jitter lands above the cut now and then: pairs up to
     * the next level's lower edge are worth a second look */
    if (unsure)
        *unsure = c * (1.0 + 2.5 * rel);
    return cut;
}

typedef struct irr {
    ts_probe_engine *e;
    const ts_stop_rule *rule;
    ts_error *err;
    ts_rng rng;
    int n, nlive;
    int *live;              /* the nodes to place */
    int *ma, *mb;           /* measured pairs of the grouping rounds */
    double *md;
    long nm, capm;
    int *uf;
} irr;

static int store(irr *I, const ts_pair_stats *st, int np)
{
    if (I->nm + np > I->capm) {
        long cap = I->capm ? 2 * I->capm : 4096;
        while (cap < I->nm + np)
            cap *= 2;
        int *a = realloc(I->ma, sizeof(int) * (size_t)cap);
        if (a)
            I->ma = a;
        int *b = realloc(I->mb, sizeof(int) * (size_t)cap);
        if (b)
            I->mb = b;
        double *d = realloc(I->md, sizeof(double) * (size_t)cap);
        if (d)
            I->md = d;
        if (!a || !b || !d)
            return TS_ENOMEM;
        I->capm = cap;
    }
    for (int i = 0; i < np; i++) {
        if (st[i].samples == 0)
            continue;
        I->ma[I->nm] = st[i].a;
        I->mb[I->nm] = st[i].b;
        I->md[I->nm++] = irr_estimate(&st[i], I->rule);
    }
    return TS_OK;
}

/* Fragments of leaf groups under the current cut: fid per node, members per fragment, and
 * the fragment pairs known apart (a dense bit matrix: fragments never outnumber the nodes). */
typedef struct groups {
    int nfrag;
    int *fid;               /* node -> fragment, -1 when not live */
    int *start, *mem;       /* fragment f's members: mem[start[f] .. start[f+1]) */
    int *nfree;             /* per fragment: members still free in the round being planned */
    unsigned char *apart;
} groups;

static void groups_free(groups *g)
{
    free(g->fid);
    free(g->start);
    free(g->mem);
    free(g->nfree);
    free(g->apart);
    memset(g, 0, sizeof *g);
}

static size_t bit_at(const groups *g, int f, int h)
{
    return (size_t)f * (size_t)g->nfrag + (size_t)h;
}

static int is_apart(const groups *g, int f, int h)
{
    size_t i = bit_at(g, f, h);
    return g->apart[i >> 3] >> (i & 7) & 1;
}

static void set_apart(groups *g, int f, int h)
{
    size_t i = bit_at(g, f, h), j = bit_at(g, h, f);
    g->apart[i >> 3] |= (unsigned char)(1u << (i & 7));
    g->apart[j >> 3] |= (unsigned char)(1u << (j & 7));
}

static int groups_build(irr *I, groups *g, double cut, double unsure)
{
    memset(g, 0, sizeof *g);
    int n = I->n;
    for (int i = 0; i < I->nlive; i++)
        I->uf[I->live[i]] = I->live[i];
    for (long k = 0; k < I->nm; k++)
        if (I->md[k] < cut)
            ts_uf_union(I->uf, I->ma[k], I->mb[k]);
    g->fid = malloc(sizeof(int) * (size_t)n);
    g->start = calloc((size_t)I->nlive + 2, sizeof(int));
    g->mem = malloc(sizeof(int) * (size_t)I->nlive + 1);
    g->nfree = malloc(sizeof(int) * (size_t)I->nlive + 1);
    if (!g->fid || !g->start || !g->mem || !g->nfree)
        return TS_ENOMEM;
    for (int i = 0; i < n; i++)
        g->fid[i] = -1;
    for (int i = 0; i < I->nlive; i++) {
        int x = I->live[i], r = ts_uf_find(I->uf, x);
        if (g->fid[r] < 0)
            g->fid[r] = g->nfrag++;
        g->fid[x] = g->fid[r];
    }
    for (int i = 0; i < I->nlive; i++)
        g->start[g->fid[I->live[i]] + 1]++;
    for (int f = 0; f < g->nfrag; f++)
        g->start[f + 1] += g->start[f];
    memcpy(g->nfree, g->start, sizeof(int) * (size_t)g->nfrag);
    for (int i = 0; i < I->nlive; i++)
        g->mem[g->nfree[g->fid[I->live[i]]]++] = I->live[i];
    size_t bits = (size_t)g->nfrag * (size_t)g->nfrag;
    g->apart = calloc(bits / 8 + 1, 1);
    if (!g->apart)
        return TS_ENOMEM;
    /* a pair just above the cut may be a same-leaf pair in the jitter's tail: its fragments
     * meet once more (other members, other round) before they count as apart */
    unsigned char *once = calloc(bits / 8 + 1, 1);
    if (!once)
        return TS_ENOMEM;
    for (long k = 0; k < I->nm; k++) {
        int f = g->fid[I->ma[k]], h = g->fid[I->mb[k]];
        if (f < 0 || h < 0 || f == h)
            continue;
        size_t i = bit_at(g, f, h), j = bit_at(g, h, f);
        if (I->md[k] < unsure && !(once[i >> 3] >> (i & 7) & 1)) {
            once[i >> 3] |= (unsigned char)(1u << (i & 7));
            once[j >> 3] |= (unsigned char)(1u << (j & 7));
            continue;
        }
        set_apart(g, f, h);
    }
    free(once);
    return TS_OK;
}

/* One round of the grouping: every free member of a fragment meets a free member of a random
 * fragment not yet known apart from its own; planned pairs count as apart for the rest of the
 * batch. Returns the pairs written to out. */
static int plan_group_round(irr *I, groups *g, int *order, ts_pair *out)
{
    int np = 0;
    for (int f = 0; f < g->nfrag; f++)
        g->nfree[f] = g->start[f + 1] - g->start[f];
    ts_rng_shuffle_int(&I->rng, order, I->nlive);
    for (int i = 0; i < I->nlive; i++) {
        int x = order[i], f = g->fid[x];
        /* a member is free while it sits in its fragment's first nfree slots */
        int pos = -1;
        for (int p = g->start[f]; p < g->start[f] + g->nfree[f]; p++)
            if (g->mem[p] == x) {
                pos = p;
                break;
            }
        if (pos < 0)
            continue;
        int off = (int)ts_rng_below(&I->rng, (uint64_t)g->nfrag), h = -1;
        for (int t = 0; t < g->nfrag && h < 0; t++) {
            int c = (off + t) % g->nfrag;
            if (c != f && g->nfree[c] > 0 && !is_apart(g, f, c))
                h = c;
        }
        if (h < 0)
            continue;
        int q = g->start[h] + (int)ts_rng_below(&I->rng, (uint64_t)g->nfree[h]);
        int u = g->mem[q];
        set_apart(g, f, h);
        out[np].a = x;
        out[np].b = u;
        np++;
        /* take both out of their fragments' free slots */
        int lf = g->start[f] + --g->nfree[f];
        g->mem[pos] = g->mem[lf];
        g->mem[lf] = x;
        int lh = g->start[h] + --g->nfree[h];
        g->mem[q] = g->mem[lh];
        g->mem[lh] = u;
    }
    return np;
}

/* Leaf groups: fragments meet until every pair of fragments is known apart. */
static int find_groups(irr *I, groups *g)
{
    int rc = TS_OK;
    int *order = malloc(sizeof(int) * (size_t)I->nlive);
    size_t stride = (size_t)I->nlive / 2 + 1;
    ts_pair *pairs = malloc(sizeof *pairs * stride * GROUP_BATCH);
    ts_pair_stats *st = malloc(sizeof *st * stride);
    double *tmp = NULL;
    if (!order || !pairs || !st)
        rc = TS_ENOMEM;
    if (rc == TS_OK)
        memcpy(order, I->live, sizeof(int) * (size_t)I->nlive);
    memset(g, 0, sizeof *g);
    for (int step = 0; rc == TS_OK && step <= 2 * I->nlive; step++) {
        double cut = INFINITY, unsure = INFINITY;
        if (I->nm > 0) {
            free(tmp);
            tmp = malloc(sizeof(double) * (size_t)I->nm);
            if (!tmp) {
                rc = TS_ENOMEM;
                break;
            }
            memcpy(tmp, I->md, sizeof(double) * (size_t)I->nm);
            cut = ts_irr_same_leaf_cut(tmp, I->nm, SAME_LEAF_REL, &unsure);
        }
            groups_free(g);
        if ((rc = groups_build(I, g, cut, unsure)) != TS_OK)
            break;
        int np[GROUP_BATCH] = {0}, nb = 0;
        for (int b = 0; b < GROUP_BATCH; b++) {
            np[b] = plan_group_round(I, g, order, pairs + (size_t)b * stride);
            if (np[b] == 0)
                break;
            nb++;
        }
        if (nb == 0)
            break;
        rc = ts_probe_control(I->e, I->err);
        for (int b = 0; b < nb && rc == TS_OK; b++) {
            rc = ts_probe_round_rule(I->e, pairs + (size_t)b * stride, np[b], I->rule, st, I->err);
            if (rc == TS_OK)
                rc = store(I, st, np[b]);
        }
    }
    free(tmp);
    free(order);
    free(pairs);
    free(st);
    return rc;
}

/* The tree of the groups from their representatives' matrix, with every group's nodes hung
 * from its leaf switch. A tree vertex's parent may have a higher index (edges get split), so
 * vertices are copied parents first. */
static int build_tree(const groups *g, const ts_utree *rt, double pendant, double tol,
                      ts_utree *out)
{
    int nv = rt->nvert, rc = TS_OK;
    int *map = malloc(sizeof(int) * (size_t)nv), *queue = malloc(sizeof(int) * (size_t)nv);
    int *kstart = calloc((size_t)nv + 1, sizeof(int)), *kids = malloc(sizeof(int) * (size_t)nv);
    if (!map || !queue || !kstart || !kids) {
        rc = TS_ENOMEM;
        goto out;
    }
    int root = -1;
    for (int v = 0; v < nv; v++) {
        if (rt->parent[v] == TS_NONE)
            root = v;
        else
            kstart[rt->parent[v] + 1]++;
    }
    for (int v = 0; v < nv; v++)
        kstart[v + 1] += kstart[v];
    memcpy(map, kstart, sizeof(int) * (size_t)nv);
    for (int v = 0; v < nv; v++)
        if (rt->parent[v] != TS_NONE)
            kids[map[rt->parent[v]]++] = v;
    int qh = 0, qt = 0;
    queue[qt++] = root;
    while (qh < qt && rc == TS_OK) {
        int v = queue[qh++], p = rt->parent[v] == TS_NONE ? TS_NONE : map[rt->parent[v]];
        double len = rt->parent[v] == TS_NONE ? 0 : rt->len[v];
        int k = rt->node[v];
        if (k == TS_NONE) {
            map[v] = ts_utree_add(out, p, len, TS_NONE);
        } else if (g->start[k + 1] - g->start[k] == 1) {
            map[v] = ts_utree_add(out, p, len, g->mem[g->start[k]]);
        } else {
            /* the representative's edge ends at its leaf switch, a pendant above the nodes;
             * when nothing is left above the pendant, the group's switch is the one the
             * representative hangs from (a switch with nodes and switches below it) */
            double up = len > pendant ? len - pendant : 0;
            map[v] = up < tol || p == TS_NONE ? p : ts_utree_add(out, p, up, TS_NONE);
            if (map[v] == TS_NONE)
                map[v] = ts_utree_add(out, TS_NONE, 0, TS_NONE);
            for (int q = g->start[k]; q < g->start[k + 1] && map[v] >= 0; q++)
                if (ts_utree_add(out, map[v], map[v] == p ? len : len - up, g->mem[q]) < 0)
                    rc = TS_ENOMEM;
        }
        if (map[v] < 0)
            rc = TS_ENOMEM;
        for (int c = kstart[v]; c < kstart[v + 1]; c++)
            queue[qt++] = kids[c];
    }
out:
    free(map);
    free(queue);
    free(kstart);
    free(kids);
    return rc;
}

int ts_irr_discover(ts_probe_engine *e, const ts_stop_rule *rule, const unsigned char *live,
                    ts_utree *tree, int *replaced, ts_error *err)
{
    *replaced = 0;
    irr I;
    memset(&I, 0, sizeof I);
    I.e = e;
    I.rule = rule;
    I.err = err;
    I.n = e->tp->nnodes;
    ts_rng_seed_stream(&I.rng, ((uint64_t)I.n * 0x9e3779b97f4a7c15ULL) ^ (e->plan_seed * 0xbf58476d1ce4e5b9ULL),
                       0x1aeeu);
    I.live = malloc(sizeof(int) * (size_t)I.n);
    I.uf = malloc(sizeof(int) * (size_t)I.n);
    groups g;
    memset(&g, 0, sizeof g);
    ts_distmat dm = {0, NULL, NULL};
    ts_utree rt, out;
    ts_utree_init(&rt);
    ts_utree_init(&out);
    ts_infer_report rep;
    memset(&rep, 0, sizeof rep);
    int rc = I.live && I.uf ? TS_OK : TS_ENOMEM;
    for (int i = 0; rc == TS_OK && i < I.n; i++)
        if (live[i])
            I.live[I.nlive++] = i;
    if (rc == TS_OK && I.nlive < 2)
        goto out;   /* nothing to improve on */
    /* what fast measured is evidence for the grouping too: a same-leaf pair is never
     * inflated, and any pair above the cut keeps its fragments apart. Pairs taken with fewer
     * samples than this rule's (fast's top region takes two) sit in the jitter's tail more
     * often, so they only join: they are kept when below the cut the others give. */
    for (int pass = 0; pass < 2 && rc == TS_OK; pass++) {
        double cut = INFINITY;
        if (pass == 1 && I.nm > 0) {
            double *tmp = malloc(sizeof(double) * (size_t)I.nm);
            if (!tmp) {
                rc = TS_ENOMEM;
                break;
            }
            memcpy(tmp, I.md, sizeof(double) * (size_t)I.nm);
            cut = ts_irr_same_leaf_cut(tmp, I.nm, SAME_LEAF_REL, NULL);
            free(tmp);
        }
        for (long i = 0; rc == TS_OK && i < ts_probe_npairs(e); i++) {
            const ts_pair_stats *st = ts_probe_pair_at(e, i);
            if (st->samples == 0 || !live[st->a] || !live[st->b])
                continue;
            int full = st->samples >= rule->min_samples;
            if (pass == 0 ? full : !full && irr_estimate(st, rule) < cut)
                rc = store(&I, st, 1);
        }
    }
    if (rc == TS_OK)
        rc = find_groups(&I, &g);
    if (rc != TS_OK)
        goto out;
    /* fragments of a finished grouping are the leaf groups; their first members represent
     * them, and half the median same-leaf RTT is the pendant of a node below its leaf switch */
    int L = g.nfrag;
    if (L < 2)
        goto out;   /* one leaf group: the RTTs show nothing fast's tree does not */
    double pendant = NAN;
    {
        double *same = malloc(sizeof(double) * (size_t)(I.nm + 1));
        long ns = 0;
        if (!same) {
            rc = TS_ENOMEM;
            goto out;
        }
        for (long k = 0; k < I.nm; k++)
            if (g.fid[I.ma[k]] == g.fid[I.mb[k]])
                same[ns++] = I.md[k];
        pendant = ns > 0 ? 0.5 * ts_median(same, (int)ns) : 0;
        free(same);
    }
    /* The matrix costs one round per pair of groups, each about rule->max_samples round trips
     * of up to twice the same-leaf RTT. Under a budget it must leave at least as much time
     * again for what follows (the link stage): when it cannot, fast's tree stays. */
    double est_us = 0.5 * L * (L - 1.0) * rule->max_samples * 4.0 * pendant;
    if (!(est_us <= 0.5 * ts_probe_remaining_us(e)))
        goto out;
    dm.n = L;
    dm.d = malloc(sizeof(double) * (size_t)L * (size_t)L);
    if (!dm.d) {
        rc = TS_ENOMEM;
        goto out;
    }
    for (size_t i = 0; i < (size_t)L * (size_t)L; i++)
        dm.d[i] = NAN;
    for (int k = 0; k < L; k++)
        dm.d[(size_t)k * L + k] = 0;
    rc = ts_probe_control(e, err);
    for (int a = 0; a < L && rc == TS_OK; a++)
        for (int b = a + 1; b < L && rc == TS_OK; b++) {
            ts_pair p = {g.mem[g.start[a]], g.mem[g.start[b]]};
            ts_pair_stats st;
            rc = ts_probe_round_rule(e, &p, 1, rule, &st, err);
            if (rc == TS_OK && st.samples > 0)
                dm.d[(size_t)a * L + b] = dm.d[(size_t)b * L + a] = irr_estimate(&st, rule);
        }
    if (rc != TS_OK)
        goto out;
    /* no confidence intervals: they describe the mean of the samples, not their minimum, and
     * would widen the contraction tolerance past a level step; the inference then takes the
     * noise from the quartets of the matrix itself */
    rc = ts_infer_matrix(&dm, 0, &rt, &rep, err);
    if (rc == TS_OK)
        rc = build_tree(&g, &rt, pendant, rep.tol_us, &out);
    if (rc == TS_OK) {
        ts_utree_free(tree);
        *tree = out;
        ts_utree_init(&out);
        *replaced = 1;
    }
out:
    ts_infer_report_free(&rep);
    ts_utree_free(&rt);
    ts_utree_free(&out);
    free(dm.d);
    groups_free(&g);
    free(I.live);
    free(I.uf);
    free(I.ma);
    free(I.mb);
    free(I.md);
    return rc;
}
