/* toposcope — per-host offsets of round trips (see offsets.h).
 *
 * The weights: a class's noise scale is its mean absolute residual (robust enough once the
 * outliers are weighted down, and O(m), where a median would sort); an equation more than
 * HUBER_C scales off keeps the share of its weight that puts it at HUBER_C. Near pairs mixed
 * into a class (a region not yet cut) are such outliers: they pull the fit by little while
 * they are few.
 *
 * Where they are many they are not outliers: at the top of two pods of 64 nodes over RDMA half
 * the pairs lie 20 us below the others, each node's offset took up its own share of them (the
 * dozen pairs it happened to meet), and offsets spread over +-14 us where the hosts differ by
 * 0.1 hid levels the raw round trips show apart (1.5, 10 and 31 us). A caller may fit such a
 * class as two levels (ts_offset_work.two_level): its residuals split by Lloyd's 2-means, each
 * equation counted against the level it lies nearer to. That model can take the hosts for
 * levels too (pairs of two slow hosts high, of two fast ones low: in a 16-node pod over kernel
 * UDP two "levels" 7 us apart where the step is 1.6), so it is a second look beside the
 * one-level fit, never the only one (fast.c, decide_region). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "offsets.h"
#include "util/prefetch.h"

#define HUBER_C 2.5         /* scales before an equation loses weight */
#define LLOYD_STEPS 8       /* at most this many 2-means iterations of a two-level class per fit
                             * of its levels (started from the last fit's levels, it stops once
                             * its split repeats) */

static double huber_weight(double resid, double scale)
{
    double a = fabs(resid);
    return a <= HUBER_C * scale || scale <= 0 ? 1.0 : HUBER_C * scale / a;
}

/* huber_weight(resid, scale) / scale^2, which a class's equations count by; precision is
 * 1 / scale^2, worked out once a sweep for the class: the equations within HUBER_C scales,
 * most of them, take it without a division of their own (the same division, so the same
 * weight). */
static double huber_precision(double resid, double scale, double precision)
{
    double h = huber_weight(resid, scale);
    return h == 1.0 ? precision : h / (scale * scale);
}

/* One used equation as one of its nodes sees it: the other node, the class, the round trip. */
typedef struct node_eq {
    int other, cls;
    double v;
} node_eq;

/* The buffers of a fit, at least this big (their contents are not kept), with room to grow:
 * a caller fitting again and again (fast.c, every batch) reuses them, where megabytes
 * allocated afresh for each fit were paid again in page faults. 0, or -1 when out of memory. */
static int work_reserve(ts_offset_work *w, int n, long m)
{
    if ((size_t)n + 1 > w->nodes) {
        size_t room = (size_t)n + 1;
        free(w->start);
        free(w->fill);
        w->nodes = 0;
        w->start = malloc(sizeof(long) * room);
        w->fill = malloc(sizeof(long) * room);
        if (!w->start || !w->fill)
            return -1;
        w->nodes = room;
    }
    if ((size_t)(2 * m + 1) > w->eqs) {
        /* (realloc: the pages already touched move, not faulted in afresh; fast.c, scratch_get) */
        size_t room = (size_t)(2 * m + 1) + (size_t)m;
        node_eq *eq = realloc(w->eq, sizeof(node_eq) * room);
        if (!eq)
            return -1;
        w->eq = eq;
        w->eqs = room;
    }
    return 0;
}

void ts_offset_work_free(ts_offset_work *w)
{
    free(w->start);
    free(w->fill);
    free(w->eq);
    free(w->lower);
    free(w->upper);
    memset(w, 0, sizeof *w);
}

/* Equations by node: the used ones of node i are eq[start[i], start[i + 1]), in the order of
 * obs, in w's buffers. Copied rather than indexed: the sweeps read each node's equations in
 * turn, and reading them through an index went to obs at random (megabytes, for a big
 * region). */
static int index_by_node(int n, const ts_offset_obs *obs, long m, ts_offset_work *w,
                         long **startp, node_eq **eqp)
{
    if (work_reserve(w, n, m))
        return -1;
    long *start = w->start, *fill = w->fill;
    node_eq *eq = w->eq;
    memset(start, 0, sizeof(long) * ((size_t)n + 1));
    for (long j = 0; j < m; j++)
        if (obs[j].cls >= 0) {
            start[obs[j].a + 1]++;
            start[obs[j].b + 1]++;
        }
    for (int i = 0; i < n; i++)
        start[i + 1] += start[i];
    memcpy(fill, start, sizeof(long) * (size_t)n);
    for (long j = 0; j < m; j++) {
        /* each node's equations are a stream of their own: thousands of them at random */
        long k = j + TS_PREFETCH_AHEAD;
        if (k < m && obs[k].cls >= 0) {
            ts_prefetch(&eq[fill[obs[k].a]], 1);
            ts_prefetch(&eq[fill[obs[k].b]], 1);
        }
        if (obs[j].cls >= 0) {
            const ts_offset_obs *o = &obs[j];
            eq[fill[o->a]++] = (node_eq){o->b, o->cls, o->v};
            eq[fill[o->b]++] = (node_eq){o->a, o->cls, o->v};
        }
    }
    *startp = start;
    *eqp = eq;
    return 0;
}

