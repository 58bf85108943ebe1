/* toposcope — discovery methods (which pairs to measure, in which rounds) and link plans.
 *
 * Every method drives a ts_probe_engine, so it runs unchanged on the simulator and on real
 * node agents, under the engine's deadline, and returns a tree in RTT units (ts_utree, see
 * infer.h). Baselines reproduce the seed papers in the same harness:
 *   allpairs — Bufe 2014 §2.3.2: all n(n-1)/2 pairs in T(n) = ceil(n/2) + T(ceil(n/2)) rounds,
 *              tree from the full matrix (ts_infer_matrix);
 *   shirai   — Shirai, Saito, Taura HPDC'07: incremental insertion with close-host search and
 *              min/max intervals, O(N d) measurements, sequential by nature;
 *   pmm      — Liu et al.: on a known tree, independent paths by Gaussian elimination over all
 *              n(n-1)/2 paths and Welch-Powell colouring into rounds (a link plan: pmm.h).
 * This header: the dispatch and the all-pairs baseline (lib/discover/discover.c); the fast method
 * and Shirai's have their own (fast.h, shirai.h). */
#ifndef TOPOSCOPE_DISCOVER_H
#define TOPOSCOPE_DISCOVER_H

#include "toposcope/error.h"
#include "toposcope/fabric.h"
#include "toposcope/infer.h"
#include "toposcope/probe.h"

typedef enum ts_method {
    TS_METHOD_FAST = 0,
    TS_METHOD_ALLPAIRS,
    TS_METHOD_SHIRAI,
} ts_method;

int ts_method_parse(const char *name, ts_method *out);
const char *ts_method_name(ts_method m);

/* Run a discovery method; on return `tree` holds the best tree for the pairs measured (partial
 * when the engine's deadline cut the plan: e->partial). Nodes that were never measured are
 * listed in rep->unmeasured and are not in the tree. tree and rep are initialised here (so are
 * they by each ts_discover_* method); on error free them with ts_utree_free and
 * ts_infer_report_free. */
int ts_discover(ts_method m, ts_probe_engine *e, ts_utree *tree, ts_infer_report *rep,
                ts_error *err);

/* Bufe's all-pairs schedule: fills `pairs` (n(n-1)/2 entries) round after round and
 * round_start (nrounds+1 entries). Caller frees both. */
int ts_allpairs_schedule(int n, ts_pair **pairs, int **round_start, int *nrounds, ts_error *err);

int ts_discover_allpairs(ts_probe_engine *e, ts_utree *tree, ts_infer_report *rep, ts_error *err);

#endif
