/* toposcope — probing: the transport interface, the per-pair sampler with its stopping rule,
 * and the probe engine that runs rounds of disjoint pairs against a deadline.
 *
 * The engine and the planners never know which transport they drive: the simulator (virtual
 * clock) or UDP sockets between node agents (real clock). A transport executes one round at a
 * time; each pair samples with the shared ts_sampler, so the stopping rule is the same code in
 * simulation and on real nodes. */
#ifndef TOPOSCOPE_PROBE_H
#define TOPOSCOPE_PROBE_H

#include <stdint.h>
#include "toposcope/error.h"

typedef struct ts_pair {
    int a, b;                      /* node indices; a initiates the ping-pong */
} ts_pair;

/* Which statistic of a pair's samples the discovery methods use as its round trip.
 *   TS_ESTIMATE_DEFAULT  each method's own: the minimum for fast, the mean for the baselines
 *   TS_ESTIMATE_MEAN     the mean of the inliers, sampled until its interval is tight (below)
 *   TS_ESTIMATE_MIN      the minimum of exactly min_samples samples: the noise of a round trip
 *                        is one-sided (a tight lower tail, a long upper one), so the minimum of
 *                        a few samples sits closer to the noise-free round trip than the mean
 *                        of many. Minima of equal sample counts share their bias (it ends up in
 *                        the hosts' pendant edges), so a method compares only those. */
typedef enum ts_estimator {
    TS_ESTIMATE_DEFAULT = 0,
    TS_ESTIMATE_MEAN,
    TS_ESTIMATE_MIN,
} ts_estimator;

int ts_estimator_parse(const char *name, ts_estimator *out);   /* "mean", "min", "default" */
const char *ts_estimator_name(ts_estimator e);

/* Confidence-interval stopping in the spirit of LogP/MPI: keep sampling until the
 * confidence interval of the mean (outliers above median + 5 MAD set aside) is within
 * eps of the mean, at least min_samples and at most max_samples. Under TS_ESTIMATE_MIN the
 * sampler takes exactly min_samples and estimates the minimum (eps is not used). */
typedef struct ts_stop_rule {
    int min_samples;
    int max_samples;
    double eps;                    /* relative half-width, e.g. 0.03 */
    double confidence;             /* two-sided level, e.g. 0.90 */
    int max_lost;                  /* losses in a row after which the peer counts as unreachable */
    ts_estimator estimator;        /* the engine's sampler; the agents' wire does not carry it
                                    * (they sample for the mean), so methods that must work on
                                    * agents read min_us themselves (ts_pair_estimate) */
} ts_stop_rule;

#define TS_SAMPLES_MAX 256         /* hard cap of max_samples */

void ts_stop_rule_default(ts_stop_rule *r);
int ts_stop_rule_check(const ts_stop_rule *r, ts_error *err);

enum {
    TS_PAIR_TIGHT = 1u << 0,       /* stopped because the interval was tight */
    TS_PAIR_CAPPED = 1u << 1,      /* stopped at max_samples */
    TS_PAIR_UNREACHABLE = 1u << 2, /* max_lost losses in a row, no sample */
    TS_PAIR_DEADLINE = 1u << 3,    /* cut by the deadline */
};

typedef struct ts_pair_stats {
    int a, b;
    int samples;                   /* answered probes */
    int lost;                      /* timed out probes */
    unsigned flags;
    double min_us, median_us, mad_us;
    double mean_us;                /* mean of every answered sample, spikes included (>= est_us) */
    double est_us;                 /* the estimate the planners use (see ts_sampler_finish) */
    double ci_us;                  /* half-width of the confidence interval of est_us (of the
                                    * minimum: z * (k-1)/k * (second lowest - lowest)) */
    double time_us;                /* time the pair spent sampling, timeouts included */
} ts_pair_stats;

/* Sampler for one pair: feed it samples until ts_sampler_done() says stop. */
typedef struct ts_sampler {
    const ts_stop_rule *rule;
    int n, lost, lost_run;
    double x[TS_SAMPLES_MAX];
    double time_us;
} ts_sampler;

void ts_sampler_start(ts_sampler *s, const ts_stop_rule *rule);
void ts_sampler_add(ts_sampler *s, double rtt_us);
void ts_sampler_add_loss(ts_sampler *s, double timeout_us);
int ts_sampler_done(const ts_sampler *s);
/* Summarize; flags gets TS_PAIR_DEADLINE or'ed in by the caller when cut short. */
void ts_sampler_finish(const ts_sampler *s, int a, int b, ts_pair_stats *out);
/* Sample one pair from scratch until the rule stops: `probe` returns one round trip in µs, or a
 * negative value for a lost probe (which costs timeout_us). A probe that would end after
 * `budget_us` of the pair's time is abandoned and the pair flagged TS_PAIR_DEADLINE. */
typedef double (*ts_probe_fn)(void *ctx);
void ts_sample_pair(const ts_stop_rule *rule, ts_probe_fn probe, void *ctx, double timeout_us,
                    double budget_us, int a, int b, ts_pair_stats *out);

/* The pair's round trip under an estimator (TS_ESTIMATE_MIN: min_us, else est_us), whatever the
 * sampler computed est_us for. */
