/* toposcope — the Shirai baseline: tree inference by inserting hosts one after another
 * (Shirai, Saito, Taura, "A Fast Topology Inference", HPDC'07, seed 003), run through the
 * probe engine so it is measured in the same harness as the other methods.
 *
 * How the code maps to the paper
 *   infer() (Fig. 5)  shirai_run: the tree starts as the edge H0-H1 (one measurement), then
 *                     every other host is added in hostname order (the paper's linear list).
 *   add() (Fig. 5)    add_host: A is the close host found for H, B is taken from M (all hosts of
 *                     the tree), the point where segment AB branches towards H follows from the
 *                     three distances, x = (AH + AB - BH) / 2 from A.  We work in RTT units, so
 *                     this is the paper's equation (1) times two; AB is the distance on the tree
 *                     (the paper measures only AH and BH).  A point off every switch becomes a
 *                     new switch and H hangs from it; a point on an existing switch X prunes from
 *                     M the child trees of X holding A and holding B, and A becomes the closer of
 *                     A and B (§4, "A = either A or B": we take the closer).  When M runs empty
 *                     H hangs from X.  This is what bounds an insertion by p(d-1)+1
 *                     measurements (§3.3), O(N d) in all.
 *   measure() (Fig. 6) is the engine's sampler with Figure 6's sample counts: the paper runs
 *                     three rounds of 10..30 ping-pongs and keeps the minimum of each, so a pair
 *                     takes 30..90 samples; we sample a pair 30..90 times (the engine's stopping
 *                     rule decides within that range) and [est - w, est + w] plays the role of
 *                     the three minima's [min, max], w = INTERVAL_WIDEN * ci_us (see below).
 *                     The engine's default (3..32 samples) leaves a standard error near 0.7 us
 *                     on ethernet, too close to the 5 us a switch hop adds for hundreds of
 *                     branching decisions to come out right.
 *   min/max (§4)      branch_point: x gets an interval from the spread of AH and BH and from
 *                     how precisely A, B and the candidate switch were placed in the tree
 *                     (each vertex keeps the ci of its placement: AB and the switch positions
 *                     are themselves measured); if an existing switch of the path lies inside,
 *                     the nearest one is the branching point, else a new switch is made.
 *   close hosts (Fig. 8, §4)  search_run: before H is added it measures hosts of the tree and
 *                     keeps the closest as its first A; in add(), B is the closest
 *                     already-measured host of M when there is one ("does its best to choose
 *                     the host closest to H"), else the first of M (arbitrary).  The paper runs
 *                     H_i's search on T_{i-10}, concurrently with the insertions of
 *                     H_{i-9}..H_{i-1}; here every measurement is a round of one pair, because
 *                     pairs of one round that share a link slow each other down (the simulator's
 *                     flow penalty, real switches' queues) and this method does not know the
 *                     links yet.  Being sequential anyway, the search uses the current tree.
 *
 * Where we had to choose
 *   - Figure 8 drops K from the candidates when the tree distance y = d(J,K) is > 3x or < x/3
 *     (x = RTT(H,J)).  RTTs carry a host part (20 us on ethernet against 5 us per switch hop)
 *     that makes every ratio close to 1, so the test would never fire and the search would
 *     measure all of T: O(N^2).  We apply the ratios to switch-to-switch distances (pendant
 *     edges taken off; H's pendant is taken as the mean pendant of the tree), which is the
 *     paper's model of Fig. 1(b) with the host latency moved onto the host's edge, and cap a
 *     search at SEARCH_PROBES measurements so the total stays O(N d).
 *   - The paper's epsilon ("coincides with an existing branch") is the half-width of that
 *     interval: INTERVAL_WIDEN * sqrt(ci_AH^2 + ci_BH^2 + ci_A^2 + ci_B^2) / 2, with the
 *     candidate switch's ci added in quadrature.  ci_us is a 90% half-width (about 1.7
 *     standard errors at 30 samples); the factor 2.5 makes it about 4 standard errors,
 *     because a 128-node tree takes close to a thousand such decisions and one miss is a
 *     spurious switch.  Without the placement terms, errors of earlier placements (about
 *     0.6 us on ethernet) pushed points just outside the interval.  Exact distances (ci = 0)
 *     keep a floating-point floor.
 *   - Control steps: one before every round but the first, since every round's pairs depend
 *     on the previous round's measurements (in the paper the tree travels host to host; here
 *     the leader holds it).
 *   - Unreachable hosts: when H cannot be measured against A it is left out (unmeasured);
 *     a tree host B that does not answer is dropped from M.  If the first host fails against
 *     two others it is taken as dead and the next one starts the tree.
 *   - Deadline: when the engine refuses a round (TS_ELIMIT) the tree of the hosts inserted so
 *     far is returned and every other host is listed in rep->unmeasured. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "toposcope/discover.h"
#include "toposcope/shirai.h"
#include "method.h"

#define SEARCH_PROBES 4
#define INTERVAL_WIDEN 2.5
#define FIG6_MIN_SAMPLES 30   /* three rounds of at least ten ping-pongs */
#define FIG6_MAX_SAMPLES 90   /* three rounds of at most thirty */

