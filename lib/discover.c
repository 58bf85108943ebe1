/* toposcope — method dispatch and the all-pairs baseline (Bufe 2014 §2.3.2). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "toposcope/discover.h"
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

int ts_method_begin(const char *method, ts_probe_engine *e, ts_utree *tree, ts_infer_report *rep,
                    ts_error *err)
{
    ts_utree_init(tree);
    memset(rep, 0, sizeof *rep);
    rep->reference = TS_NONE;
    if (e->tp->nnodes < 2)
        return ts_fail(err, TS_EINPUT, "%s needs at least 2 nodes (got %d)", method, e->tp->nnodes);
    return TS_OK;
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
    /* One phase: the whole schedule is known up front, the leader decides once at the end. */
    rc = ts_probe_control(e, err);
    for (int r = 0; r < nrounds && rc == TS_OK; r++)
        rc = ts_probe_round(e, pairs + round_start[r], round_start[r + 1] - round_start[r], NULL, err);
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
    free(dm.d);
    free(dm.ci);
    return rc;
}

int ts_discover(ts_method m, ts_probe_engine *e, ts_utree *tree, ts_infer_report *rep,
                ts_error *err)
{
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
