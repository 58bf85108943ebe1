/* toposcope — method dispatch and the all-pairs baseline (Bufe 2014 §2.3.2). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "toposcope/discover.h"
#include "toposcope/fast.h"
#include "toposcope/shirai.h"
#include "method.h"

static const char *const method_names[] = {"fast", "allpairs", "shirai"};

int ts_method_parse(const char *name, ts_method *out)
{
    for (int i = 0; i < (int)(sizeof method_names / sizeof *method_names); i++)
        if (strcmp(name, method_names[i]) == 0) {
            *out = (ts_method)i;
            return TS_OK;
        }
    return TS_EINPUT;
}

const char *ts_method_name(ts_method m)
{
    return (unsigned)m < sizeof method_names / sizeof *method_names ? method_names[m] : "?";
}

/* An empty tree and report, whatever the caller's memory held. */
static void start_outputs(ts_utree *tree, ts_infer_report *rep)
{
    ts_utree_init(tree);
    memset(rep, 0, sizeof *rep);
    rep->reference = TS_NONE;
}

int ts_method_begin(const char *method, ts_probe_engine *e, ts_utree *tree, ts_infer_report *rep,
                    ts_error *err)
{
    start_outputs(tree, rep);
    if (e->tp->nnodes < 2)
        return ts_fail(err, TS_EINPUT, "%s needs at least 2 nodes (got %d)", method, e->tp->nnodes);
    return TS_OK;
}

ts_stop_rule ts_method_rule(const ts_probe_engine *e, ts_estimator own)
{
    ts_stop_rule r = e->rule;
    r.estimator = e->estimator == TS_ESTIMATE_DEFAULT ? own : e->estimator;
    int k = e->samples_first;
    if (k <= 0 && r.estimator == TS_ESTIMATE_MIN)
        k = r.min_samples;
    if (k > 0) {
        r.min_samples = r.max_samples = k > TS_SAMPLES_MAX ? TS_SAMPLES_MAX : k;
    }
    return r;
}

int ts_allpairs_schedule(int n, ts_pair **pairs_out, int **round_start_out, int *nrounds_out,
                         ts_error *err)
{
    *pairs_out = NULL;
    *round_start_out = NULL;
    *nrounds_out = 0;
    if (n < 2)
        return ts_fail(err, TS_EINPUT, "all-pairs needs at least 2 nodes (got %d)", n);
    long npairs = (long)n * (n - 1) / 2;
    /* rounds: T(n) = ceil(n/2) + T(ceil(n/2)), which is below n + log2(n) + 1 (each halving
     * rounds up by at most one); count them exactly for the allocation */
    int max_rounds = 0;
    for (int m = n; m >= 2; m = (m + 1) / 2)
        max_rounds += (m + 1) / 2;
    ts_pair *pairs = malloc(sizeof *pairs * (size_t)npairs);
    int *round_start = malloc(sizeof(int) * (size_t)(max_rounds + 2));
    /* blocks of the current level: [lo, hi) ranges over node indices */
    int *blo = malloc(sizeof(int) * (size_t)n), *bhi = malloc(sizeof(int) * (size_t)n);
    int *nlo = malloc(sizeof(int) * (size_t)n), *nhi = malloc(sizeof(int) * (size_t)n);
    if (!pairs || !round_start || !blo || !bhi || !nlo || !nhi) {
        free(pairs);
        free(round_start);
        free(blo);
        free(bhi);
        free(nlo);
        free(nhi);
        return ts_fail(err, TS_ENOMEM, "out of memory");
    }
    int nblocks = 1, rounds = 0;
    long k = 0;
    blo[0] = 0;
    bhi[0] = n;
    while (nblocks > 0) {
        /* Every block splits into halves L (ceil) and R (floor); in shift s, L[i] meets
         * R[(i + s) mod |L|]; all blocks of a level run their shifts side by side. */
        int level_rounds = 0;
        for (int b = 0; b < nblocks; b++) {
            int size = bhi[b] - blo[b], half = (size + 1) / 2;
            if (size >= 2 && half > level_rounds)
                level_rounds = half;
        }
        for (int s = 0; s < level_rounds; s++) {
            round_start[rounds++] = (int)k;
            for (int b = 0; b < nblocks; b++) {
                int size = bhi[b] - blo[b], nl = (size + 1) / 2, nr = size / 2;
                if (size < 2 || s >= nl)
                    continue;
                for (int i = 0; i < nl; i++) {
                    int j = (i + s) % nl;
                    if (j < nr) {
                        pairs[k].a = blo[b] + i;
                        pairs[k].b = blo[b] + nl + j;
                        k++;
                    }
                }
            }
        }
        int nn = 0;
        for (int b = 0; b < nblocks; b++) {
            int size = bhi[b] - blo[b], nl = (size + 1) / 2;
            if (nl >= 2) {
                nlo[nn] = blo[b];
                nhi[nn++] = blo[b] + nl;
            }
            if (size - nl >= 2) {
                nlo[nn] = blo[b] + nl;
                nhi[nn++] = bhi[b];
            }
        }
        memcpy(blo, nlo, sizeof(int) * (size_t)nn);
        memcpy(bhi, nhi, sizeof(int) * (size_t)nn);
        nblocks = nn;
    }
    round_start[rounds] = (int)k;
    free(blo);
    free(bhi);
    free(nlo);
    free(nhi);
    *pairs_out = pairs;
    *round_start_out = round_start;
    *nrounds_out = rounds;
    return TS_OK;
}