typedef struct search {
    int host;                 /* TS_NONE when the slot is free */
    int ncand;
    unsigned char *cand;      /* per node: still a candidate */
    int used;                 /* measurements made */
    int best;                 /* closest host measured so far, TS_NONE if none */
    double best_d;
} search;

typedef struct shirai {
    ts_probe_engine *e;
    ts_utree *t;
    ts_error *err;
    ts_stop_rule rule;        /* the engine's, with Figure 6's sample counts */
    int n;
    int *vert;                /* node -> tree vertex, TS_NONE if not in the tree */
    int *ins, nins;           /* inserted nodes in insertion order */
    unsigned char *gone;      /* node settled as unmeasured */
    int *mark, gen;           /* per vertex: ancestor marks */
    double *up;               /* per vertex: distance to the marked start vertex */
    double *pci;              /* per vertex: uncertainty of its placement (a ci, RTT us) */
    unsigned char *inm;       /* per node: in M of the current insertion */
    int root_child;           /* the vertex under the root host (the root's pendant edge) */
    int rounds;
    double *halfw;            /* half-widths of the branching intervals, for rep->tol_us */
    int nhalfw, halfw_cap;
    search s;
} shirai;

/* ---- tree distances by parent walks (the tree is shallow; no recursion) ---- */

static void mark_ancestors(shirai *S, int v)
{
    if (++S->gen == INT32_MAX) {
        memset(S->mark, 0, sizeof(int) * (size_t)(2 * S->n + 2));
        S->gen = 1;
    }
    double d = 0;
    for (; v != TS_NONE; v = S->t->parent[v]) {
        S->mark[v] = S->gen;
        S->up[v] = d;
        d += S->t->len[v];
    }
}

/* Distance from v to the vertex last passed to mark_ancestors; *meet gets the meeting vertex. */
static double dist_to_marked(const shirai *S, int v, int *meet)
{
    double d = 0;
    while (S->mark[v] != S->gen) {
        d += S->t->len[v];
        v = S->t->parent[v];
    }
    if (meet)
        *meet = v;
    return d + S->up[v];
}

static double tree_dist(shirai *S, int u, int v)
{
    mark_ancestors(S, u);
    return dist_to_marked(S, v, NULL);
}

/* The neighbour of x through which v is reached: the child of x above v, or x's parent. */
static int direction(const shirai *S, int x, int v)
{
    int prev = v;
    for (int w = S->t->parent[v]; w != TS_NONE; w = S->t->parent[w]) {
        if (w == x)
            return prev;
        prev = w;
    }
    return S->t->parent[x];
}

/* The first host is the root of the utree: its pendant edge is the one below it. */
static double pendant(const shirai *S, int node)
{
    int v = S->vert[node];
    return S->t->parent[v] == TS_NONE ? S->t->len[S->root_child] : S->t->len[v];
}

/* ---- measurements ---- */

static double est_of(const shirai *S, int a, int b, double *ci)
{
    const ts_pair_stats *st = ts_probe_lookup(S->e, a, b);
    if (!st || st->samples == 0) {
        *ci = INFINITY;
        return NAN;
    }
    *ci = st->ci_us;
    return st->est_us;
}

static int measured(const shirai *S, int a, int b)
{
    const ts_pair_stats *st = ts_probe_lookup(S->e, a, b);
    return st && (st->samples > 0 || (st->flags & TS_PAIR_UNREACHABLE));
}

