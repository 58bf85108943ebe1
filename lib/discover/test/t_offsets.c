/* Hosts' round-trip offsets (lib/discover/offsets.c): recovered from random pairs of two
 * classes, with one-sided noise and a share of pairs of another class mixed in (near pairs of a
 * region not yet cut); a prior carries an earlier fit; no offset moves without data; a fit
 * carried on from the last settles where one from 0 does; and a class of two levels in equal
 * shares, fitted as such, gives the hosts back. */
#include <math.h>
#include <stdlib.h>
#include "tap.h"
#include "discover/offsets.h"
#include "toposcope/rng.h"

#define N 64
#define M 2048

/* pairs of random nodes: v = host[a] + host[b] + level[cls] + exponential noise; a share
 * `mixed` of them sits `drop` us lower but is labelled like the rest */
static void make_obs(ts_offset_obs *o, const double *host, ts_rng *r, double mixed, double drop)
{
    static const double level[2] = {10, 14};
    for (int j = 0; j < M; j++) {
        int a = (int)ts_rng_below(r, N), b = (int)ts_rng_below(r, N - 1);
        b += b >= a;
        int cls = j % 2;
        double v = host[a] + host[b] + level[cls] + ts_rng_exponential(r, 0.5);
        if (ts_rng_uniform(r) < mixed)
            v -= drop;
        o[j] = (ts_offset_obs){a, b, cls, v};
    }
}

static double worst_error(const double *host, const double *off)
{
    double mh = 0, mo = 0, worst = 0;
    for (int i = 0; i < N; i++)
        mh += host[i] / N, mo += off[i] / N;
    for (int i = 0; i < N; i++)
        worst = fmax(worst, fabs((off[i] - mo) - (host[i] - mh)));
    return worst;
}

/* mean |error| of off against host over n nodes, both centred */
static double mean_error(const double *host, const double *off, int n)
{
    double mh = 0, mo = 0, sum = 0;
    for (int i = 0; i < n; i++)
        mh += host[i] / n, mo += off[i] / n;
    for (int i = 0; i < n; i++)
        sum += fabs((off[i] - mo) - (host[i] - mh));
    return sum / n;
}

/* A fit carried on from the last one (fast.c fits every batch, warm-started) must settle where
 * a fit from 0 does. 1024 nodes in 4 rounds of random disjoint pairs (4 equations a node, as
 * a depth's first batch of a big region), minima of three draws of kernel UDP's skewed
 * jitter: with the shrinkage fixed at the first sweep's scales, a fit started from a good one
 * pulled every offset towards 0 (mean error 1.7 us against 0.4, alternating fit by fit). */
static void warm_start(ts_rng *r)
{
    enum { NODES = 1024, ROUNDS = 4 };
    double *host = malloc(sizeof(double) * NODES), *off = calloc(NODES, sizeof(double));
    int *perm = malloc(sizeof(int) * NODES);
    ts_offset_obs *o = malloc(sizeof *o * (NODES / 2) * ROUNDS);
    long m = 0;
    for (int i = 0; i < NODES; i++)
        host[i] = ts_rng_range(r, -4.5, 4.5);
    for (int round = 0; round < ROUNDS; round++) {
        for (int i = 0; i < NODES; i++)
            perm[i] = i;
        for (int i = NODES - 1; i > 0; i--) {
            int j = (int)ts_rng_below(r, (uint64_t)i + 1), t = perm[i];
            perm[i] = perm[j], perm[j] = t;
        }
        for (int i = 0; i < NODES; i += 2) {
            double least = INFINITY;
            for (int s = 0; s < 3; s++)
                least = fmin(least, 1.5 * exp(0.92 * ts_rng_normal(r)));
            int a = perm[i], b = perm[i + 1];
            o[m++] = (ts_offset_obs){a, b, 0, 60 + host[a] + host[b] + least};
        }
    }
    double first = 0, worst = 0;
    for (int fit = 0; fit < 4; fit++) {
        ts_fit_host_offsets(NODES, o, m, 1, off, NULL, 3, NULL, NULL, NULL);
        double e = mean_error(host, off, NODES);
        if (fit == 0)
            first = e;
        worst = fmax(worst, e);
    }
    ok(first < 0.6, "sparse pairs: mean offset error %.3f us from 0", first);
    ok(worst < 1.25 * first, "fits carried on from the last stay as good (worst %.3f us)", worst);
    free(host);
    free(off);
    free(perm);
    free(o);
}

/* A region not yet cut whose class holds two levels in equal shares: two pods of 32 nodes,
 * pairs within a pod 20 us below the pairs across (the top of two pods of 64 over RDMA, the
 * raw round trips 10 and 30 us apart, hosts within 2 us). The one-level fit takes each node's
 * share of near pairs into its offset; fitted on two levels (ts_offset_work.two_level) the
 * class gives the hosts back. */