/* A dense matrix of the engine's estimates (and their interval half-widths). */
static int matrix_from_engine(const ts_probe_engine *e, ts_distmat *dm, ts_error *err)
{
    int n = e->tp->nnodes;
    dm->n = n;
    dm->d = malloc(sizeof(double) * (size_t)n * n);
    dm->ci = malloc(sizeof(double) * (size_t)n * n);
    if (!dm->d || !dm->ci) {
        free(dm->d);
        free(dm->ci);
        return ts_fail(err, TS_ENOMEM, "out of memory for a %d x %d matrix", n, n);
    }
    for (size_t i = 0; i < (size_t)n * n; i++) {
        dm->d[i] = NAN;
        dm->ci[i] = INFINITY;
    }
    for (int i = 0; i < n; i++)
        dm->d[(size_t)i * n + i] = 0;
    for (long i = 0; i < ts_probe_npairs(e); i++) {
        const ts_pair_stats *s = ts_probe_pair_at(e, i);
        if (s->samples == 0)
            continue;
        dm->d[(size_t)s->a * n + s->b] = dm->d[(size_t)s->b * n + s->a] = s->est_us;
        dm->ci[(size_t)s->a * n + s->b] = dm->ci[(size_t)s->b * n + s->a] = s->ci_us;
    }
    return TS_OK;
}

/* ---- second opinions for splits that rest on one pair ----
 * A switch holding just two nodes a and b (or the edge that leaves just two on its far side) is
 * known from d(a,b) being short against d(a,s) and d(b,s) for the nodes s around it; every
 * quartet that shows the split holds that one d(a,b). One measurement shifted by a scheduling
 * hiccup on a node (the agents' round trips have such outliers, tens of standard errors on a
 * loaded machine) makes such a switch out of nothing, or hides a real one. So those few pairs
 * are measured SECOND_OPINIONS more times, in rounds of their own, each distance becomes the
 * median of its measurements, and the tree is inferred again. */
#define SECOND_OPINIONS 2
#define WEAK_NEIGHBOURS 4     /* nodes s whose pairs with a and b are measured again */

typedef struct pairlist {
    ts_pair *p;
    int n, cap;
} pairlist;

static int pairlist_add(pairlist *l, int a, int b)
{
    if (a == b)
        return TS_OK;
    for (int i = 0; i < l->n; i++)
        if ((l->p[i].a == a && l->p[i].b == b) || (l->p[i].a == b && l->p[i].b == a))
            return TS_OK;
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 32;
        ts_pair *q = realloc(l->p, sizeof *q * (size_t)cap);
        if (!q)
            return TS_ENOMEM;
        l->p = q;
        l->cap = cap;
    }
    l->p[l->n++] = (ts_pair){a, b};
    return TS_OK;
}

/* The pairs the tree's weak splits rest on: for each two-node side {a,b}, (a,b) and both with
 * up to WEAK_NEIGHBOURS nodes just across the split, one per neighbouring subtree. */