/* Figure 8's pruning after H measured x = RTT(H, J). */
static void search_learn(shirai *S, search *sr, int j, double x)
{
    if (sr->cand[j]) {
        sr->cand[j] = 0;
        sr->ncand--;
    }
    sr->used++;
    if (isnan(x))
        return;
    if (sr->best == TS_NONE || x < sr->best_d) {
        sr->best = j;
        sr->best_d = x;
    }
    double ci;
    est_of(S, sr->host, j, &ci);
    double slack = isfinite(ci) ? INTERVAL_WIDEN * ci : INFINITY;
    double pbar = 0;
    for (int i = 0; i < S->nins; i++)
        pbar += pendant(S, S->ins[i]) / S->nins;
    double xc = fmax(x - pendant(S, j) - pbar, 0);
    mark_ancestors(S, S->vert[j]);
    for (int k = 0; k < S->n; k++) {
        if (!sr->cand[k])
            continue;
        double yc = dist_to_marked(S, S->vert[k], NULL) - pendant(S, j) - pendant(S, k);
        if (yc > 3 * xc + slack || yc < xc / 3 - slack) {
            sr->cand[k] = 0;
            sr->ncand--;
        }
    }
}

static int search_done(const search *sr)
{
    return sr->ncand == 0 || sr->used >= SEARCH_PROBES;
}

/* One pair per round: a pair sharing a link with another pair of its round is slowed by the
 * other's traffic, and this method does not know the links yet. */
static int run_round(shirai *S, int a, int b)
{
    ts_pair p = {a, b};
    int rc = TS_OK;
    if (S->rounds > 0)
        rc = ts_probe_control(S->e, S->err);
    if (rc == TS_OK)
        rc = ts_probe_round_rule(S->e, &p, 1, &S->rule, NULL, S->err);
    if (rc == TS_OK)
        S->rounds++;
    return rc;
}

/* RTT(a, b) from the cache or from a new round; NAN when the pair does not answer. */
static int measure(shirai *S, int a, int b, double *d, double *ci)
{
    if (!measured(S, a, b)) {
        int rc = run_round(S, a, b);
        if (rc != TS_OK)
            return rc;
    }
    *d = est_of(S, a, b, ci);
    return TS_OK;
}

/* Figure 8's find_close_host for `host` over the hosts of the tree; *close gets the closest
 * host measured, TS_NONE if none answered. */
static int search_run(shirai *S, int host, int *close)
{
    search *sr = &S->s;
    sr->host = host;
    sr->used = 0;
    sr->best = TS_NONE;
    sr->best_d = INFINITY;
    memset(sr->cand, 0, (size_t)S->n);
    sr->ncand = S->nins;
    for (int k = 0; k < S->nins; k++)
        sr->cand[S->ins[k]] = 1;
    for (int i = 0; i < S->nins && !search_done(sr); i++) {
        int j = S->ins[i];
        if (!sr->cand[j])
            continue;
        double x, ci;
        int rc = measure(S, host, j, &x, &ci);
        if (rc != TS_OK)
            return rc;
        search_learn(S, sr, j, x);
    }
    *close = sr->best;
    return TS_OK;
}

/* ---- insertion (Fig. 5) ---- */

static int add_vertex(shirai *S, int parent, double len, int node, double ci)
{
    int v = ts_utree_add(S->t, parent, len, node);
    if (v < 0)
        return ts_fail(S->err, TS_ENOMEM, "out of memory");
    S->pci[v] = ci;
    if (node != TS_NONE) {
        S->vert[node] = v;
        S->ins[S->nins++] = node;
    }
    if (parent != TS_NONE && S->t->parent[parent] == TS_NONE)
        S->root_child = v;
    return v;
}

static int record_halfw(shirai *S, double h)
{
    if (S->nhalfw == S->halfw_cap) {
        int cap = S->halfw_cap ? 2 * S->halfw_cap : 256;
        double *p = realloc(S->halfw, sizeof *p * (size_t)cap);
        if (!p)
            return ts_fail(S->err, TS_ENOMEM, "out of memory");
        S->halfw = p;
        S->halfw_cap = cap;
    }
    S->halfw[S->nhalfw++] = h;
    return TS_OK;
}

/* Is switch v, at pos on the path, inside the interval of the branching point mid, and nearer
 * than the best so far? The interval adds v's own placement uncertainty. */
