/* toposcope — per-link latency from measured node pairs: running a link plan on the probe
 * engine and the weighted least-squares solve.
 *
 * Every measured pair is one equation: its RTT estimate / 2 = the sum of the one-way latencies
 * of the identifiable links its path crosses (ts_link_set), with weight 1/se^2, se the standard
 * error of the pair's mean (its interval half-width over the Student quantile). The normal
 * equations are sparse: two links meet in a row only when one pair crosses both, and a plan on
 * a tree crosses every link in at most a few pairs per round. They are factored as L D L^T in a
 * minimum-degree order (exact degrees on the elimination graph), and the variance of every
 * estimate, the diagonal of the inverse, comes from Takahashi's recurrence on the same pattern,
 * so no dense n x n matrix is ever formed. A tiny ridge keeps the factorization defined when a
 * cut run leaves links undetermined; those are found by their huge variance and reported
 * without an estimate.
 *
 * A pair's interval speaks only of the spread of its own samples. A pair measured all through
 * a hiccup of one of its hosts (an agent descheduled for the whole pair, on a loaded machine)
 * is shifted as a whole, with an interval as narrow as any, and least squares would pass that
 * shift to every link on its path. So the solve is iteratively reweighted (Huber): a
 * measurement whose residual is more than HUBER_C robust standard deviations off keeps only
 * the share of its weight that puts it at HUBER_C. Where pairs are few per link the residuals
 * are small and nothing changes.
 *
 * The intervals must hold the links' true values, and an access link's value includes what its
 * node adds to a mean round trip, spikes included. A pair's inlier mean misses the spikes'
 * share, which one-sided noise never makes zero; each pair's full mean would carry its spikes'
 * noise. So the share is pooled over all pairs (pooled_tail) and added to every pair, its error
 * to every link through the links' response to that one shift (tail_response). Weights come from
 * each node's spread over all its pairs, not from the pair's own: on one-sided noise a pair's
 * low mean and low spread go together, and own-spread weights bias every link low
 * (initial_weights). doc/design.md, "Link intervals", has the numbers. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "toposcope/links.h"
#include "toposcope/linksolve.h"

#define HUBER_C 3.0          /* robust standard deviations before a residual loses weight */
#define ROBUST_ITERS 4       /* reweighting passes at most */

/* ---- sparse symmetric positive definite systems ---- */

typedef struct spd {
    int n;
    int *perm;               /* position -> variable */
    int *pos;                /* variable -> position */
    int *cstart, *cidx;      /* columns of L by position: rows ascending, all below the diagonal */
    double *cval;            /* the matrix entries, then L */
    double *d;               /* the diagonal, then D */
    double *zval, *zdiag;    /* the inverse on L's pattern */
    int *map;                /* scratch: row -> slot in the scattered column */
} spd;

static void spd_free(spd *S)
{
    free(S->perm);
    free(S->pos);
    free(S->cstart);
    free(S->cidx);
    free(S->cval);
    free(S->d);
    free(S->zval);
    free(S->zdiag);
    free(S->map);
    memset(S, 0, sizeof *S);
}

typedef struct ivec {
    int n, cap;
    int *v;
} ivec;

