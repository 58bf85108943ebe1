/* toposcope — per-link latency from measured node pairs (lib/links/linksolve.c): a link plan
 * (links.h) run on the probe engine, then a weighted least-squares solve with confidence
 * intervals and residuals.
 *
 * Units: estimates are one-way microseconds, like ts_vertex.link_us; pair residuals are round
 * trips (RTT µs) like the measurements. Which links round trips can identify, and why a node's
 * access link carries a quarter of its host overhead: links.h. */
#ifndef TOPOSCOPE_LINKSOLVE_H
#define TOPOSCOPE_LINKSOLVE_H

#include "toposcope/error.h"
#include "toposcope/fabric.h"
#include "toposcope/links.h"
#include "toposcope/probe.h"

typedef struct ts_link_estimate {
    int first, nmembers;     /* members: res->members[first .. first+nmembers-1], vertex indices */
    int access;              /* holds a node's access link: the estimate includes host_us / 4 */
    double est_us;           /* one-way; NAN when the measured pairs do not determine it */
    double lo_us, hi_us;     /* confidence interval (res->confidence) */
    double se_us;            /* standard error */
    long samples;            /* answered probes of the pairs crossing it */
    int npairs;              /* measured pairs crossing it */
    double residual_us;      /* RMS residual (RTT µs) of those pairs, NAN without any */
} ts_link_estimate;

typedef struct ts_link_measurement {
    int a, b;                /* node indices */
    int round;               /* plan round it was measured in, -1 when given directly */
    int samples;
    double rtt_us, ci_us;    /* the pair's estimate and its interval half-width */
    double fit_us;           /* RTT the solution predicts */
    double residual_us;      /* rtt_us - fit_us */
    double weight;           /* the share of its weight the solve kept: below 1, an outlier */
} ts_link_measurement;

typedef struct ts_link_result {
    int nlinks;
    ts_link_estimate *link;
    int *members;
    int nmeas;
    ts_link_measurement *meas;
    int rounds_planned, rounds_run;
    int partial;             /* the deadline cut the plan: the solve used what was measured */
    int undetermined;        /* links without an estimate */
    double confidence;       /* level of lo_us..hi_us (0.90) */
    double chi2;             /* weighted residual sum of squares */
    int dof;                 /* measurements - determined links (>= 0) */
    double scale;            /* factor applied to the propagated errors: sqrt(max(1, chi2/dof)) */
    double interval_scale;   /* the factor lo_us..hi_us use: scale's upper bound at confidence */
    double tail_us;          /* spikes' share of a mean round trip, pooled (added to every pair) */
    double tail_se_us;       /* its standard error */
    int outliers;            /* measurements the robust solve gave less than their full weight */
    double sim_time_us;      /* transport time the rounds took (ts_link_measure) */
} ts_link_result;

void ts_link_result_free(ts_link_result *r);

typedef struct ts_link_measure_options {
    /* Every pair samples the rule's max_samples (1, default): a round lasts as long as its
     * slowest pair, and among hundreds of pairs one nearly always runs to the cap, so the others
     * would sit idle; 0 keeps the rule's own stopping. */
    int full_rounds;
    /* The tree's node index -> the transport's (NULL: the same). A tree that lacks some of
     * the transport's nodes (discovery never reached them) names its own nodes densely. */
    const int *node_map;
} ts_link_measure_options;

void ts_link_measure_options_default(ts_link_measure_options *o);

/* Run the plan's rounds on the engine (its deadline bounds them: on TS_ELIMIT the remaining
 * rounds are skipped and the result is flagged partial), then solve. One control step hands
 * out the plan, one gathers the results, as in the discovery methods. */
int ts_link_measure(ts_probe_engine *e, const ts_fabric *tree, const ts_link_plan *plan,
                    ts_link_result *res, ts_error *err);
int ts_link_measure_opts(ts_probe_engine *e, const ts_fabric *tree, const ts_link_plan *plan,
                         const ts_link_measure_options *o, ts_link_result *res, ts_error *err);

/* Weighted least squares over given pair measurements (est_us, ci_us, samples of each; pairs
 * without samples are skipped): weights 1/se^2 with se = ci_us / t(confidence, samples-1); the
 * errors propagated through the normal equations (sparse LDL^T, minimum-degree order, the
 * diagonal of the inverse by Takahashi's recurrence) and scaled up by the residuals when they
 * exceed what the pair intervals predicted. */
int ts_link_solve(const ts_fabric *tree, const ts_pair_stats *pairs, int npairs,
                  double confidence, ts_link_result *res, ts_error *err);

#endif