static int near_switch(const shirai *S, int v, double pos, double mid, double var, double floor_w,
                       double best)
{
    double w = var + S->pci[v] * S->pci[v];
    double half = isfinite(w) ? fmax(INTERVAL_WIDEN * sqrt(w), floor_w) : INFINITY;
    return fabs(pos - mid) <= half && fabs(pos - mid) < best;
}

/* Locate the branching point of A, B and H on the path A..B. Either *x_vertex is an existing
 * switch, or the point lies at distance *x from A, inside the edge above *edge_v at distance
 * *from_v from edge_v. */
static int branch_point(shirai *S, int a, int b, double ah, double ci_ah, double bh, double ci_bh,
                        int *x_vertex, double *x, double *x_ci, int *edge_v, double *from_v,
                        double *ab_out)
{
    int va = S->vert[a], vb = S->vert[b], lca;
    mark_ancestors(S, va);
    double ab = dist_to_marked(S, vb, &lca);
    *ab_out = ab;
    double mid = (ah + ab - bh) / 2;
    /* the point's own uncertainty: the two RTTs and the placements of A and B */
    double var = (ci_ah * ci_ah + ci_bh * ci_bh + S->pci[va] * S->pci[va] + S->pci[vb] * S->pci[vb]) / 4;
    *x_ci = sqrt(var);
    double floor_w = 1e-9 * ab + 1e-6;
    double half = isfinite(var) ? fmax(INTERVAL_WIDEN * sqrt(var), floor_w) : ab;
    if (record_halfw(S, half) != TS_OK)
        return TS_ENOMEM;
    *x = fmin(fmax(mid, 1e-6 * ab), ab * (1 - 1e-6));
    *x_vertex = TS_NONE;
    double best = INFINITY;
    /* switches on A's side: position from A is up[v]; on B's side: ab - (distance from B) */
    for (int v = S->t->parent[va]; v != TS_NONE; v = S->t->parent[v]) {
        double pos = S->up[v];
        if (S->t->node[v] == TS_NONE && near_switch(S, v, pos, mid, var, floor_w, best)) {
            best = fabs(pos - mid);
            *x_vertex = v;
        }
        if (v == lca)
            break;
    }
    double fromb = 0;
    for (int v = vb; v != lca; v = S->t->parent[v]) {
        if (v != vb) {
            double pos = ab - fromb;
            if (S->t->node[v] == TS_NONE && near_switch(S, v, pos, mid, var, floor_w, best)) {
                best = fabs(pos - mid);
                *x_vertex = v;
            }
        }
        fromb += S->t->len[v];
    }
    if (*x_vertex != TS_NONE)
        return TS_OK;
    /* the edge holding x */
    if (*x <= S->up[lca]) {
        int v = va;
        while (S->up[S->t->parent[v]] < *x)
            v = S->t->parent[v];
        *edge_v = v;
        *from_v = *x - S->up[v];
    } else {
        int v = vb;
        double from_b = 0;
        while (ab - (from_b + S->t->len[v]) > *x) {
            from_b += S->t->len[v];
            v = S->t->parent[v];
        }
        *edge_v = v;
        *from_v = (ab - from_b) - *x;
    }
    return TS_OK;
}

static int first_in_m(const shirai *S)
{
    for (int i = 0; i < S->nins; i++)
        if (S->inm[S->ins[i]])
            return S->ins[i];
    return TS_NONE;
}

/* "does its best to choose the host closest to H": a measured host of M, else the first. */
static int choose_b(const shirai *S, int h)
{
    int pick = TS_NONE;
    double best = INFINITY, ci;
    for (int i = 0; i < S->nins; i++) {
        int k = S->ins[i];
        if (!S->inm[k])
            continue;
        double d = est_of(S, h, k, &ci);
        if (!isnan(d) && d < best) {
            best = d;
            pick = k;
        }
    }
    return pick != TS_NONE ? pick : first_in_m(S);
}