static int ivec_push(ivec *a, int x)
{
    if (a->n == a->cap) {
        int cap = a->cap ? 2 * a->cap : 8;
        int *v = realloc(a->v, sizeof(int) * (size_t)cap);
        if (!v)
            return TS_ENOMEM;
        a->v = v;
        a->cap = cap;
    }
    a->v[a->n++] = x;
    return TS_OK;
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Equations: rows of link ids (ascending), right-hand sides and weights. */
typedef struct eqs {
    int n;
    int *start;              /* n + 1 */
    int *idx;
    double *y, *w;
} eqs;

static void bucket_insert(int *head, int *nxt, int *prv, int *bdeg, int v, int d)
{
    bdeg[v] = d;
    prv[v] = -1;
    nxt[v] = head[d];
    if (head[d] >= 0)
        prv[head[d]] = v;
    head[d] = v;
}

static void bucket_remove(int *head, int *nxt, int *prv, int *bdeg, int v)
{
    if (prv[v] >= 0)
        nxt[prv[v]] = nxt[v];
    else
        head[bdeg[v]] = nxt[v];
    if (nxt[v] >= 0)
        prv[nxt[v]] = prv[v];
}

/* Minimum-degree order and L's pattern from the rows' co-occurrence graph. */
static int spd_symbolic(spd *S, int nvar, const eqs *E)
{
    int rc = TS_ENOMEM;
    S->n = nvar;
    long nkeys = 0;
    for (int e = 0; e < E->n; e++) {
        long len = E->start[e + 1] - E->start[e];
        nkeys += len * (len - 1) / 2;
    }
    int *head = NULL, *nxt = NULL, *prv = NULL, *bdeg = NULL;
    uint64_t *keys = malloc(sizeof(uint64_t) * (size_t)(nkeys ? nkeys : 1));
    ivec *adj = calloc((size_t)(nvar ? nvar : 1), sizeof(ivec));
    ivec *pat = calloc((size_t)(nvar ? nvar : 1), sizeof(ivec));
    int *mark = malloc(sizeof(int) * (size_t)(nvar ? nvar : 1));
    char *gone = calloc((size_t)(nvar ? nvar : 1), 1);
    S->perm = malloc(sizeof(int) * (size_t)(nvar ? nvar : 1));
    S->pos = malloc(sizeof(int) * (size_t)(nvar ? nvar : 1));
    S->cstart = malloc(sizeof(int) * (size_t)(nvar + 1));
    S->map = malloc(sizeof(int) * (size_t)(nvar ? nvar : 1));
    if (!keys || !adj || !pat || !mark || !gone || !S->perm || !S->pos || !S->cstart || !S->map)
        goto done;
    long k = 0;
    for (int e = 0; e < E->n; e++)
        for (int p = E->start[e]; p < E->start[e + 1]; p++)
            for (int q = p + 1; q < E->start[e + 1]; q++)
                keys[k++] = (uint64_t)(uint32_t)E->idx[p] << 32 | (uint32_t)E->idx[q];
    qsort(keys, (size_t)nkeys, sizeof *keys, cmp_u64);
    for (long i = 0; i < nkeys; i++) {
        if (i > 0 && keys[i] == keys[i - 1])
            continue;
        int a = (int)(keys[i] >> 32), b = (int)(keys[i] & 0xffffffffu);
        if (ivec_push(&adj[a], b) || ivec_push(&adj[b], a))
            goto done;
    }
    for (int i = 0; i < nvar; i++)
        mark[i] = -1;
    /* vertices in buckets by degree (doubly linked), so the minimum is found without a scan */
    head = malloc(sizeof(int) * (size_t)(nvar + 1));
    nxt = malloc(sizeof(int) * (size_t)(nvar ? nvar : 1));
    prv = malloc(sizeof(int) * (size_t)(nvar ? nvar : 1));
    bdeg = malloc(sizeof(int) * (size_t)(nvar ? nvar : 1));
    if (!head || !nxt || !prv || !bdeg)
        goto done;
    for (int d = 0; d <= nvar; d++)
        head[d] = -1;
    for (int i = 0; i < nvar; i++)
        bucket_insert(head, nxt, prv, bdeg, i, adj[i].n);
    int stamp = 0, mindeg = 0;
    for (int step = 0; step < nvar; step++) {
        while (head[mindeg] < 0)
            mindeg++;
        int v = head[mindeg];
        bucket_remove(head, nxt, prv, bdeg, v);
        gone[v] = 1;
        S->perm[step] = v;
        S->pos[v] = step;
        pat[v] = adj[v];                 /* the rows of v's column */
        adj[v].v = NULL;
        adj[v].n = adj[v].cap = 0;
        /* the neighbours become a clique; v leaves their lists */
        for (int x = 0; x < pat[v].n; x++) {
            int u = pat[v].v[x];
            ivec *au = &adj[u];
            int out = 0;
            stamp++;
            mark[u] = stamp;
            for (int y = 0; y < au->n; y++)
                if (au->v[y] != v) {
                    au->v[out++] = au->v[y];
                    mark[au->v[y]] = stamp;
                }
            au->n = out;
            for (int y = 0; y < pat[v].n; y++) {
                int w = pat[v].v[y];
                if (mark[w] != stamp) {
                    mark[w] = stamp;
                    if (ivec_push(au, w))
                        goto done;
                }
            }
            if (au->n != bdeg[u]) {
                bucket_remove(head, nxt, prv, bdeg, u);
                bucket_insert(head, nxt, prv, bdeg, u, au->n);
                if (au->n < mindeg)
                    mindeg = au->n;
            }
        }
    }
    S->cstart[0] = 0;
    for (int j = 0; j < nvar; j++)
        S->cstart[j + 1] = S->cstart[j] + pat[S->perm[j]].n;
    int nnz = S->cstart[nvar];
    S->cidx = malloc(sizeof(int) * (size_t)(nnz ? nnz : 1));
    S->cval = calloc((size_t)(nnz ? nnz : 1), sizeof(double));
    S->zval = calloc((size_t)(nnz ? nnz : 1), sizeof(double));
    S->d = calloc((size_t)(nvar ? nvar : 1), sizeof(double));
    S->zdiag = calloc((size_t)(nvar ? nvar : 1), sizeof(double));
    if (!S->cidx || !S->cval || !S->zval || !S->d || !S->zdiag)
        goto done;
    for (int j = 0; j < nvar; j++) {
        const ivec *p = &pat[S->perm[j]];
        int *c = S->cidx + S->cstart[j];
        for (int x = 0; x < p->n; x++)
            c[x] = S->pos[p->v[x]];
        qsort(c, (size_t)p->n, sizeof(int), cmp_int);
    }
    rc = TS_OK;
done:
    free(head);
    free(nxt);
    free(prv);
    free(bdeg);
    free(keys);
    if (adj)
        for (int i = 0; i < nvar; i++)
            free(adj[i].v);
    if (pat)
        for (int i = 0; i < nvar; i++)
            free(pat[i].v);
    free(adj);
    free(pat);
    free(mark);
    free(gone);
    return rc;
}

/* Slot of row i in column j (i > j, i in the pattern). */
static int spd_slot(const spd *S, int j, int i)
{
    int lo = S->cstart[j], hi = S->cstart[j + 1] - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        if (S->cidx[mid] == i)
            return mid;
        if (S->cidx[mid] < i)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return -1;
}

/* N = sum of w a a^T over the equations, plus the ridge on the diagonal. */
static void spd_assemble(spd *S, const eqs *E, double *ridge_out)
{
    for (int e = 0; e < E->n; e++)
        for (int p = E->start[e]; p < E->start[e + 1]; p++) {
            int a = S->pos[E->idx[p]];
            S->d[a] += E->w[e];
            for (int q = p + 1; q < E->start[e + 1]; q++) {
                int b = S->pos[E->idx[q]];
                int slot = a < b ? spd_slot(S, a, b) : spd_slot(S, b, a);
                S->cval[slot] += E->w[e];
            }
        }
    double maxd = 0;
    for (int j = 0; j < S->n; j++)
        maxd = fmax(maxd, S->d[j]);
    double ridge = maxd > 0 ? 1e-12 * maxd : 1.0;
    for (int j = 0; j < S->n; j++)
        S->d[j] += ridge;
    *ridge_out = ridge;
}

/* The normal equations again from zero, for new weights (the factor overwrote them). */
static void spd_clear(spd *S)
{
    memset(S->d, 0, sizeof(double) * (size_t)S->n);
    memset(S->cval, 0, sizeof(double) * (size_t)S->cstart[S->n]);
}

static void spd_factor(spd *S, double ridge)
{
    for (int j = 0; j < S->n; j++) {
        double dj = S->d[j];
        if (!(dj > ridge * 0.5))
            dj = S->d[j] = ridge;        /* round-off in a direction the data leave open */
        int s0 = S->cstart[j], s1 = S->cstart[j + 1];
        for (int a = s0; a < s1; a++)
            S->cval[a] /= dj;
        for (int a = s0; a < s1; a++) {
            int i = S->cidx[a];
            double la = S->cval[a];
            S->d[i] -= la * la * dj;
            if (a + 1 == s1)
                continue;
            for (int t = S->cstart[i]; t < S->cstart[i + 1]; t++)
                S->map[S->cidx[t]] = t;
            for (int b = a + 1; b < s1; b++)
                S->cval[S->map[S->cidx[b]]] -= S->cval[b] * la * dj;
        }
    }
}

/* x = N^-1 b, both indexed by variable. */
static void spd_solve(const spd *S, const double *b, double *x, double *z)
{
    for (int j = 0; j < S->n; j++)
        z[j] = b[S->perm[j]];
    for (int j = 0; j < S->n; j++)
        for (int a = S->cstart[j]; a < S->cstart[j + 1]; a++)
            z[S->cidx[a]] -= S->cval[a] * z[j];
    for (int j = 0; j < S->n; j++)
        z[j] /= S->d[j];
    for (int j = S->n - 1; j >= 0; j--)
        for (int a = S->cstart[j]; a < S->cstart[j + 1]; a++)
            z[j] -= S->cval[a] * z[S->cidx[a]];
    for (int j = 0; j < S->n; j++)
        x[S->perm[j]] = z[j];
}

/* The inverse on L's pattern (Takahashi, Fagan, Chen 1973): from the last column back,
 * Z_ij = -sum_k L_kj Z_ik over the rows k of column j, Z_jj = 1/D_j - sum_k L_kj Z_kj. */
static int spd_inverse_diag(spd *S)
{
    int maxlen = 0;
    for (int j = 0; j < S->n; j++)
        if (S->cstart[j + 1] - S->cstart[j] > maxlen)
            maxlen = S->cstart[j + 1] - S->cstart[j];
    double *acc = malloc(sizeof(double) * (size_t)(maxlen ? maxlen : 1));
    if (!acc)
        return TS_ENOMEM;
    for (int j = S->n - 1; j >= 0; j--) {
        int s0 = S->cstart[j], s1 = S->cstart[j + 1];
        for (int a = s0; a < s1; a++)
            acc[a - s0] = 0;
        for (int a = s0; a < s1; a++) {
            int ia = S->cidx[a];
            double la = S->cval[a];
            acc[a - s0] += la * S->zdiag[ia];
            if (a + 1 == s1)
                continue;
            for (int t = S->cstart[ia]; t < S->cstart[ia + 1]; t++)
                S->map[S->cidx[t]] = t;
            for (int b = a + 1; b < s1; b++) {
                double z = S->zval[S->map[S->cidx[b]]];      /* Z(i_b, i_a) */
                acc[a - s0] += S->cval[b] * z;
                acc[b - s0] += la * z;
            }
        }
        double zjj = 1.0 / S->d[j];
        for (int a = s0; a < s1; a++) {
            S->zval[a] = -acc[a - s0];
            zjj -= S->cval[a] * S->zval[a];
        }
        S->zdiag[j] = zjj;
    }
    free(acc);
    return TS_OK;
}

/* ---- the link solve ---- */

void ts_link_result_free(ts_link_result *r)
{
    if (!r)
        return;
    free(r->link);
    free(r->members);
    free(r->meas);
    memset(r, 0, sizeof *r);
}

static void eqs_free(eqs *E)
{
    free(E->start);
    free(E->idx);
    free(E->y);
    free(E->w);
}

static int pair_usable(const ts_pair_stats *p)
{
    return p->samples > 0 && isfinite(p->est_us);
}

/* The solve's working arrays, beside the result. */
typedef struct solve_work {
    eqs E;
    spd S;
    double *se;              /* standard error of each pair's mean, NAN when it says nothing */
    double *b, *x, *z;       /* right-hand side, solution and spd_solve's scratch, by link */
    double *r2;              /* by link: sum of the squared residuals (RTT) of its pairs */
} solve_work;

static void solve_work_free(solve_work *W)
{
    eqs_free(&W->E);
    spd_free(&W->S);
    free(W->se);
    free(W->b);
    free(W->x);
    free(W->z);
    free(W->r2);
}

/* The result's arrays and the work's, for m links with nmembers members and nuse usable pairs
 * whose paths cross at most maxlen links. */
static int solve_alloc(solve_work *W, ts_link_result *res, int m, int nmembers, int nuse, int maxlen)
{
    res->link = calloc((size_t)(m ? m : 1), sizeof *res->link);
    res->members = malloc(sizeof(int) * (size_t)(nmembers ? nmembers : 1));
    res->meas = calloc((size_t)(nuse ? nuse : 1), sizeof *res->meas);
    W->E.start = malloc(sizeof(int) * (size_t)(nuse + 1));
    W->E.idx = malloc(sizeof(int) * (size_t)(nuse ? nuse : 1) * (size_t)maxlen);
    W->E.y = malloc(sizeof(double) * (size_t)(nuse ? nuse : 1));
    W->E.w = malloc(sizeof(double) * (size_t)(nuse ? nuse : 1));
    W->se = malloc(sizeof(double) * (size_t)(nuse ? nuse : 1));
    W->b = calloc((size_t)(m ? m : 1), sizeof(double));
    W->x = calloc((size_t)(m ? m : 1), sizeof(double));
    W->z = calloc((size_t)(m ? m : 1), sizeof(double));
    W->r2 = calloc((size_t)(m ? m : 1), sizeof(double));
    if (!res->link || !res->members || !res->meas || !W->E.start || !W->E.idx || !W->E.y || !W->E.w ||
        !W->se || !W->b || !W->x || !W->z || !W->r2)
        return TS_ENOMEM;
    return TS_OK;
}

/* The result's links as the link set has them: their members, and which hold an access link. */
static void describe_links(const ts_fabric *tree, const ts_link_set *ls, ts_link_result *res)
{
    int m = ls->nlinks;
    res->nlinks = m;
    memcpy(res->members, ls->members, sizeof(int) * (size_t)ls->first[m]);
    for (int k = 0; k < m; k++) {
        ts_link_estimate *L = &res->link[k];
        L->first = ls->first[k];
        L->nmembers = ls->first[k + 1] - ls->first[k];
        for (int t = L->first; t < L->first + L->nmembers; t++)
            L->access |= tree->v[ls->members[t]].kind == TS_NODE;
    }
}

/* The spikes' share of a mean round trip, pooled over the pairs (see the header): each pair's
 * mean of every sample minus its inlier mean, weighted by its samples, and the standard error
 * of that weighted mean from the pairs' scatter. Pairs that do not say (mean_us unset, as from
 * a caller that fills est_us only) are left out; none left: no share. */
static void pooled_tail(const ts_pair_stats *pairs, int npairs, ts_link_result *res)
{
    double sw = 0, swx = 0;
    int m = 0;
    for (int i = 0; i < npairs; i++) {
        const ts_pair_stats *p = &pairs[i];
        if (pair_usable(p) && isfinite(p->mean_us) && p->mean_us >= p->est_us) {
            sw += p->samples;
            swx += p->samples * (p->mean_us - p->est_us);
            m++;
        }
    }
    res->tail_us = res->tail_se_us = 0;
    if (m == 0)
        return;
    double t = swx / sw, ss = 0;
    for (int i = 0; i < npairs; i++) {
        const ts_pair_stats *p = &pairs[i];
        if (pair_usable(p) && isfinite(p->mean_us) && p->mean_us >= p->est_us) {
            double d = p->samples * (p->mean_us - p->est_us - t);
            ss += d * d;
        }
    }
    res->tail_us = t;
    res->tail_se_us = m > 1 ? sqrt(ss * m / (m - 1)) / sw : 0;
}

/* One equation per usable pair, and the standard error of each pair's mean; *ngood counts
 * the pairs whose interval gives one. */
static int build_equations(const ts_fabric *tree, const ts_link_set *ls, const ts_pair_stats *pairs,
                           const int *round, int npairs, double confidence, int maxlen, solve_work *W,
                           ts_link_result *res, int *ngood, ts_error *err)
{
    eqs *E = &W->E;
    *ngood = 0;
    E->start[0] = 0;
    for (int i = 0; i < npairs; i++) {
        const ts_pair_stats *p = &pairs[i];
        if (!pair_usable(p))
            continue;
        if (p->a < 0 || p->b < 0 || p->a >= tree->nnodes || p->b >= tree->nnodes || p->a == p->b)
            return ts_fail(err, TS_EINPUT, "pair %d (%d,%d) is not a pair of distinct nodes of the tree",
                           i, p->a, p->b);
        int e = E->n++;
        int len = ts_link_set_path(ls, tree, p->a, p->b, E->idx + E->start[e], maxlen);
        E->start[e + 1] = E->start[e] + len;
        E->y[e] = p->est_us / 2;
        double t = ts_student_t(confidence, p->samples > 1 ? p->samples - 1 : 1);
        W->se[e] = p->samples >= 2 && isfinite(p->ci_us) && p->ci_us > 0 ? p->ci_us / t : NAN;
        *ngood += !isnan(W->se[e]);
        ts_link_measurement *M = &res->meas[e];
        M->a = p->a;
        M->b = p->b;
        M->round = round ? round[i] : -1;
        M->samples = p->samples;
        M->rtt_us = p->est_us;
        M->ci_us = p->ci_us;
    }
    res->nmeas = E->n;
    pooled_tail(pairs, npairs, res);
    for (int e = 0; e < E->n; e++)
        E->y[e] += res->tail_us / 2;
    return TS_OK;
}

/* Each node's per-sample log variance, shrunk towards the nodes' common mean (see
 * initial_weights), returned as a variance in node_var. v holds the pairs' per-sample variances
 * grouped by node, node i's run ending at cnt[i]; they are replaced by their logs. */
static void shrunk_node_variances(double *v, const int *cnt, int nnodes, double typical, double *node_var)
{
    double within_ss = 0, grand = 0;
    int within_dof = 0, nobs = 0;
    for (int i = 0; i < nnodes; i++) {
        int lo = i ? cnt[i - 1] : 0, n = cnt[i] - lo;
        double sum = 0, ss = 0;
        for (int j = lo; j < cnt[i]; j++) {
            /* none 100x below the typical (a node whose samples were all alike) */
            v[j] = log(fmax(v[j], 0.01 * typical));
            sum += v[j];
        }
        if (n == 0)
            continue;
        node_var[i] = sum / n;           /* the mean log variance, for now */
        for (int j = lo; j < cnt[i]; j++)
            ss += (v[j] - node_var[i]) * (v[j] - node_var[i]);
        within_ss += ss;
        within_dof += n - 1;
        grand += node_var[i];
        nobs++;
    }
    grand = nobs ? grand / nobs : log(typical);
    /* the spread of one pair's log variance about its node's, and of the node means about their
     * mean; what sampling alone would give the latter is the former over the pairs per node */
    double within = within_dof > 0 ? within_ss / within_dof : NAN, between = 0, sampling = 0;
    for (int i = 0; i < nnodes; i++) {
        int n = cnt[i] - (i ? cnt[i - 1] : 0);
        if (n == 0)
            continue;
        between += (node_var[i] - grand) * (node_var[i] - grand);
        sampling += within / n;
    }
    double spread = NAN;                 /* the nodes' true spread of log variance */
    if (nobs > 1 && isfinite(within)) {
        between /= nobs - 1;
        sampling /= nobs;
        spread = fmax(between - sampling, 0);
    }
    for (int i = 0; i < nnodes; i++) {
        int n = cnt[i] - (i ? cnt[i - 1] : 0);
        if (n == 0) {
            node_var[i] = exp(grand);
            continue;
        }
        /* without replicated pairs sampling cannot be told from hosts that differ: unshrunk */
        double keep = !isfinite(spread) ? 1.0 : spread > 0 ? spread / (spread + within / n) : 0.0;
        node_var[i] = exp(grand + keep * (node_var[i] - grand));
    }
}

/* Each equation's weight, from the spread of its two nodes' samples (ngood pairs give one).
 *
 * Not from the pair's own standard error: with one-sided noise a pair whose samples happened to
 * fall low has both a low mean and a low spread, so weighting each pair by its own spread pulls
 * every estimate down (by about half a standard error on ethernet-udp, enough to take 90%
 * intervals to 85%). A node's per-sample variance instead comes from all its pairs (samples x
 * se^2), of which any one pair is a small part, and a pair's variance is the mean of its two
 * nodes' over its samples: a noisy host still weighs less, a lucky pair no more.
 *
 * A node has only a handful of pairs, so its variance is itself an estimate, and the intervals
 * (the inverse of the normal equations, scaled by chi^2/dof) treat the weights as exact. Weights
 * that scatter by chance make the estimates vary more than that inverse says, by about 1 + CV^2
 * of the chance part of the weights (the sandwich (A'WA)^-1 A'W V W A (A'WA)^-1 against
 * (A'WA)^-1), which no scale common to all links undoes; and the scatter still follows each
 * pair's own noise a little, which biases links low. So the nodes' log variances are shrunk
 * towards their common mean by how much of their spread their sampling explains (the empirical
 * Bayes, method-of-moments estimate of a random effect): each node's log variance is the mean
 * over its pairs, its sampling variance the pooled within-node spread over its pair count, and
 * the nodes' true spread what the between-node spread exceeds that by. Hosts that really differ
 * keep their weights; hosts that differ only by chance get the common one (shrunk_node_variances). */
static int initial_weights(eqs *E, const ts_link_measurement *meas, int nnodes, const double *se,
                           int ngood, ts_error *err)
{
    int *cnt = calloc((size_t)nnodes + 1, sizeof(int));
    double *v = malloc(sizeof(double) * (size_t)(2 * ngood + 1));
    double *all = malloc(sizeof(double) * (size_t)(2 * ngood + 1));
    double *node_var = malloc(sizeof(double) * (size_t)(nnodes ? nnodes : 1));
    if (!cnt || !v || !all || !node_var) {
        free(cnt);
        free(v);
        free(all);
        free(node_var);
        return ts_fail(err, TS_ENOMEM, "out of memory");
    }
    /* per-sample variances grouped by node (a counting sort): node i's run ends at cnt[i] and
     * starts at cnt[i - 1] (0 for i = 0) */
    for (int e = 0; e < E->n; e++)
        if (!isnan(se[e])) {
            cnt[meas[e].a + 1]++;
            cnt[meas[e].b + 1]++;
        }
    for (int i = 0; i < nnodes; i++)
        cnt[i + 1] += cnt[i];
    for (int e = 0; e < E->n; e++)
        if (!isnan(se[e])) {
            double u = meas[e].samples * se[e] * se[e];
            v[cnt[meas[e].a]++] = u;
            v[cnt[meas[e].b]++] = u;
        }
    memcpy(all, v, sizeof(double) * (size_t)(2 * ngood));
    double typical = ngood > 0 ? ts_median(all, 2 * ngood) : NAN;
    if (!(typical > 0))
        typical = 1.0;
    shrunk_node_variances(v, cnt, nnodes, typical, node_var);
    for (int e = 0; e < E->n; e++) {
        int n = meas[e].samples > 0 ? meas[e].samples : 1;
        double var = (node_var[meas[e].a] + node_var[meas[e].b]) / 2 / n;
        var /= 4;                        /* one-way */
        E->w[e] = 1.0 / var;
    }
    free(cnt);
    free(v);
    free(all);
    free(node_var);
    return TS_OK;
}

/* What the links x predict for equation e (one-way). */
static double equation_fit(const eqs *E, int e, const double *x)
{
    double fit = 0;
    for (int p = E->start[e]; p < E->start[e + 1]; p++)
        fit += x[E->idx[p]];
    return fit;
}

/* x from the normal equations under the current weights; *ridge as spd_assemble chose it. */
static void weighted_solve(solve_work *W, double *ridge)
{
    const eqs *E = &W->E;
    spd_assemble(&W->S, E, ridge);
    memset(W->b, 0, sizeof(double) * (size_t)W->S.n);
    for (int e = 0; e < E->n; e++)
        for (int p = E->start[e]; p < E->start[e + 1]; p++)
            W->b[E->idx[p]] += E->w[e] * E->y[e];
    spd_factor(&W->S, *ridge);
    spd_solve(&W->S, W->b, W->x, W->z);
}

/* Huber weights for the residuals of x: w0 the weights the intervals gave, u and us scratch.
 * Returns whether any weight moved. */
static int huber_reweight(eqs *E, const double *x, const double *w0, double *u, double *us)
{
    /* residuals in units of each pair's own standard error; their spread, robustly (the
     * intervals may understate it, never taken as less than they say) */
    for (int e = 0; e < E->n; e++) {
        double fit = equation_fit(E, e, x);
        double r = fabs(E->y[e] - fit);
        /* (round-off of exact data is no outlier, however narrow its interval) */
        u[e] = r > 1e-9 * fabs(E->y[e]) ? r * sqrt(w0[e]) : 0;
    }
    memcpy(us, u, sizeof(double) * (size_t)E->n);
    double spread = fmax(1.0, 1.4826 * ts_median(us, E->n));
    int changed = 0;
    for (int e = 0; e < E->n; e++) {
        double lim = HUBER_C * spread;
        double w = u[e] > lim ? w0[e] * lim / u[e] : w0[e];
        changed |= fabs(w - E->w[e]) > 1e-3 * w0[e];
        E->w[e] = w;
    }
    return changed;
}

/* The iteratively reweighted solve (see the header): x, the factored normal equations of the
 * last weights and their ridge, and each measurement's share of its weight in res. */
static int robust_solve(solve_work *W, ts_link_result *res, double *ridge, ts_error *err)
{
    eqs *E = &W->E;
    int rc = TS_OK;
    double *w0 = malloc(sizeof(double) * (size_t)(E->n ? E->n : 1));
    double *u = malloc(sizeof(double) * (size_t)(E->n ? E->n : 1));
    double *us = malloc(sizeof(double) * (size_t)(E->n ? E->n : 1));
    if (!w0 || !u || !us) {
        rc = ts_fail(err, TS_ENOMEM, "out of memory");
        goto done;
    }
    memcpy(w0, E->w, sizeof(double) * (size_t)E->n);
    for (int pass = 0;; pass++) {
        weighted_solve(W, ridge);
        if (pass == ROBUST_ITERS || E->n < 2)
            break;
        if (!huber_reweight(E, W->x, w0, u, us))
            break;
        spd_clear(&W->S);
    }
    for (int e = 0; e < E->n; e++) {
        res->meas[e].weight = E->w[e] / w0[e];
        res->outliers += E->w[e] < 0.999 * w0[e];
    }
done:
    free(w0);
    free(u);
    free(us);
    return rc;
}

/* Each measurement's fit and residual, each link's pairs, samples and squared residuals;
 * returns the weighted residual sum of squares, and in *chi4 the sum of its terms' squares. */
static double fit_measurements(solve_work *W, ts_link_result *res, double *chi4)
{
    const eqs *E = &W->E;
    double chi2 = 0;
    *chi4 = 0;
    for (int e = 0; e < E->n; e++) {
        double fit = equation_fit(E, e, W->x);
        double r = E->y[e] - fit;
        chi2 += E->w[e] * r * r;
        *chi4 += E->w[e] * r * r * E->w[e] * r * r;
        res->meas[e].fit_us = 2 * fit;
        res->meas[e].residual_us = 2 * r;
        for (int p = E->start[e]; p < E->start[e + 1]; p++) {
            ts_link_estimate *L = &res->link[E->idx[p]];
            L->samples += res->meas[e].samples;
            L->npairs++;
            W->r2[E->idx[p]] += 4 * r * r;
        }
    }
    return chi2;
}

/* How much each link moves when every pair's round trip moves by 1 us (g, by link): the
 * pooled spike share is one number added to every pair, so its error moves the links
 * together, by g times itself (an access link by about a quarter, an uplink not at all). */
static void tail_response(solve_work *W, double *g)
{
    const eqs *E = &W->E;
    memset(W->b, 0, sizeof(double) * (size_t)W->S.n);
    for (int e = 0; e < E->n; e++)
        for (int p = E->start[e]; p < E->start[e + 1]; p++)
            W->b[E->idx[p]] += E->w[e] * 0.5;
    spd_solve(&W->S, W->b, g, W->z);
}

/* The error scale the intervals use: an upper confidence bound on the one the fit estimates.
 *
 * The bar an interval set must pass is a share of links: at least `confidence` of the links'
 * intervals hold their truths. One error scale, estimated from the run's own residuals
 * (chi^2/dof), serves every link of the run, so its error does not average out over the links:
 * with intervals built on the estimate itself (Student's t), a run whose scale came out low has
 * too narrow intervals on all its links together, and each holds its truth with probability
 * `confidence` only on average over runs, with less in about every other run. Built on the
 * scale's upper bound at the same confidence, in that share of runs every interval of the run
 * holds its truth with at least that probability, so the share of links held is at least
 * `confidence` run by run, up to the chance of its finite count of links (a tolerance
 * statement; Student's t only promises the average over runs).
 *
 * The bound takes the scale estimate as chi-square distributed with nu degrees of freedom,
 * nu = dof where the residuals are normal. One-sided, heavy-tailed noise makes the estimate
 * scatter more: a sample variance of n terms with excess kurtosis k has relative variance
 * 2/dof + k/n, so nu = 2 / (2/dof + k/n), k measured on the weighted residuals (k < 0 is taken
 * as 0: light tails never narrow the bound). The widening is about z / sqrt(2 nu): some 5 % at
 * 128 nodes, under 1 % from a thousand nodes. Never below the propagated errors (1); where the
 * residuals are too few for the bound (the quantile 0), Student's t at dof instead. */
static double interval_scale(const ts_link_result *res, double chi4, int n, double z)
{
    if (res->dof <= 0 || !(res->chi2 > 0))
        return 1.0;
    double kurtosis = fmax((double)n * chi4 / (res->chi2 * res->chi2) - 3.0, 0.0);
    double nu = 2.0 / (2.0 / res->dof + kurtosis / n);
    double q = ts_chi_square_quantile(1.0 - res->confidence, nu);
    double bound = q > 0 ? sqrt(res->chi2 / res->dof * nu / q)
                         : res->scale * ts_student_t(res->confidence, res->dof) / z;
    return fmax(1.0, bound);
}

/* Every link's estimate, standard error and interval, or none where the data leave it open
 * (var the diagonal of the inverse, by position; g the links' response to the spike share,
 * tail_response; z the interval's normal quantile). */
static void estimate_links(const solve_work *W, double ridge, const double *g, double z,
                           ts_link_result *res)
{
    for (int k = 0; k < res->nlinks; k++) {
        ts_link_estimate *L = &res->link[k];
        double var = W->S.zdiag[W->S.pos[k]];
        L->residual_us = L->npairs ? sqrt(W->r2[k] / L->npairs) : NAN;
        if (!(var * ridge < 1e-5) || L->npairs == 0) {
            L->est_us = L->lo_us = L->hi_us = L->se_us = NAN;
            res->undetermined++;
            continue;
        }
        L->est_us = W->x[k];
        double st = g[k] * res->tail_se_us;
        L->se_us = sqrt(res->scale * res->scale * fmax(var, 0) + st * st);
        double half = z * sqrt(res->interval_scale * res->interval_scale * fmax(var, 0) + st * st);
        L->lo_us = L->est_us - half;
        L->hi_us = L->est_us + half;
    }
}

static int solve(const ts_fabric *tree, const ts_pair_stats *pairs, const int *round, int npairs,
                 double confidence, ts_link_result *res, ts_error *err)
{
    memset(res, 0, sizeof *res);
    res->confidence = confidence;
    if (!(confidence > 0 && confidence < 1))
        return ts_fail(err, TS_EINPUT, "confidence must be in (0, 1) (got %g)", confidence);
    ts_link_set ls;
    int rc = ts_link_set_build(tree, &ls, err);
    if (rc != TS_OK)
        return rc;
    int m = ls.nlinks, maxlen = 2 * (ts_fabric_max_depth(tree) + 1);
    solve_work W;
    memset(&W, 0, sizeof W);
    int nuse = 0, ngood;
    for (int i = 0; i < npairs; i++)
        nuse += pair_usable(&pairs[i]);
    if (solve_alloc(&W, res, m, ls.first[m], nuse, maxlen) != TS_OK) {
        rc = ts_fail(err, TS_ENOMEM, "out of memory for %d links and %d pairs", m, nuse);
        goto done;
    }
    describe_links(tree, &ls, res);
    rc = build_equations(tree, &ls, pairs, round, npairs, confidence, maxlen, &W, res, &ngood, err);
    if (rc == TS_OK)
        rc = initial_weights(&W.E, res->meas, tree->nnodes, W.se, ngood, err);
    if (rc != TS_OK)
        goto done;
    if (spd_symbolic(&W.S, m, &W.E) != TS_OK) {
        rc = ts_fail(err, TS_ENOMEM, "out of memory for the normal equations");
        goto done;
    }
    double ridge = 0;
    if ((rc = robust_solve(&W, res, &ridge, err)) != TS_OK)
        goto done;
    if (spd_inverse_diag(&W.S) != TS_OK) {
        rc = ts_fail(err, TS_ENOMEM, "out of memory");
        goto done;
    }
    /* rank: pivots well above the ridge; determined links: variance far below 1/ridge */
    int rank = 0;
    for (int j = 0; j < m; j++)
        rank += W.S.d[j] > 1e4 * ridge;
    double chi4;
    double chi2 = fit_measurements(&W, res, &chi4);
    res->chi2 = chi2;
    res->dof = W.E.n > rank ? W.E.n - rank : 0;
    res->scale = res->dof > 0 && chi2 > res->dof ? sqrt(chi2 / res->dof) : 1.0;
    double z = ts_normal_quantile(0.5 * (1.0 + confidence));
    res->interval_scale = interval_scale(res, chi4, W.E.n, z);
    double *g = malloc(sizeof(double) * (size_t)(m ? m : 1));
    if (!g) {
        rc = ts_fail(err, TS_ENOMEM, "out of memory");
        goto done;
    }
    tail_response(&W, g);
    estimate_links(&W, ridge, g, z, res);
    free(g);
done:
    solve_work_free(&W);
    ts_link_set_free(&ls);
    if (rc != TS_OK)
        ts_link_result_free(res);
    return rc;
}

int ts_link_solve(const ts_fabric *tree, const ts_pair_stats *pairs, int npairs, double confidence,
                  ts_link_result *res, ts_error *err)
{
    return solve(tree, pairs, NULL, npairs, confidence, res, err);
}

void ts_link_measure_options_default(ts_link_measure_options *o)
{
    o->full_rounds = 1;
    o->node_map = NULL;
}

int ts_link_measure(ts_probe_engine *e, const ts_fabric *tree, const ts_link_plan *plan,
                    ts_link_result *res, ts_error *err)
{
    ts_link_measure_options o;
    ts_link_measure_options_default(&o);
    return ts_link_measure_opts(e, tree, plan, &o, res, err);
}

int ts_link_measure_opts(ts_probe_engine *e, const ts_fabric *tree, const ts_link_plan *plan,
                         const ts_link_measure_options *o, ts_link_result *res, ts_error *err)
{
    memset(res, 0, sizeof *res);
    if (tree->root == TS_NONE)
        return ts_fail(err, TS_EINPUT, "the tree is not finalized");
    const int *map = o ? o->node_map : NULL;
    if (!map && tree->nnodes != e->tp->nnodes)
        return ts_fail(err, TS_EINPUT, "the tree has %d nodes, the transport %d", tree->nnodes,
                       e->tp->nnodes);
    for (int i = 0; map && i < tree->nnodes; i++)
        if (map[i] < 0 || map[i] >= e->tp->nnodes)
            return ts_fail(err, TS_EINPUT, "tree node %s has no node on the transport",
                           tree->v[tree->node_vertex[i]].name);
    int np = plan->npairs;
    for (int i = 0; i < np; i++)
        if (plan->pairs[i].a < 0 || plan->pairs[i].b < 0 || plan->pairs[i].a >= tree->nnodes ||
            plan->pairs[i].b >= tree->nnodes)
            return ts_fail(err, TS_EINPUT, "plan pair %d (%d,%d) names no node of the tree", i,
                           plan->pairs[i].a, plan->pairs[i].b);
    ts_pair_stats *st = malloc(sizeof *st * (size_t)(np ? np : 1));
    int *rnd = malloc(sizeof(int) * (size_t)(np ? np : 1));
    ts_pair *tp = malloc(sizeof *tp * (size_t)(np ? np : 1));
    if (!st || !rnd || !tp) {
        free(st);
        free(rnd);
        free(tp);
        return ts_fail(err, TS_ENOMEM, "out of memory");
    }
    for (int i = 0; i < np; i++) {
        tp[i].a = map ? map[plan->pairs[i].a] : plan->pairs[i].a;
        tp[i].b = map ? map[plan->pairs[i].b] : plan->pairs[i].b;
    }
    ts_stop_rule rule = e->rule;
    if (o && o->full_rounds)
        rule.min_samples = rule.max_samples;
    double t0 = ts_probe_now(e);
    int partial = 0, nst = 0, run = 0;
    /* the leader hands out the plan */
    int rc = ts_probe_control(e, err);
    if (rc == TS_ELIMIT) {
        partial = 1;
        rc = TS_OK;
    }
    for (int r = 0; r < plan->nrounds && rc == TS_OK && !partial; r++) {
        int s0 = plan->round_start[r], cnt = plan->round_start[r + 1] - s0;
        rc = ts_probe_round_rule(e, tp + s0, cnt, &rule, st + nst, err);
        if (rc == TS_ELIMIT) {
            partial = 1;
            rc = TS_OK;
            break;
        }
        if (rc != TS_OK)
            break;
        for (int i = 0; i < cnt; i++) {
            /* back to the tree's node indices */
            st[nst + i].a = plan->pairs[s0 + i].a;
            st[nst + i].b = plan->pairs[s0 + i].b;
            rnd[nst + i] = r;
            if (st[nst + i].flags & TS_PAIR_DEADLINE)
                partial = 1;
        }
        nst += cnt;
        run++;
    }
    /* ... and gathers the results */
    if (rc == TS_OK && !partial && ts_probe_control(e, err) == TS_ELIMIT)
        partial = 1;
    double t1 = ts_probe_now(e);
    if (rc == TS_OK)
        rc = solve(tree, st, rnd, nst, e->rule.confidence, res, err);
    free(st);
    free(rnd);
    free(tp);
    if (rc != TS_OK)
        return rc;
    res->rounds_planned = plan->nrounds;
    res->rounds_run = run;
    res->partial = partial || run < plan->nrounds;
    res->sim_time_us = t1 - t0;
    return TS_OK;
}
