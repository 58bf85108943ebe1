/* toposcope — the fast method: top-down splitting of the fabric into subtrees, every subtree
 * measured only from inside, all subtrees of one depth in the same rounds.
 *
 * Why top-down: concurrent pairs that share a link inflate each other's RTT, and the
 * inflation only ever adds. A pair inside a subtree uses only links of that subtree, so
 * subtrees being split side by side never disturb each other, and inside one subtree the
 * pairs that cross its top switch (different children) are both the longest and the most
 * inflated, while pairs within one child stay short. So in every region the pairs fall into
 * "same child" (below a gap) and "different child" (above it); union-find over the short pairs
 * gives the children, and a child pair measured above the gap is known to be separate. Pairs
 * are only planned between clusters not yet known to be separate, so a region of c children
 * finishes in about c rounds, and the whole tree in about (sum of fan-outs along a path)
 * rounds, each with every node busy.
 *
 * The gap: the highest gap in the sorted RTT minima of a region that is wider than
 * GAP_FRACTION of the region's smallest RTT and whose partition is consistent (no pair above
 * it inside one cluster). When there is no such gap every node is its own child (a star). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "toposcope/discover.h"
#include "method.h"
#include "toposcope/rng.h"

#define GAP_FRACTION 0.08   /* a level step is >= ~15% of the same-switch RTT in both profiles */
#define GAP_TRIES 8         /* candidate gaps examined from the top down */

typedef struct meas {
    int a, b;
    double d;
} meas;

typedef struct region {
    int vert;               /* the switch vertex of this subtree in the output tree */
    int rounds;
    int done;
    double thr;             /* current gap threshold, -INF = star */
} region;

typedef struct fast {
    ts_probe_engine *e;
    ts_utree *t;
    ts_error *err;
    ts_rng rng;
    int n;
    int *reg;               /* node -> region, -1 when placed or unreachable */
    unsigned char *dead;
    int nreg, capreg;
    region *R;
    meas *M;                /* measurements of the current regions */
    long nm, capm;
    int *uf;                /* union-find over nodes */
    int *count;             /* answered pairs per node */
    ts_stop_rule rule;
    double min_gap;         /* smallest gap accepted anywhere, for the report */
} fast;

static int uf_find(int *uf, int x)
{
    while (uf[x] != x) {
        uf[x] = uf[uf[x]];
        x = uf[x];
    }
    return x;
}