static int add_host(shirai *S, int h, int close)
{
    int a = close != TS_NONE ? close : S->ins[0];
    double ah, ci_ah, bh, ci_bh;
    int rc = measure(S, h, a, &ah, &ci_ah);
    if (rc != TS_OK)
        return rc;
    if (isnan(ah)) {
        S->gone[h] = 1;
        return TS_OK;
    }
    int nm = 0;
    for (int i = 0; i < S->nins; i++) {
        S->inm[S->ins[i]] = S->ins[i] != a;
        nm += S->ins[i] != a;
    }
    int x_vertex = TS_NONE, last_b = TS_NONE;
    double last_bh = NAN, ab = 0, x = 0, x_ci = 0;
    while (nm > 0) {
        int b = choose_b(S, h);
        S->inm[b] = 0;
        nm--;
        if ((rc = measure(S, h, b, &bh, &ci_bh)) != TS_OK)
            return rc;
        if (isnan(bh))
            continue;
        int edge_v = TS_NONE;
        double from_v = 0;
        if ((rc = branch_point(S, a, b, ah, ci_ah, bh, ci_bh, &x_vertex, &x, &x_ci, &edge_v,
                               &from_v, &ab)) != TS_OK)
            return rc;
        if (x_vertex == TS_NONE) {
            int w = ts_utree_split_edge(S->t, edge_v, from_v);
            if (w < 0)
                return ts_fail(S->err, TS_ENOMEM, "out of memory");
            if (S->t->parent[S->t->parent[w]] == TS_NONE)
                S->root_child = w;
            S->pci[w] = x_ci;
            rc = add_vertex(S, w, fmax(ah - x, 1e-6), h, hypot(ci_ah, x_ci));
            return rc < 0 ? rc : TS_OK;
        }
        /* H is in neither child tree of X that holds A or B */
        int da = direction(S, x_vertex, S->vert[a]), db = direction(S, x_vertex, S->vert[b]);
        for (int i = 0; i < S->nins; i++) {
            int k = S->ins[i];
            if (!S->inm[k])
                continue;
            int dk = direction(S, x_vertex, S->vert[k]);
            if (dk == da || dk == db) {
                S->inm[k] = 0;
                nm--;
            }
        }
        last_b = b;
        last_bh = bh;
        if (bh < ah) {
            a = b;
            ah = bh;
            ci_ah = ci_bh;
        }
    }
    if (x_vertex == TS_NONE) {
        /* every B failed: hang H off A's switch by its measured distance */
        x_vertex = S->t->parent[S->vert[a]];
        if (x_vertex == TS_NONE)
            x_vertex = S->root_child;
        rc = add_vertex(S, x_vertex, fmax(ah - pendant(S, a), 1e-6), h, hypot(ci_ah, S->pci[S->vert[a]]));
        return rc < 0 ? rc : TS_OK;
    }
    double len = ah - tree_dist(S, S->vert[a], x_vertex);
    if (last_b != TS_NONE && last_b != a)
        len = 0.5 * (len + last_bh - tree_dist(S, S->vert[last_b], x_vertex));
    rc = add_vertex(S, x_vertex, fmax(len, 1e-6), h, hypot(ci_ah, S->pci[x_vertex]));
    return rc < 0 ? rc : TS_OK;
}

/* ---- the whole procedure (Fig. 5's infer, Fig. 8's pipeline) ---- */

static int start_tree(shirai *S, const int *order, int *next)
{
    int first = 0, second = 1, fails = 0;
    while (second < S->n) {
        double d, ci;
        int rc = measure(S, order[first], order[second], &d, &ci);
        if (rc != TS_OK)
            return rc;
        if (!isnan(d)) {
            int r = add_vertex(S, TS_NONE, 0, order[first], ci);
            if (r >= 0)
                r = add_vertex(S, r, d, order[second], ci);
            if (r < 0)
                return r;
            for (int i = 0; i < first; i++)
                S->gone[order[i]] = 1;
            *next = first + 1;
            return TS_OK;
        }
        if (++fails >= 2) {
            first++;
            second = first + 1;
            fails = 0;
        } else {
            second++;
        }
    }
    for (int i = 0; i < S->n; i++)
        S->gone[order[i]] = 1;
    *next = S->n;
    return TS_OK;
}

