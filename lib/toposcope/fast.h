/* toposcope — the fast method (lib/discover/fast.c, fast_irregular.c): a discovery method driving a ts_probe_engine, like those of discover.h. */
#ifndef TOPOSCOPE_FAST_H
#define TOPOSCOPE_FAST_H

#include "toposcope/error.h"
#include "toposcope/infer.h"
#include "toposcope/probe.h"

/* Top-down splitting into subtrees measured from inside, all subtrees of a depth side by side. */
int ts_discover_fast(ts_probe_engine *e, ts_utree *tree, ts_infer_report *rep, ts_error *err);

#endif
