/* toposcope — shared by the discovery methods (private to lib/). */
#ifndef TOPOSCOPE_METHOD_H
#define TOPOSCOPE_METHOD_H

#include "toposcope/discover.h"

/* Start a method's run: an empty tree, an empty report, and at least 2 nodes to measure. */
int ts_method_begin(const char *method, ts_probe_engine *e, ts_utree *tree, ts_infer_report *rep,
                    ts_error *err);

/* The sampling rule a baseline measures its pairs with: the engine's, its estimator resolved
 * (TS_ESTIMATE_DEFAULT: `own`), and a fixed e->samples_first samples per pair when set; under
 * the minimum, without it, rule.min_samples per pair. Every pair of one run thus takes the same
 * count, so minima compare without a correction for their sample counts. */
ts_stop_rule ts_method_rule(const ts_probe_engine *e, ts_estimator own);

#endif