static int fill_report(shirai *S, ts_infer_report *rep)
{
    int nun = 0;
    for (int k = 0; k < S->n; k++)
        nun += S->vert[k] == TS_NONE;
    rep->nunmeasured = 0;
    rep->unmeasured = NULL;
    if (nun > 0) {
        rep->unmeasured = malloc(sizeof(int) * (size_t)nun);
        if (!rep->unmeasured)
            return ts_fail(S->err, TS_ENOMEM, "out of memory");
        for (int k = 0; k < S->n; k++)
            if (S->vert[k] == TS_NONE)
                rep->unmeasured[rep->nunmeasured++] = k;
    }
    rep->tol_us = S->nhalfw ? ts_median(S->halfw, S->nhalfw) : 0;
    rep->reference = S->nins ? S->ins[0] : TS_NONE;
    return TS_OK;
}

static int shirai_run(shirai *S)
{
    int n = S->n, next = 0;
    int *order = malloc(sizeof(int) * (size_t)n);
    if (!order)
        return ts_fail(S->err, TS_ENOMEM, "out of memory");
    for (int i = 0; i < n; i++)
        order[i] = i;
    int rc = start_tree(S, order, &next);
    /* the hosts still to add, in list order, skipping the two that started the tree */
    int *pending = malloc(sizeof(int) * (size_t)n), npending = 0;
    if (!pending) {
        free(order);
        return ts_fail(S->err, TS_ENOMEM, "out of memory");
    }
    for (int i = next; i < n; i++)
        if (S->vert[order[i]] == TS_NONE && !S->gone[order[i]])
            pending[npending++] = order[i];
    for (int k = 0; k < npending && rc == TS_OK; k++) {
        int close;
        rc = search_run(S, pending[k], &close);
        if (rc == TS_OK)
            rc = add_host(S, pending[k], close);
    }
    free(order);
    free(pending);
    return rc;
}

int ts_discover_shirai(ts_probe_engine *e, ts_utree *tree, ts_infer_report *rep, ts_error *err)
{
    int rc0 = ts_method_begin("shirai", e, tree, rep, err);
    if (rc0 != TS_OK)
        return rc0;
    int n = e->tp->nnodes;
    shirai S;
    memset(&S, 0, sizeof S);
    S.e = e;
    S.t = tree;
    S.err = err;
    S.n = n;
    S.rule = ts_method_rule(e, TS_ESTIMATE_MEAN);
    if (S.rule.estimator == TS_ESTIMATE_MEAN && e->samples_first <= 0) {
        /* the engine's stopping rule within Figure 6's sample counts; a count set by the
         * caller (toposcope sim --samples) or the minimum (--estimator min) replaces them */
        S.rule.min_samples = S.rule.min_samples > FIG6_MIN_SAMPLES ? S.rule.min_samples : FIG6_MIN_SAMPLES;
        S.rule.max_samples = S.rule.max_samples > FIG6_MAX_SAMPLES ? S.rule.max_samples : FIG6_MAX_SAMPLES;
        if (S.rule.max_samples > TS_SAMPLES_MAX)
            S.rule.max_samples = TS_SAMPLES_MAX;
    }
    int nv = 2 * n + 2;
    S.vert = malloc(sizeof(int) * (size_t)n);
    S.ins = malloc(sizeof(int) * (size_t)n);
    S.gone = calloc((size_t)n, 1);
    S.inm = calloc((size_t)n, 1);
    S.mark = calloc((size_t)nv, sizeof(int));
    S.up = calloc((size_t)nv, sizeof(double));
    S.pci = calloc((size_t)nv, sizeof(double));
    int rc = S.vert && S.ins && S.gone && S.inm && S.mark && S.up && S.pci ? TS_OK : TS_ENOMEM;
    S.s.cand = malloc((size_t)n);
    if (!S.s.cand)
        rc = TS_ENOMEM;
    if (rc != TS_OK) {
        rc = ts_fail(err, TS_ENOMEM, "out of memory for %d nodes", n);
    } else {
        for (int i = 0; i < n; i++)
            S.vert[i] = TS_NONE;
        rc = shirai_run(&S);
        if (rc == TS_ELIMIT) {
            e->partial = 1;   /* out of time: the tree of the hosts inserted so far */
            rc = TS_OK;
        }
        if (rc == TS_OK)
            rc = fill_report(&S, rep);
    }
    free(S.vert);
    free(S.ins);
    free(S.gone);
    free(S.inm);
    free(S.mark);
    free(S.up);
    free(S.pci);
    free(S.halfw);
    free(S.s.cand);
    if (rc != TS_OK) {
        ts_utree_free(tree);
        ts_infer_report_free(rep);
    }
    return rc;
}
