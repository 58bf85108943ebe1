/* toposcope — shared by the discovery methods (private to lib/). */
#ifndef TOPOSCOPE_METHOD_H
#define TOPOSCOPE_METHOD_H

#include "toposcope/discover.h"

/* Start a method's run: an empty tree, an empty report, and at least 2 nodes to measure. */
int ts_method_begin(const char *method, ts_probe_engine *e, ts_utree *tree, ts_infer_report *rep,
                    ts_error *err);

#endif