static int weak_split_pairs(const ts_utree *t, pairlist *out)
{
    int nv = t->nvert, rc = TS_OK;
    int *count = calloc((size_t)nv, sizeof(int)), *first = malloc(sizeof(int) * (size_t)nv);
    int *second = malloc(sizeof(int) * (size_t)nv), *order = malloc(sizeof(int) * (size_t)nv);
    if (!count || !first || !second || !order) {
        rc = TS_ENOMEM;
        goto done;
    }
    /* parents before children (the placement check may have moved a node under a later
     * vertex, so index order is not enough): roots first, then each level's children */
    int no = 0;
    for (int v = 0; v < nv; v++)
        if (t->parent[v] == TS_NONE)
            order[no++] = v;
    for (int h = 0; h < no; h++)
        for (int u = 0; u < nv; u++)
            if (t->parent[u] == order[h])
                order[no++] = u;
    for (int v = 0; v < nv; v++)
        first[v] = second[v] = TS_NONE;
    for (int h = no - 1; h >= 0; h--) {
        int v = order[h];
        if (t->node[v] != TS_NONE) {
            count[v]++;
            first[v] = t->node[v];
        }
        int p = t->parent[v];
        if (p == TS_NONE)
            continue;
        count[p] += count[v];
        int cand[2] = {first[v], second[v]};
        for (int k = 0; k < 2; k++) {
            if (cand[k] == TS_NONE)
                continue;
            if (first[p] == TS_NONE)
                first[p] = cand[k];
            else if (second[p] == TS_NONE)
                second[p] = cand[k];
        }
    }
    int total = 0;
    for (int v = 0; v < nv; v++)
        if (t->parent[v] == TS_NONE)
            total += count[v];
    if (total < 4)
        goto done;            /* no quartet: no split to check */
    for (int v = 0; v < nv && rc == TS_OK; v++) {
        int p = t->parent[v];
        if (t->node[v] != TS_NONE || p == TS_NONE)
            continue;
        if (count[v] == 2) {
            /* {a,b} under v; across the split, the other subtrees of v's parent */
            int a = first[v], b = second[v], taken = 0;
            rc = pairlist_add(out, a, b);
            for (int u = 0; u < nv && taken < WEAK_NEIGHBOURS && rc == TS_OK; u++) {
                if (t->parent[u] != p || u == v || first[u] == TS_NONE)
                    continue;
                if ((rc = pairlist_add(out, a, first[u])) == TS_OK)
                    rc = pairlist_add(out, b, first[u]);
                taken++;
            }
        } else if (total - count[v] == 2) {
            /* the two nodes outside v, against v's own subtrees */
            int pair[2], k = 0;
            for (int u = 0; u < nv && k < 2; u++) {
                if (t->node[u] == TS_NONE)
                    continue;
                int w = u;
                while (w != TS_NONE && w != v)
                    w = t->parent[w];
                if (w != v)
                    pair[k++] = t->node[u];
            }
            if (k < 2)
                continue;
            rc = pairlist_add(out, pair[0], pair[1]);
            int taken = 0;
            for (int u = 0; u < nv && taken < WEAK_NEIGHBOURS && rc == TS_OK; u++) {
                if (t->parent[u] != v || first[u] == TS_NONE)
                    continue;
                if ((rc = pairlist_add(out, pair[0], first[u])) == TS_OK)
                    rc = pairlist_add(out, pair[1], first[u]);
                taken++;
            }
        }
    }
done:
    free(count);
    free(first);
    free(second);
    free(order);
    return rc;
}

static double median3(double x, double y, double z)
{
    if (x > y) {
        double s = x;
        x = y;
        y = s;
    }
    if (y > z)
        y = z;
    return x > y ? x : y;
}

/* Measure the weak pairs again and put the median of each pair's measurements into dm.
 * Returns TS_OK also when the deadline cut it short: what was measured is used. */
static int second_opinions(ts_probe_engine *e, const ts_stop_rule *rule, ts_distmat *dm,
                           const pairlist *weak, ts_error *err)
{
    int n = dm->n, np = weak->n, rc = TS_OK;
    double *est = malloc(sizeof(double) * (size_t)np * SECOND_OPINIONS);
    double *ci = malloc(sizeof(double) * (size_t)np * SECOND_OPINIONS);
    ts_pair *round = malloc(sizeof *round * (size_t)(np ? np : 1));
    int *where = malloc(sizeof(int) * (size_t)(np ? np : 1));
    ts_pair_stats *st = malloc(sizeof *st * (size_t)(np ? np : 1));
    unsigned char *busy = calloc((size_t)n, 1);
    int *left = malloc(sizeof(int) * (size_t)(np ? np : 1));
    if (!est || !ci || !round || !where || !st || !busy || !left) {
        rc = ts_fail(err, TS_ENOMEM, "out of memory");
        goto done;
    }
    for (int i = 0; i < np * SECOND_OPINIONS; i++)
        est[i] = ci[i] = NAN;
    for (int k = 0; k < SECOND_OPINIONS && rc == TS_OK; k++) {
        /* rounds of disjoint pairs, greedily, until every weak pair had its k-th measurement */
        for (int i = 0; i < np; i++)
            left[i] = 1;
        int remaining = np;
        while (remaining > 0 && rc == TS_OK) {
            memset(busy, 0, (size_t)n);
            int m = 0;
            for (int i = 0; i < np; i++) {
                const ts_pair *q = &weak->p[i];
                if (!left[i] || busy[q->a] || busy[q->b])
                    continue;
                busy[q->a] = busy[q->b] = 1;
                left[i] = 0;
                where[m] = i;
                round[m++] = *q;
            }
            remaining -= m;
            rc = ts_probe_round_rule(e, round, m, rule, st, err);
            for (int j = 0; j < m && rc == TS_OK; j++)
                if (st[j].samples > 0) {
                    est[(size_t)where[j] * SECOND_OPINIONS + k] = st[j].est_us;
                    ci[(size_t)where[j] * SECOND_OPINIONS + k] = st[j].ci_us;
                }
        }
    }
    if (rc == TS_ELIMIT)
        rc = TS_OK;           /* out of time: the opinions gathered so far still count */
    for (int i = 0; i < np && rc == TS_OK; i++) {
        size_t ab = (size_t)weak->p[i].a * n + weak->p[i].b, ba = (size_t)weak->p[i].b * n + weak->p[i].a;
        double x = dm->d[ab], y = est[(size_t)i * SECOND_OPINIONS], z = est[(size_t)i * SECOND_OPINIONS + 1];
        double m;
        if (isfinite(x) && isfinite(y) && isfinite(z))
            m = median3(x, y, z);
        else if (isfinite(y) && isfinite(z))
            m = 0.5 * (y + z);
        else
            continue;         /* one or two measurements: no majority, keep the first */
        /* the interval of the measurement the median is, or the widest when averaged */
        double c = dm->ci[ab];
        if (m == y)
            c = ci[(size_t)i * SECOND_OPINIONS];
        else if (m == z)
            c = ci[(size_t)i * SECOND_OPINIONS + 1];
        else if (m != x)
            c = fmax(ci[(size_t)i * SECOND_OPINIONS], ci[(size_t)i * SECOND_OPINIONS + 1]);
        dm->d[ab] = dm->d[ba] = m;
        dm->ci[ab] = dm->ci[ba] = c;
    }
done:
    free(est);
    free(ci);
    free(round);
    free(where);
    free(st);
    free(busy);
    free(left);
    return rc;
}