double ts_pair_estimate(const ts_pair_stats *s, ts_estimator est);

/* Robust statistics helpers (exposed for tests and other modules). */
double ts_median(double *x, int n);            /* reorders x */
double ts_mad(const double *x, int n, double median);  /* raw MAD (not scaled) */
double ts_student_t(double confidence, int dof);       /* two-sided quantile */
double ts_normal_quantile(double p);                   /* standard normal, lower tail p */
double ts_chi_square_quantile(double p, double dof);   /* chi-square, lower tail p */

/* ---- transport interface ---- */
typedef struct ts_transport ts_transport;
typedef struct ts_transport_ops {
    /* Run one round: pairs are disjoint (no node in two pairs); each samples with the rule
     * until it stops or until deadline_us on this transport's clock. out[i] for pairs[i]. */
    int (*run_round)(ts_transport *t, const ts_pair *pairs, int npairs, const ts_stop_rule *rule,
                     double deadline_us, ts_pair_stats *out, ts_error *err);
    double (*now_us)(ts_transport *t);
    /* The leader decides from measured data: gather results from and scatter a plan to all
     * agents. The simulator charges 2 * ceil(log2 N) round trips. */
    int (*control_step)(ts_transport *t, double deadline_us, ts_error *err);
    /* CPU seconds the transport spent itself (the simulator drawing samples), left out of the
     * planning cost reports; NULL: none worth counting. */
    double (*cpu_s)(ts_transport *t);
} ts_transport_ops;

struct ts_transport {
    const ts_transport_ops *ops;
    void *impl;
    int nnodes;
};

/* ---- probe engine ---- */
typedef struct ts_pairdb ts_pairdb;   /* measured pairs, keyed by unordered pair */

typedef struct ts_probe_counters {
    long probes;                   /* pairs measured (a pair measured twice counts twice) */
    long samples;                  /* answered probes */
    long samples_most;             /* the most one pair's measurement had answered */
    long lost;
    long rounds;
    long control_steps;
} ts_probe_counters;

typedef struct ts_probe_engine {
    ts_transport *tp;
    ts_stop_rule rule;
    double start_us, deadline_us;  /* transport clock */
    int partial;                   /* the deadline cut something */
    ts_probe_counters count;
    ts_pairdb *db;
    int *busy_mark;                /* scratch for the disjointness check */
    int busy_gen;
    /* Samples per pair the discovery methods take at first, and the most a method's sequential
     * re-measurement takes (fast doubles its samples where a decision is not significant yet);
     * 0: each method's own (fast: 3 and 48; the baselines' estimator decides theirs). Set by
     * toposcope sim --samples, --samples-max. The estimator they read pairs with (0 =
     * TS_ESTIMATE_DEFAULT: each method's own), set into their rounds' rules; the engine's own
     * rule keeps the mean for stages after discovery (the link stage). */
    int samples_first, samples_max;
    ts_estimator estimator;
    /* Mixed into the discovery planners' random streams. 0 (ts_probe_engine_init): they depend
     * on the node count only, so one job size always plans alike; other values vary the plans
     * for robustness checks (toposcope sim --plan-seed). */
    uint64_t plan_seed;
    /* The least one switch level of this fabric adds to a round trip, as the site knows it
     * (toposcope.yaml level_step_ns, --level-step-ns); 0: the least any real fabric's adds
     * (fast.c, LEVEL_STEP_FLOOR_US). A job whose nodes hang from one switch is a measured star
     * only once a level this large would have shown, so a larger value lets more such jobs be
     * measured, and one larger than the fabric's true smallest step can hide a level. */
    double least_level_step_us;
} ts_probe_engine;

int ts_probe_engine_init(ts_probe_engine *e, ts_transport *tp, const ts_stop_rule *rule,
                         double budget_us, ts_error *err);
void ts_probe_engine_free(ts_probe_engine *e);
/* Run one round. Pairs must be disjoint (TS_EINPUT otherwise). Returns TS_ELIMIT without
 * measuring when the deadline has passed (e->partial is set). out may be NULL. */
int ts_probe_round(ts_probe_engine *e, const ts_pair *pairs, int npairs, ts_pair_stats *out,
                   ts_error *err);
/* Same, with a rule other than the engine's default for this round. */
int ts_probe_round_rule(ts_probe_engine *e, const ts_pair *pairs, int npairs,
                        const ts_stop_rule *rule, ts_pair_stats *out, ts_error *err);
int ts_probe_control(ts_probe_engine *e, ts_error *err);
double ts_probe_now(const ts_probe_engine *e);
double ts_probe_remaining_us(const ts_probe_engine *e);
/* Latest stats of an unordered pair, or NULL if never measured. */
const ts_pair_stats *ts_probe_lookup(const ts_probe_engine *e, int a, int b);
/* Estimate used for distances; NAN when unmeasured or unreachable. */
double ts_probe_distance(const ts_probe_engine *e, int a, int b);
long ts_probe_npairs(const ts_probe_engine *e);
const ts_pair_stats *ts_probe_pair_at(const ts_probe_engine *e, long i);

#endif
