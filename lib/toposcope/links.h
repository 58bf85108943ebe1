/* toposcope — per-link latency on a known tree: the identifiable links, a link-coverage plan
 * built combinatorially from the tree, its execution on the probe engine, a weighted least-
 * squares solve with confidence intervals and residuals, and the mapping of the result onto a
 * truth fabric (for the simulator).
 *
 * What round trips can identify. RTT(a,b) = 2 * (one-way latencies of the links on the path)
 * + (h_a + h_b) / 2, so a node's access link and its host overhead always travel together: the
 * identifiable quantity is the node's "pendant" one-way latency link_us + host_us / 4. A switch
 * with one child and a parent (or a root with two children) joins its two links: every path
 * uses both or neither, and only their sum can be known (PMM's aggregated link). Links that no
 * node pair crosses (subtrees without nodes, the chain above the nodes' common ancestor) are not
 * measurable at all. The identifiable unknowns ("links" below) are therefore the edges of the
 * tree spanned by the nodes with degree-2 switches contracted; their number is the rank any
 * plan can reach.
 *
 * Units: estimates are one-way microseconds, like ts_vertex.link_us; pair residuals are round
 * trips (RTT µs) like the measurements. */
#ifndef TOPOSCOPE_LINKS_H
#define TOPOSCOPE_LINKS_H

#include <stdio.h>
#include "toposcope/discover.h"
#include "toposcope/error.h"
#include "toposcope/fabric.h"
#include "toposcope/model.h"
#include "toposcope/probe.h"

/* The identifiable links of a tree. Link k consists of the tree links (named by their lower
 * vertex) members[first[k] .. first[k+1]-1], listed from the bottom of the chain up; a chain
 * through a root with two children lists one side bottom-up, then the other. */
typedef struct ts_link_set {
    int nlinks;
    int *first;              /* nlinks + 1 entries */
    int *members;            /* vertex indices */
    int *of_vertex;          /* vertex -> link, TS_NONE for the root and unmeasurable links */
    int nunmeasurable;       /* tree links no node pair crosses */
    int span_root;           /* lowest common ancestor of all nodes */
} ts_link_set;

int ts_link_set_build(const ts_fabric *tree, ts_link_set *out, ts_error *err);
void ts_link_set_free(ts_link_set *s);
/* The links a node pair's path crosses, each once, ascending; returns the count (at most max
 * written; a path has at most 2 * depth links). */
int ts_link_set_path(const ts_link_set *s, const ts_fabric *tree, int node_a, int node_b,
                     int *out, int max);

/* ---- planning ---- */

#define TS_LINK_EXTRA_ROUNDS_DEFAULT 8
#define TS_LINK_EXTRA_ROUNDS_MAX 256

typedef struct ts_link_plan_options {
    int redundancy;          /* fill every round's idle nodes with extra link-disjoint pairs (1) */
    int extra_rounds;        /* rounds of such pairs alone after the core (TS_LINK_EXTRA_ROUNDS_DEFAULT) */
} ts_link_plan_options;

void ts_link_plan_options_default(ts_link_plan_options *o);

/* The tree plan. Core: exactly rank pairs whose paths identify every link of the set (no
 * elimination: chosen switch by switch, bottom-up: at a switch with k >= 3 branches k pairs
 * between its branches forming odd cycles, at a switch with 2 branches one pair inside and one
 * completing a three-point triangle with a node outside). Rounds: greedy colouring with no link
 * (hence no node) used twice in a round. With redundancy, every round then gets as many extra
 * link-disjoint pairs as fit (matched bottom-up switch by switch), so the solve has residuals.
 * out->rank is the number of identifiable links; out->paths_examined the core pairs. */
int ts_link_plan_tree(const ts_fabric *tree, ts_link_plan *out, ts_error *err);
/* o NULL: the defaults. */
int ts_link_plan_tree_opts(const ts_fabric *tree, const ts_link_plan_options *o, ts_link_plan *out,
                           ts_error *err);

/* ---- measurement and solve ---- */

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

/* ---- truth (simulator) ---- */

/* Each estimated link mapped onto the truth fabric by node sets: an estimated link splits the
 * nodes in two, and so does every truth link; the truth links with the same split (a chain when
 * the truth has degree-2 switches) are its names. truth_us sums their one-way latencies, a
 * node's access link counted as link_us + (its mean host part + mean jitter) / 4 (the pendant:
 * what the node adds to every round trip on average, see linkreport.c). NAN when nothing matches
 * (the inferred tree has a split the truth does not). */
typedef struct ts_link_truth {
    int nlinks;
    int *first;              /* nlinks + 1 entries into members */
    int *members;            /* truth vertex indices */
    double *truth_us;
} ts_link_truth;

/* model may be NULL: the truth fabric's own link_us/host_us (ts_model_realize writes them). */
int ts_link_truth_map(const ts_fabric *tree, const ts_link_result *res, const ts_fabric *truth,
                      const ts_model *model, ts_link_truth *out, ts_error *err);
void ts_link_truth_free(ts_link_truth *t);
/* Median of |est - truth| / truth over the links that have both; NAN when none. */
double ts_link_rel_err_median(const ts_link_result *res, const ts_link_truth *t);

/* links.yaml: one entry per (possibly aggregated) link: link (a name, or a list of names for an
 * aggregate), est_us, lo_us, hi_us, samples, pairs, residual_us; with a truth also truth_us and
 * rel_err, and names taken from the truth. */
int ts_links_write_yaml(const ts_fabric *tree, const ts_link_result *res, const ts_link_truth *t,
                        const ts_fabric *truth, FILE *out);
/* pairs.yaml: the link stage's measured pairs, one entry each: a, b (node names), round,
 * samples, rtt_us (the pair's round-trip estimate) and ci_us, fit_us (what the solved links
 * predict), residual_us and weight (below 1: the robust solve trusted it less). What the link
 * estimates rest on, for an admin checking one, and for calibrating the stacks' overhead. */
int ts_link_pairs_write_yaml(const ts_fabric *tree, const ts_link_result *res, FILE *out);

#endif
