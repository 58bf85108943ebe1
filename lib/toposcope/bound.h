/* toposcope — a lower bound on the probing time any discovery method needs to decide a tree at a
 * given accuracy, from a pair's measured round-trip noise, the measured level steps and the
 * fastest round trip (lib/discover/bound.c; the derivation is doc/design.md, "A lower bound on
 * probing time").
 *
 * In short: a node x sits below leaf switch A; the alternative fabric puts it below A's sibling
 * B. The two differ only in x's round trips to the nodes of A and B, each shifted by the level
 * step D. One such sample tells the two apart with probability at most tv(D), the total variation
 * between a pair's round-trip law and the same law shifted by D. By coupling, n samples tell them
 * apart with probability at most 1 - (1 - tv)^n, and Le Cam's two-point argument gives any test
 * alpha + beta >= (1 - tv)^n: an error of at most delta under both needs
 *
 *     n >= ln(1 / (2 delta)) / -ln(1 - tv(D)).
 *
 * A tree exact in a share q of runs decides x's leaf rightly at least as often: delta = 1 - q.
 * x takes part in one probe at a time and each lasts at least the fastest round trip r, so
 *
 *     T >= r * max over levels of n(D_level).
 *
 * It holds for any method, adaptive or not, and grants it for free what no method has: every
 * host's offset, the rest of the tree, no control steps, no barrier between rounds, no
 * interference; it is therefore far below what a real plan takes. */
#ifndef TOPOSCOPE_BOUND_H
#define TOPOSCOPE_BOUND_H

#include "toposcope/error.h"
#include "toposcope/fabric.h"

#define TS_BOUND_LEVELS 2            /* the leaf step and the one above it */

typedef struct ts_time_bound {
    int levels;                      /* level steps measured (0: the fabric has no two sibling
                                      * switches with two nodes each; the bound is NAN) */
    double step_us[TS_BOUND_LEVELS]; /* measured step D, round-trip µs (leaf level first) */
    double tv[TS_BOUND_LEVELS];      /* tv(D) of one sample */
    int samples[TS_BOUND_LEVELS];    /* n(D): samples per node the decision needs */
    double rtt_floor_us;             /* r */
    double error;                    /* delta */
    double bound_s;                  /* r * max n, seconds; NAN when levels == 0 */
} ts_time_bound;

/* Total variation between the law of x[0..n-1] and the same law shifted by delta: the positive
 * variation of W(t) = F(t) - F(t - delta), W read off the empirical distribution on grids of step
 * delta at 8 offsets, the largest kept. For a unimodal law it is the largest share of samples in
 * a window of width delta. Sorts x. 0 when n == 0; 1 when delta <= 0 is not a shift. */
double ts_shift_tv(double *x, int n, double delta_us);

/* Samples per node a decision needs: ceil(ln(1/(2 error)) / -ln(1 - tv)), at least 1. */
int ts_decision_samples(double tv, double error);

/* One round trip between nodes a and b in µs (negative: lost), from whatever measures them. */
typedef double (*ts_rtt_sample_fn)(void *ctx, int node_a, int node_b);

/* The bound for fabric f (the nodes it picks: two below one leaf switch and two below a sibling
 * leaf, then two in a sibling subtree one level up), each of their pairs sampled nsamples times
 * through `sample`: the steps come from the pairs' medians by the four-point difference
 * (d(x,z) + d(y,w) - d(x,y) - d(z,w)) / 2, which cancels every host's offset; the noise law from
 * each pair's samples (the largest tv of them). rtt_floor_us: the fastest round trip measured;
 * exact_share: q. */
int ts_probe_time_bound(const ts_fabric *f, ts_rtt_sample_fn sample, void *ctx, int nsamples,
                        double rtt_floor_us, double exact_share, ts_time_bound *out, ts_error *err);

#endif