int ts_discover_allpairs(ts_probe_engine *e, ts_utree *tree, ts_infer_report *rep, ts_error *err)
{
    ts_pair *pairs;
    int *round_start, nrounds;
    int rc = ts_method_begin("all-pairs", e, tree, rep, err);
    if (rc != TS_OK)
        return rc;
    rc = ts_allpairs_schedule(e->tp->nnodes, &pairs, &round_start, &nrounds, err);
    if (rc != TS_OK)
        return rc;
    /* Bufe's own estimate is the mean; --estimator min gives it fast's (the sampler then puts
     * the minimum into est_us and its spread into ci_us, which the inference reads) */
    ts_stop_rule rule = ts_method_rule(e, TS_ESTIMATE_MEAN);
    /* One phase: the whole schedule is known up front, the leader decides once at the end. */
    rc = ts_probe_control(e, err);
    for (int r = 0; r < nrounds && rc == TS_OK; r++)
        rc = ts_probe_round_rule(e, pairs + round_start[r], round_start[r + 1] - round_start[r], &rule,
                                 NULL, err);
    free(pairs);
    free(round_start);
    if (rc == TS_ELIMIT)
        rc = TS_OK;          /* out of time: infer from what was measured, flagged partial */
    if (rc == TS_OK && ts_probe_control(e, err) == TS_ELIMIT)
        e->partial = 1;
    if (rc != TS_OK)
        return rc;
    ts_distmat dm;
    rc = matrix_from_engine(e, &dm, err);
    if (rc != TS_OK)
        return rc;
    rc = ts_infer_matrix(&dm, 0, tree, rep, err);
    pairlist weak = {0};
    if (rc == TS_OK && !e->partial && (rc = weak_split_pairs(tree, &weak)) != TS_OK)
        rc = ts_fail(err, rc, "out of memory");
    if (rc == TS_OK && weak.n > 0) {
        /* every pair was measured once: a deadline during the second opinions leaves the
         * tree whole, so it does not make the run partial */
        int was_partial = e->partial;
        rc = second_opinions(e, &rule, &dm, &weak, err);
        e->partial = was_partial;
        if (rc == TS_OK) {
            ts_utree_free(tree);
            ts_infer_report_free(rep);
            memset(rep, 0, sizeof *rep);
            rep->reference = TS_NONE;
            ts_utree_init(tree);
            rc = ts_infer_matrix(&dm, 0, tree, rep, err);
            rep->rechecked = weak.n;
        }
    }
    free(weak.p);
    free(dm.d);
    free(dm.ci);
    return rc;
}

int ts_discover(ts_method m, ts_probe_engine *e, ts_utree *tree, ts_infer_report *rep,
                ts_error *err)
{
    start_outputs(tree, rep);      /* the methods do it again; an unknown method must too */
    switch (m) {
    case TS_METHOD_ALLPAIRS:
        return ts_discover_allpairs(e, tree, rep, err);
    case TS_METHOD_SHIRAI:
        return ts_discover_shirai(e, tree, rep, err);
    case TS_METHOD_FAST:
        return ts_discover_fast(e, tree, rep, err);
    }
    return ts_fail(err, TS_EINPUT, "unknown method %d", (int)m);
}