/* Each class's level (weighted mean of v - off[a] - off[b]) and scale (mean |residual|).
 * The sums of the class at hand are kept in locals while its equations follow one another (a
 * region's are all together): summed in memory, every equation waited for the last one's
 * store. The same additions in the same order, so the same sums. */
static void fit_levels(const ts_offset_obs *obs, long m, int ncls, const double *off,
                       double *level, double *scale, double *sum, double *wsum)
{
    for (int pass = 0; pass < 2; pass++) {
        memset(sum, 0, sizeof(double) * (size_t)ncls);
        memset(wsum, 0, sizeof(double) * (size_t)ncls);
        int run = -1;           /* the class whose sums are in s and ws */
        double s = 0, ws = 0, lv = 0, sc = 0;
        for (long j = 0; j < m; j++) {
            const ts_offset_obs *o = &obs[j];
            if (o->cls < 0)
                continue;
            if (o->cls != run) {
                if (run >= 0)
                    sum[run] = s, wsum[run] = ws;
                run = o->cls;
                s = sum[run], ws = wsum[run], lv = level[run], sc = scale[run];
            }
            double x = o->v - off[o->a] - off[o->b];
            if (pass == 0) {
                double w = isfinite(lv) ? huber_weight(x - lv, sc) : 1;
                s += w * x;
                ws += w;
            } else {
                s += fabs(x - lv);
                ws += 1;
            }
        }
        if (run >= 0)
            sum[run] = s, wsum[run] = ws;
        for (int c = 0; c < ncls; c++) {
            if (pass == 0)
                level[c] = wsum[c] > 0 ? sum[c] / wsum[c] : NAN;
            else
                scale[c] = wsum[c] > 0 ? 1.25 * sum[c] / wsum[c] : 0;
        }
    }
}

/* Room for the two levels of ncls classes in w, carried from fit to fit (a class new to w has
 * none yet: NAN). 0, or -1 when out of memory. */
static int reserve_two_levels(ts_offset_work *w, int ncls)
{
    if (w->nlevels >= ncls)
        return 0;
    double *lo = realloc(w->lower, sizeof(double) * (size_t)ncls);
    if (lo)
        w->lower = lo;
    double *up = lo ? realloc(w->upper, sizeof(double) * (size_t)ncls) : NULL;
    if (!up)
        return -1;
    w->upper = up;
    for (int c = w->nlevels; c < ncls; c++)
        w->lower[c] = w->upper[c] = NAN;
    w->nlevels = ncls;
    return 0;
}

/* The two levels of each two-level class (Lloyd's 2-means on its residuals v - off[a] - off[b],
 * from the last fit's levels or, the first time, from its lowest and highest residual), and
 * its scale: the mean absolute residual from each equation's own level. A class all of whose
 * residuals fall on one side has one level (lower == upper). */
static void fit_two_levels(const ts_offset_obs *obs, long m, int ncls, const double *off,
                           const unsigned char *two_level, double *lower, double *upper,
                           double *scale)
{
    for (int c = 0; c < ncls; c++) {
        if (!two_level[c])
            continue;
        double lo = lower[c], up = upper[c];
        if (!(up > lo)) {
            lo = INFINITY, up = -INFINITY;
            for (long j = 0; j < m; j++)
                if (obs[j].cls == c) {
                    double x = obs[j].v - off[obs[j].a] - off[obs[j].b];
                    lo = fmin(lo, x);
                    up = fmax(up, x);
                }
            if (!(up >= lo))
                continue;           /* (no equation) */
        }
        for (int it = 0, moved = 1; it < LLOYD_STEPS && moved && up > lo; it++) {
            double split = 0.5 * (lo + up), s0 = 0, s1 = 0;
            long n0 = 0, n1 = 0;
            for (long j = 0; j < m; j++)
                if (obs[j].cls == c) {
                    double x = obs[j].v - off[obs[j].a] - off[obs[j].b];
                    if (x < split)
                        s0 += x, n0++;
                    else
                        s1 += x, n1++;
                }
            double lo0 = lo, up0 = up;
            if (n0 == 0 || n1 == 0)
                lo = up = (s0 + s1) / (double)(n0 + n1);
            else
                lo = s0 / (double)n0, up = s1 / (double)n1;
            moved = lo != lo0 || up != up0;     /* (the same split again: converged) */
        }
        double split = 0.5 * (lo + up), dev = 0;
        long n = 0;
        for (long j = 0; j < m; j++)
            if (obs[j].cls == c) {
                double x = obs[j].v - off[obs[j].a] - off[obs[j].b];
                dev += fabs(x - (x < split ? lo : up));
                n++;
            }
        lower[c] = lo;
        upper[c] = up;
        scale[c] = n > 0 ? 1.25 * dev / (double)n : 0;
    }
}

