/* toposcope — link estimates reported (lib/links/linkreport.c): mapped onto a truth fabric (for
 * the simulator), and written as links.yaml and pairs.yaml. */
#ifndef TOPOSCOPE_LINKREPORT_H
#define TOPOSCOPE_LINKREPORT_H

#include <stdio.h>
#include "toposcope/error.h"
#include "toposcope/fabric.h"
#include "toposcope/linksolve.h"
#include "toposcope/model.h"

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

/* How the intervals lo_us..hi_us fare against the truth, over the links that have both an
 * interval and a truth (kind: 1 access links, 0 the others, -1 all): the share that covers its
 * truth, and the median half-width relative to the truth. *n gets the links counted; NAN
 * without any. */
typedef struct ts_link_interval_score {
    int n;
    double cover;            /* share of intervals holding the truth */
    double rel_halfwidth;    /* median of (hi_us - lo_us) / 2 / truth_us */
} ts_link_interval_score;

ts_link_interval_score ts_link_interval_score_of(const ts_link_result *res, const ts_link_truth *t,
                                                 int kind);

/* links.yaml: one entry per (possibly aggregated) link: link (a name, or a list of names for an
 * aggregate), est_us, lo_us, hi_us, samples, pairs, residual_us; with a truth also truth_us and
 * rel_err, and names taken from the truth. */
int ts_links_write_yaml(const ts_fabric *tree, const ts_link_result *res, const ts_link_truth *t,
                        const ts_fabric *truth, FILE *out);
/* pairs.yaml: tail_us and tail_se_us (the spikes' share of a mean round trip the solve added to
 * every pair), then the link stage's measured pairs, one entry each: a, b (node names), round,
 * samples, rtt_us (the pair's round-trip estimate, spikes left out) and ci_us, fit_us (what the
 * solved links predict), residual_us and weight (below 1: the robust solve trusted it less).
 * What the link estimates rest on, for an admin checking one, and for calibrating the stacks'
 * overhead. */
int ts_link_pairs_write_yaml(const ts_fabric *tree, const ts_link_result *res, FILE *out);

#endif
