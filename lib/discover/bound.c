/* toposcope — a lower bound on probing time from measured noise, level steps and round trips
 * (toposcope/bound.h has the argument, doc/design.md the derivation). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "toposcope/bound.h"

#define TV_OFFSETS 8                 /* grid offsets the positive variation is read at */
#define TV_CELLS_MAX 4000000L        /* grid cells per offset, at most (a wild outlier) */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* samples <= t in sorted x[0..n-1] */
static long count_le(const double *x, int n, double t)
{
    int lo = 0, hi = n;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (x[mid] <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

double ts_shift_tv(double *x, int n, double delta_us)
{
    if (n <= 0)
        return 0;
    if (!(delta_us > 0))
        return 1;
    qsort(x, (size_t)n, sizeof *x, cmp_double);
    double lo = x[0], hi = x[n - 1];
    long cells = (long)ceil((hi - lo) / delta_us) + 3;
    if (cells > TV_CELLS_MAX)
        cells = TV_CELLS_MAX;
    double best = 0;
    /* W(t) = F(t) - F(t - delta) rises where the density exceeds its shifted copy, and its
     * total rise is the total variation; sampled on a grid the rises can only be smaller, the
     * counting noise of the empirical F aside (it adds a little, toward a lower bound) */
    for (int o = 0; o < TV_OFFSETS; o++) {
        double t0 = lo - delta_us * (1.0 - (double)o / TV_OFFSETS);
        long prev = 0, rise = 0;
        for (long g = 0; g <= cells; g++) {
            double t = t0 + (double)g * delta_us;
            long w = count_le(x, n, t) - count_le(x, n, t - delta_us);
            if (w > prev)
                rise += w - prev;
            prev = w;
        }
        double tv = (double)rise / n;
        if (tv > best)
            best = tv;
    }
    return best > 1 ? 1 : best;
}

int ts_decision_samples(double tv, double error)
{
    if (!(tv < 1))
        return 1;
    if (!(tv > 0))
        return INT32_MAX;
    double n = ceil(log(1.0 / (2.0 * error)) / -log1p(-tv));
    if (!(n >= 1))
        return 1;
    return n > 1e9 ? 1000000000 : (int)n;
}

/* ---- the four nodes of a level ---- */

static int first_node(const ts_fabric *f, int v)
{
    while (v != TS_NONE && f->v[v].kind != TS_NODE)
        v = f->v[v].first_child;
    return v;
}

/* Two nodes whose lowest common ancestor is switch c: two of its nodes when they hang from it,
 * else one from each of two children. 0 when c has no such two. */
static int two_below(const ts_fabric *f, int c, int *a, int *b)
{
    int k = 0, got[2];
    for (int u = f->v[c].first_child; u != TS_NONE && k < 2; u = f->v[u].next_sibling) {
        int x = first_node(f, u);
        if (x != TS_NONE)
            got[k++] = x;
    }
    if (k < 2)
        return 0;
    *a = got[0];
    *b = got[1];
    return 1;
}

/* x, y below one switch of height h and z, w below a sibling of it, each pair apart right at
 * its switch: the first such in vertex order. Node indices in q[4]; 0 when there is none. */
static int level_quartet(const ts_fabric *f, int h, int q[4])
{
    for (int g = 0; g < f->nvert; g++) {
        if (f->v[g].kind != TS_SWITCH)
            continue;
        int k = 0, pick[4];
        for (int c = f->v[g].first_child; c != TS_NONE && k < 4; c = f->v[c].next_sibling)
            if (f->v[c].kind == TS_SWITCH && f->v[c].height == h && two_below(f, c, &pick[k], &pick[k + 1]))
                k += 2;
        if (k == 4) {
            for (int i = 0; i < 4; i++)
                q[i] = f->v[pick[i]].node_index;
            return 1;
        }
    }
    return 0;
}

/* nsamples answered round trips of (a, b) into x (sorted), their count returned */
static int sample_pair(ts_rtt_sample_fn sample, void *ctx, int a, int b, int nsamples, double *x)
{
    int n = 0;
    for (int i = 0; i < 4 * nsamples && n < nsamples; i++) {   /* losses: a few more tries */
        double r = sample(ctx, a, b);
        if (r >= 0 && isfinite(r))
            x[n++] = r;
    }
    qsort(x, (size_t)n, sizeof *x, cmp_double);
    return n;
}

int ts_probe_time_bound(const ts_fabric *f, ts_rtt_sample_fn sample, void *ctx, int nsamples,
                        double rtt_floor_us, double exact_share, ts_time_bound *out, ts_error *err)
{
    memset(out, 0, sizeof *out);
    out->bound_s = NAN;
    out->rtt_floor_us = rtt_floor_us;
    out->error = 1.0 - exact_share;
    if (nsamples < 16)
        return ts_fail(err, TS_EINPUT, "a time bound needs at least 16 samples per pair (got %d)", nsamples);
    if (!(exact_share > 0.5 && exact_share < 1))
        return ts_fail(err, TS_EINPUT, "the exact share must be in (0.5, 1) (got %g)", exact_share);
    double *x[4];
    for (int i = 0; i < 4; i++)
        x[i] = malloc(sizeof(double) * (size_t)nsamples);
    if (!x[0] || !x[1] || !x[2] || !x[3]) {
        for (int i = 0; i < 4; i++)
            free(x[i]);
        return ts_fail(err, TS_ENOMEM, "out of memory");
    }
    int worst = 0;
    for (int lv = 0; lv < TS_BOUND_LEVELS; lv++) {
        int q[4];
        if (!level_quartet(f, lv + 1, q))
            break;
        /* near (x,y), near (z,w), far (x,z), far (y,w) */
        static const int pa[4] = {0, 2, 0, 1}, pb[4] = {1, 3, 2, 3};
        double med[4];
        int ok = 1, cnt[4];
        for (int p = 0; p < 4 && ok; p++) {
            cnt[p] = sample_pair(sample, ctx, q[pa[p]], q[pb[p]], nsamples, x[p]);
            ok = cnt[p] >= 16;
            med[p] = ok ? x[p][cnt[p] / 2] : NAN;
        }
        if (!ok)
            break;
        double step = 0.5 * (med[2] + med[3] - med[0] - med[1]);
        if (!(step > 0))
            break;
        double tv = 0;
        for (int p = 0; p < 4; p++)
            tv = fmax(tv, ts_shift_tv(x[p], cnt[p], step));
        out->step_us[lv] = step;
        out->tv[lv] = tv;
        out->samples[lv] = ts_decision_samples(tv, out->error);
        if (out->samples[lv] > worst)
            worst = out->samples[lv];
        out->levels = lv + 1;
    }
    for (int i = 0; i < 4; i++)
        free(x[i]);
    if (out->levels > 0 && isfinite(rtt_floor_us) && rtt_floor_us > 0)
        out->bound_s = worst * rtt_floor_us * 1e-6;
    return TS_OK;
}