int ts_fit_host_offsets(int n, const ts_offset_obs *obs, long m, int ncls, double *off,
                        double *level, int sweeps, const double *prior, const double *prior_w,
                        double *weight)
{
    ts_offset_work w = {0};
    int rc = ts_fit_host_offsets_work(n, obs, m, ncls, off, level, sweeps, prior, prior_w,
                                      weight, &w);
    ts_offset_work_free(&w);
    return rc;
}

int ts_fit_host_offsets_work(int n, const ts_offset_obs *obs, long m, int ncls, double *off,
                             double *level, int sweeps, const double *prior,
                             const double *prior_w, double *weight, ts_offset_work *work)
{
    long *start;
    node_eq *eq;
    double *scale = calloc((size_t)ncls + 1, sizeof(double));
    double *sum = malloc(sizeof(double) * ((size_t)ncls + 1));
    double *wsum = malloc(sizeof(double) * ((size_t)ncls + 1));
    double *precision = malloc(sizeof(double) * ((size_t)ncls + 1));
    /* without a caller's array the levels are the fit's own, and the last sweep's are not
     * worked out (only the offsets are wanted) */
    double *own_level = level ? NULL : malloc(sizeof(double) * ((size_t)ncls + 1));
    int want_levels = level != NULL;
    if (!level)
        level = own_level;
    const unsigned char *two = work->two_level;
    if (!scale || !sum || !wsum || !precision || !level ||
        index_by_node(n, obs, m, work, &start, &eq) || (two && reserve_two_levels(work, ncls))) {
        free(scale);
        free(sum);
        free(wsum);
        free(precision);
        free(own_level);
        return -1;
    }
    for (int c = 0; c < ncls; c++)
        level[c] = NAN;
    fit_levels(obs, m, ncls, off, level, scale, sum, wsum);
    if (two)
        fit_two_levels(obs, m, ncls, off, two, work->lower, work->upper, scale);
    for (int s = 0; s < sweeps; s++) {
        /* The shrinkage: every offset pulled towards 0 as by a prior of the hosts' own spread
         * (the offsets' mean square, plus the noisiest class's scale squared, so that a fit
         * starting from 0 is not held there), worked out afresh every sweep. Fixed at the
         * first sweep's scales, one equation of the noisiest class, it fed on itself: a fit
         * started from a good one found a small scale and so a strong shrinkage, the offsets
         * pulled in widened the residuals, the equations weighed less against it, and the
         * next fit ended with every offset near 0 (1024 nodes, 4 rounds of pairs: a mean error
         * of 1.7 us against 0.4, fit after fit alternating between the two). */
        double noisiest = 0;
        for (int c = 0; c < ncls; c++) {
            double sc = scale[c] > 0 ? scale[c] : 1;
            precision[c] = 1 / (sc * sc);
            if (scale[c] > noisiest)
                noisiest = scale[c];
        }
        double spread = 0;
        for (int i = 0; i < n; i++)
            spread += off[i] * off[i];
        spread /= n > 0 ? n : 1;
        double shrink = noisiest > 0 ? 1 / (spread + noisiest * noisiest) : 1;
        for (int i = 0; i < n; i++) {
            if (work->keep_unfitted && start[i] == start[i + 1])
                continue;
            /* the prior (an earlier fit) or the shrinkage: one equation saying 0 */
            double den = prior ? prior_w[i] + shrink : shrink, num = prior ? den * prior[i] : 0;
            for (long k = start[i]; k < start[i + 1]; k++) {
                const node_eq *o = &eq[k];
                if (!isfinite(level[o->cls]))
                    continue;
                double x = o->v - off[o->other] - level[o->cls];
                if (two && two[o->cls]) {       /* against the nearer of its two levels */
                    double lo = work->lower[o->cls], up = work->upper[o->cls];
                    x = o->v - off[o->other] - (x - off[i] < 0.5 * (lo + up) - level[o->cls] ? lo : up);
                }
                /* a class's equations count by its precision: the far pairs of a loaded top
                 * region vary by several us with the load, a leaf's pairs by the jitter */
                double sc = scale[o->cls] > 0 ? scale[o->cls] : 1;
                double w = huber_precision(x - off[i], sc, precision[o->cls]);
                num += w * x;
                den += w;
            }
            off[i] = num / den;
            if (s == sweeps - 1 && weight)
                weight[i] = den;
        }
        if (want_levels || s < sweeps - 1) {
            fit_levels(obs, m, ncls, off, level, scale, sum, wsum);
            if (two)
                fit_two_levels(obs, m, ncls, off, two, work->lower, work->upper, scale);
        }
    }
    /* centre: the offsets' mean moves into the levels (twice: a pair has two hosts); with a
     * prior, the prior holds them where they were */
    if (!prior) {
        double mean = 0;
        for (int i = 0; i < n; i++)
            mean += off[i];
        mean /= n > 0 ? n : 1;
        for (int i = 0; i < n; i++)
            off[i] -= mean;
        for (int c = 0; c < ncls; c++) {
            level[c] += 2 * mean;
            if (two && two[c])
                work->lower[c] += 2 * mean, work->upper[c] += 2 * mean;
        }
    }
    free(own_level);
    free(scale);
    free(sum);
    free(wsum);
    free(precision);
    return 0;
}