static void two_levels(ts_rng *r)
{
    double host[N], one[N] = {0}, two[N] = {0};
    ts_offset_obs *o = malloc(sizeof *o * M);
    for (int i = 0; i < N; i++)
        host[i] = ts_rng_range(r, -2, 2);
    for (int j = 0; j < M; j++) {
        int a = (int)ts_rng_below(r, N), b = (int)ts_rng_below(r, N - 1);
        b += b >= a;
        double level = a % 2 == b % 2 ? 10 : 30;
        o[j] = (ts_offset_obs){a, b, 0, host[a] + host[b] + level + ts_rng_exponential(r, 0.5)};
    }
    static const unsigned char two_level[1] = {1};
    ts_offset_work w = {0};
    ok(ts_fit_host_offsets_work(N, o, M, 1, one, NULL, 6, NULL, NULL, NULL, &w) == 0,
       "one level: fit runs");
    w.two_level = two_level;
    ok(ts_fit_host_offsets_work(N, o, M, 1, two, NULL, 6, NULL, NULL, NULL, &w) == 0,
       "two levels: fit runs");
    double e1 = worst_error(host, one), e2 = worst_error(host, two);
    ok(e2 < 0.4 && e2 < 0.5 * e1, "pairs on two levels 20 us apart, half each: every offset "
       "within %.3f us fitted on two levels, %.3f on one", e2, e1);
    ts_offset_work_free(&w);
    free(o);
}

int main(void)
{
    ts_rng r;
    ts_rng_seed(&r, 7);
    double host[N], off[N], level[2], weight[N];
    ts_offset_obs *o = malloc(sizeof *o * M);
    for (int i = 0; i < N; i++)
        host[i] = ts_rng_range(&r, -9, 9);     /* +-15% of a 60 us kernel stack */

    /* clean: 64 equations per node, noise sd 0.5 us: the offsets to ~0.15 us */
    make_obs(o, host, &r, 0, 0);
    for (int i = 0; i < N; i++)
        off[i] = 0;
    ok(ts_fit_host_offsets(N, o, M, 2, off, level, 6, NULL, NULL, weight) == 0, "fit runs");
    double e = worst_error(host, off);
    ok(e < 0.4, "clean pairs: every offset within 0.4 us of the truth (worst %.3f)", e);
    double mean = 0;
    for (int i = 0; i < N; i++)
        mean += off[i] / N;
    ok(fabs(mean) < 1e-9, "without a prior the offsets are centred (mean %.2g)", mean);
    ok(fabs(level[1] - level[0] - 4) < 0.2, "the classes' levels 4 us apart (%.3f)",
       level[1] - level[0]);

    /* 10% of the pairs 5 us low (near pairs in a far class): the robust fit hardly moves */
    make_obs(o, host, &r, 0.10, 5);
    for (int i = 0; i < N; i++)
        off[i] = 0;
    ts_fit_host_offsets(N, o, M, 2, off, level, 6, NULL, NULL, weight);
    e = worst_error(host, off);
    ok(e < 0.8, "10%% of pairs 5 us low: every offset within 0.8 us (worst %.3f)", e);

    /* a prior: the second half of the data alone, carried on from a fit of the first */
    make_obs(o, host, &r, 0, 0);
    double prior[N], prior_w[N];
    for (int i = 0; i < N; i++)
        off[i] = 0;
    ts_fit_host_offsets(N, o, M / 2, 2, off, level, 6, NULL, NULL, prior_w);
    for (int i = 0; i < N; i++)
        prior[i] = off[i];
    ts_fit_host_offsets(N, o + M / 2, M / 2, 2, off, level, 6, prior, prior_w, weight);
    e = worst_error(host, off);
    ok(e < 0.4, "prior carried on: every offset within 0.4 us (worst %.3f)", e);
    int heavier = 1;
    for (int i = 0; i < N; i++)
        heavier &= weight[i] > prior_w[i];
    ok(heavier, "the weight behind each offset grows with the new pairs");

    /* a node without pairs keeps its prior (or 0 without one) */
    for (int j = 0; j < M; j++)
        if (o[j].a == 0 || o[j].b == 0)
            o[j].cls = -1;
    for (int i = 0; i < N; i++)
        off[i] = 0;
    ts_fit_host_offsets(N, o, M, 2, off, level, 6, NULL, NULL, NULL);
    double h1[N - 1], o1[N - 1];
    for (int i = 1; i < N; i++)
        h1[i - 1] = host[i], o1[i - 1] = off[i];
    double mh = 0, mo = 0, worst = 0;
    for (int i = 0; i < N - 1; i++)
        mh += h1[i] / (N - 1), mo += o1[i] / (N - 1);
    for (int i = 0; i < N - 1; i++)
        worst = fmax(worst, fabs((o1[i] - mo) - (h1[i] - mh)));
    ok(worst < 0.4,
       "pairs left out (class < 0) take no part: the others within 0.4 us (worst %.3f)", worst);
    prior[0] = 3.5;
    prior_w[0] = 10;
    ts_fit_host_offsets(N, o, M, 2, off, level, 6, prior, prior_w, NULL);
    ok(fabs(off[0] - 3.5) < 1e-9, "a node without pairs keeps its prior (%.3f)", off[0]);
    free(o);
    warm_start(&r);
    two_levels(&r);
    return done_testing();
}