static void uf_union(int *uf, int a, int b)
{
    a = uf_find(uf, a);
    b = uf_find(uf, b);
    if (a != b)
        uf[a < b ? b : a] = a < b ? a : b;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Clusters of one region under threshold thr into F->uf; returns 0 when a pair above thr
 * ends up inside one cluster. */
static int cluster_region(fast *F, const int *mem, int nmem, const long *mi, long nmi, double thr)
{
    for (int i = 0; i < nmem; i++)
        F->uf[mem[i]] = mem[i];
    for (long k = 0; k < nmi; k++)
        if (F->M[mi[k]].d < thr)
            uf_union(F->uf, F->M[mi[k]].a, F->M[mi[k]].b);
    for (long k = 0; k < nmi; k++)
        if (F->M[mi[k]].d >= thr &&
            uf_find(F->uf, F->M[mi[k]].a) == uf_find(F->uf, F->M[mi[k]].b))
            return 0;
    return 1;
}

/* Pick the region's threshold (see the header) and leave its clusters in F->uf. */
static int choose_threshold(fast *F, region *r, const int *mem, int nmem, const long *mi, long nmi)
{
    double *v = malloc(sizeof *v * (size_t)(nmi > 0 ? nmi : 1));
    if (!v)
        return TS_ENOMEM;
    for (long k = 0; k < nmi; k++)
        v[k] = F->M[mi[k]].d;
    qsort(v, (size_t)nmi, sizeof *v, cmp_double);
    r->thr = -INFINITY;
    int tries = 0;
    for (long i = nmi - 2; i >= 0 && tries < GAP_TRIES; i--) {
        double gap = v[i + 1] - v[i];
        if (!(gap > GAP_FRACTION * v[0]))
            continue;
        tries++;
        double thr = 0.5 * (v[i] + v[i + 1]);
        if (cluster_region(F, mem, nmem, mi, nmi, thr)) {
            r->thr = thr;
            if (gap < F->min_gap)
                F->min_gap = gap;
            break;
        }
    }
    free(v);
    if (r->thr == -INFINITY)
        cluster_region(F, mem, nmem, mi, nmi, -INFINITY);
    return TS_OK;
}

/* Plans one region's pairs for the next round: members of clusters not yet known to be
 * separate meet. Returns the number of pairs added, 0 when the region is resolved. */
static int plan_region(fast *F, const int *mem, int nmem, const long *mi, long nmi, ts_pair *out,
                       int *scratch)
{
    /* clusters: root -> dense id; members listed per cluster */
    int *cid = scratch, *start = scratch + F->n, *list = start + nmem + 1, *fill = list + nmem;
    int k = 0;
    for (int i = 0; i < nmem; i++)
        cid[mem[i]] = -1;
    for (int i = 0; i < nmem; i++) {
        int rt = uf_find(F->uf, mem[i]);
        if (cid[rt] < 0)
            cid[rt] = k++;
    }
    if (k < 2)
        return 0;
    memset(start, 0, sizeof(int) * (size_t)(k + 1));
    for (int i = 0; i < nmem; i++)
        start[cid[uf_find(F->uf, mem[i])] + 1]++;
    for (int c = 0; c < k; c++)
        start[c + 1] += start[c];
    memcpy(fill, start, sizeof(int) * (size_t)k);
    for (int i = 0; i < nmem; i++)
        list[fill[cid[uf_find(F->uf, mem[i])]]++] = mem[i];
    /* shuffle members inside clusters so repeated tests use other nodes */
    for (int c = 0; c < k; c++)
        for (int i = start[c + 1] - 1; i > start[c]; i--) {
            int j = start[c] + (int)ts_rng_below(&F->rng, (uint64_t)(i - start[c] + 1));
            int tmp = list[i];
            list[i] = list[j];
            list[j] = tmp;
        }
    unsigned char *sep = calloc((size_t)k * (size_t)k, 1);
    if (!sep)
        return -1;
    for (long q = 0; q < nmi; q++) {
        int x = cid[uf_find(F->uf, F->M[mi[q]].a)], y = cid[uf_find(F->uf, F->M[mi[q]].b)];
        if (x != y)
            sep[(size_t)x * k + y] = sep[(size_t)y * k + x] = 1;
    }
    int np = 0;
    memcpy(fill, start, sizeof(int) * (size_t)k);   /* next free member per cluster */
    int off = (int)ts_rng_below(&F->rng, (uint64_t)k);
    for (int ai = 0; ai < k; ai++) {
        int a = (ai + off) % k;
        int boff = (int)ts_rng_below(&F->rng, (uint64_t)k);
        for (int bi = 0; bi < k && fill[a] < start[a + 1]; bi++) {
            int b = (bi + boff) % k;
            if (b == a || sep[(size_t)a * k + b] || fill[b] >= start[b + 1])
                continue;
            out[np].a = list[fill[a]++];
            out[np].b = list[fill[b]++];
            sep[(size_t)a * k + b] = sep[(size_t)b * k + a] = 1;
            np++;
        }
    }
    free(sep);
    return np;
}

static int new_region(fast *F, int vert)
{
    if (F->nreg == F->capreg) {
        int cap = F->capreg ? 2 * F->capreg : 16;
        region *r = realloc(F->R, sizeof *r * (size_t)cap);
        if (!r)
            return -1;
        F->R = r;
        F->capreg = cap;
    }
    region *r = &F->R[F->nreg];
    memset(r, 0, sizeof *r);
    r->vert = vert;
    r->thr = -INFINITY;
    return F->nreg++;
}

/* A resolved region becomes a switch: single-node clusters hang from it, bigger clusters
 * become regions of the next depth under a new switch. */
static int emit_region(fast *F, int ri, const int *mem, int nmem, int *next_reg, int *scratch)
{
    int *newreg = scratch;
    for (int i = 0; i < nmem; i++)
        newreg[mem[i]] = -2;
    int *size = scratch + F->n;
    for (int i = 0; i < nmem; i++)
        size[mem[i]] = 0;
    for (int i = 0; i < nmem; i++)
        size[uf_find(F->uf, mem[i])]++;
    for (int i = 0; i < nmem; i++) {
        int x = mem[i], rt = uf_find(F->uf, x);
        if (F->count[x] == 0) {
            next_reg[x] = -1;   /* never measured (deadline): reported, not placed */
            continue;
        }
        double pend = F->R[ri].thr > 0 ? 0.5 * F->R[ri].thr : 1.0;
        if (size[rt] == 1) {
            if (ts_utree_add(F->t, F->R[ri].vert, pend, x) < 0)
                return TS_ENOMEM;
            next_reg[x] = -1;
            continue;
        }
        if (newreg[rt] == -2) {
            int v = ts_utree_add(F->t, F->R[ri].vert, 1.0, TS_NONE);
            if (v < 0)
                return TS_ENOMEM;
            int nr = new_region(F, v);
            if (nr < 0)
                return TS_ENOMEM;
            newreg[rt] = nr;
        }
        next_reg[x] = newreg[rt];
    }
    return TS_OK;
}

static int fast_run(fast *F)
{
    int n = F->n, rc = TS_OK;
    int *next_reg = malloc(sizeof(int) * (size_t)n);
    int *order = malloc(sizeof(int) * (size_t)n);       /* nodes grouped by region */
    int *rstart = NULL;
    long *mi = NULL, *mstart = NULL;
    int *scratch = malloc(sizeof(int) * (size_t)(4 * n + 4));
    ts_pair *pairs = malloc(sizeof *pairs * (size_t)(n / 2 + 1));
    ts_pair_stats *st = malloc(sizeof *st * (size_t)(n / 2 + 1));
    if (!next_reg || !order || !scratch || !pairs || !st) {
        rc = TS_ENOMEM;
        goto out;
    }
    int root = ts_utree_add(F->t, TS_NONE, 0, TS_NONE);
    if (root < 0 || new_region(F, root) < 0) {
        rc = TS_ENOMEM;
        goto out;
    }
    for (int i = 0; i < n; i++)
        F->reg[i] = 0;
    int first = 0;   /* regions [first, nreg) are the current depth */
    while (first < F->nreg && rc == TS_OK) {
        int last = F->nreg, nr = last - first;
        free(rstart);
        free(mstart);
        rstart = calloc((size_t)nr + 1, sizeof(int));
        mstart = calloc((size_t)nr + 1, sizeof(long));
        if (!rstart || !mstart) {
            rc = TS_ENOMEM;
            break;
        }
        F->nm = 0;
        int active = 1;
        while (active && rc == TS_OK) {
            /* group live nodes and this depth's measurements by region */
            memset(rstart, 0, sizeof(int) * (size_t)(nr + 1));
            for (int i = 0; i < n; i++)
                if (F->reg[i] >= first && !F->dead[i])
                    rstart[F->reg[i] - first + 1]++;
            for (int r = 0; r < nr; r++)
                rstart[r + 1] += rstart[r];
            memcpy(scratch, rstart, sizeof(int) * (size_t)nr);
            for (int i = 0; i < n; i++)
                if (F->reg[i] >= first && !F->dead[i])
                    order[scratch[F->reg[i] - first]++] = i;
            memset(mstart, 0, sizeof(long) * (size_t)(nr + 1));
            for (long k = 0; k < F->nm; k++)
                mstart[F->reg[F->M[k].a] - first + 1]++;
            for (int r = 0; r < nr; r++)
                mstart[r + 1] += mstart[r];
            free(mi);
            mi = malloc(sizeof(long) * (size_t)(F->nm + 1));
            long *mfill = malloc(sizeof(long) * (size_t)nr);
            if (!mi || !mfill) {
                free(mfill);
                rc = TS_ENOMEM;
                break;
            }
            memcpy(mfill, mstart, sizeof(long) * (size_t)nr);
            for (long k = 0; k < F->nm; k++)
                mi[mfill[F->reg[F->M[k].a] - first]++] = k;
            free(mfill);
            int np = 0;
            active = 0;
            for (int r = 0; r < nr && rc == TS_OK; r++) {
                region *R = &F->R[first + r];
                const int *mem = order + rstart[r];
                int nmem = rstart[r + 1] - rstart[r];
                if (R->done)
                    continue;
                rc = choose_threshold(F, R, mem, nmem, mi + mstart[r], mstart[r + 1] - mstart[r]);
                if (rc != TS_OK)
                    break;
                /* a region cannot need more rounds than it has nodes: a safety net against
                 * thresholds that keep moving */
                int got = R->rounds < nmem ? plan_region(F, mem, nmem, mi + mstart[r],
                                                         mstart[r + 1] - mstart[r], pairs + np,
                                                         scratch) : 0;
                if (got < 0) {
                    rc = TS_ENOMEM;
                    break;
                }
                if (got == 0)
                    R->done = 1;
                else
                    active = 1;
                R->rounds++;
                np += got;
            }
            if (rc != TS_OK || !active)
                break;
            rc = ts_probe_control(F->e, F->err);
            if (rc == TS_OK)
                rc = ts_probe_round_rule(F->e, pairs, np, &F->rule, st, F->err);
            if (rc != TS_OK)
                break;
            if (F->nm + np > F->capm) {
                long cap = F->capm ? F->capm * 2 : 4096;
                while (cap < F->nm + np)
                    cap *= 2;
                meas *m = realloc(F->M, sizeof *m * (size_t)cap);
                if (!m) {
                    rc = TS_ENOMEM;
                    break;
                }
                F->M = m;
                F->capm = cap;
            }
            for (int i = 0; i < np; i++) {
                if (st[i].samples == 0) {
                    /* a node that never answered anyone is left out of the tree */
                    if (st[i].flags & TS_PAIR_UNREACHABLE) {
                        if (F->count[st[i].a] == 0)
                            F->dead[st[i].a] = 1;
                        if (F->count[st[i].b] == 0)
                            F->dead[st[i].b] = 1;
                    }
                    continue;
                }
                F->count[st[i].a]++;
                F->count[st[i].b]++;
                /* the minimum: jitter and outliers only add, as inflation does */
                F->M[F->nm].a = st[i].a;
                F->M[F->nm].b = st[i].b;
                F->M[F->nm++].d = st[i].min_us;
            }
        }
        if (rc == TS_ELIMIT || rc == TS_OK) {
            /* emit every region of this depth with the clusters it has (on a deadline this
             * is the best partition so far and the walk stops) */
            int limit = rc == TS_ELIMIT;
            int *rs = rstart;
            for (int r = 0; r < nr && (rc == TS_OK || rc == TS_ELIMIT); r++) {
                const int *mem = order + rs[r];
                int nmem = rs[r + 1] - rs[r];
                if (nmem == 0)
                    continue;
                int e2 = emit_region(F, first + r, mem, nmem, next_reg, scratch);
                if (e2 != TS_OK)
                    rc = e2;
            }
            if (rc != TS_OK && rc != TS_ELIMIT)
                break;
            for (int i = 0; i < n; i++)
                if (F->reg[i] >= first && !F->dead[i])
                    F->reg[i] = next_reg[i];
            if (limit) {
                /* nodes of unresolved subtrees hang from their subtree's switch */
                for (int i = 0; i < n; i++)
                    if (F->reg[i] >= last && !F->dead[i] && F->count[i] > 0 &&
                        ts_utree_add(F->t, F->R[F->reg[i]].vert, 1.0, i) < 0)
                        rc = TS_ENOMEM;
                break;
            }
        }
        first = last;
    }
out:
    free(next_reg);
    free(order);
    free(rstart);
    free(mstart);
    free(mi);
    free(scratch);
    free(pairs);
    free(st);
    return rc;
}

int ts_discover_fast(ts_probe_engine *e, ts_utree *tree, ts_infer_report *rep, ts_error *err)
{
    int rc0 = ts_method_begin("the fast method", e, tree, rep, err);
    if (rc0 != TS_OK)
        return rc0;
    int n = e->tp->nnodes;
    fast F;
    memset(&F, 0, sizeof F);
    F.e = e;
    F.t = tree;
    F.err = err;
    F.n = n;
    F.min_gap = INFINITY;
    ts_rng_seed_stream(&F.rng, (uint64_t)n * 0x9e3779b97f4a7c15ULL, 0xfa57u);
    /* three samples and their minimum: the decisions compare levels ~10x the jitter apart */
    F.rule = e->rule;
    F.rule.min_samples = 3;
    F.rule.max_samples = 3;
    F.reg = malloc(sizeof(int) * (size_t)n);
    F.uf = malloc(sizeof(int) * (size_t)n);
    F.dead = calloc((size_t)n, 1);
    F.count = calloc((size_t)n, sizeof(int));
    int rc = F.reg && F.uf && F.dead && F.count ? TS_OK : TS_ENOMEM;
    if (rc == TS_OK)
        rc = fast_run(&F);
    if (rc == TS_ELIMIT) {
        e->partial = 1;
        rc = TS_OK;
    }
    if (rc == TS_OK) {
        int nun = 0;
        for (int i = 0; i < n; i++)
            nun += F.dead[i] || F.count[i] == 0;
        if (nun > 0) {
            rep->unmeasured = malloc(sizeof(int) * (size_t)nun);
            if (!rep->unmeasured)
                rc = TS_ENOMEM;
            else
                for (int i = 0; i < n; i++)
                    if (F.dead[i] || F.count[i] == 0)
                        rep->unmeasured[rep->nunmeasured++] = i;
        }
        rep->tol_us = isfinite(F.min_gap) ? F.min_gap : 0;
        rep->reference = 0;
    }
    if (rc == TS_ENOMEM)
        rc = ts_fail(err, TS_ENOMEM, "out of memory for %d nodes", n);
    free(F.reg);
    free(F.uf);
    free(F.dead);
    free(F.count);
    free(F.R);
    free(F.M);
    if (rc != TS_OK) {
        ts_utree_free(tree);
        ts_infer_report_free(rep);
    }
    return rc;
}
