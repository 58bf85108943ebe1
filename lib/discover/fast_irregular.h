/* toposcope — the fast method's path for fabrics that are not level-structured (private to lib/).
 *
 * fast.c splits a region by a threshold on RTT, which needs every child of a switch at about
 * the same depth. When its tree shows that the fabric is not like that (nodes at different
 * depths), the fabric is measured again here with an additive-metric method whose distances
 * are kept free of interference (see fast_irregular.c). */
#ifndef TOPOSCOPE_FAST_IRREGULAR_H
#define TOPOSCOPE_FAST_IRREGULAR_H

#include "toposcope/discover.h"

/* 1 when every node of t hangs the same number of switches below the root (a level-structured
 * tree), 0 otherwise; -1 when out of memory. A node of a region left unresolved
 * (unresolved_of[node] >= 0; NULL: none) hangs from one switch over the whole region, which
 * may hide levels: it need only hang no deeper than the others. */
int ts_irr_level_structured(const ts_utree *t, const int *unresolved_of);

/* The RTT below which a pair shares its leaf switch, from measured RTTs d[0..m-1] (reordered):
 * same-leaf pairs are the lowest class and cannot be inflated by other pairs. The cut sits rel
 * above the class's median; *unsure (may be NULL) gets the RTT below which a pair above the
 * cut is worth a second look (2.5 rel above the median).
 * NAN when m == 0. */
double ts_irr_same_leaf_cut(double *d, long m, double rel, double *unsure);

/* Group the nodes with live[i] != 0 by leaf switch, measure one representative per group
 * against every other with one pair per round (nothing else on the wire, so no pair is
 * inflated by another), infer the tree of the groups from that matrix and hang every group's
 * nodes under its leaf switch. *tree is replaced (*replaced = 1) when that succeeds with at
 * least two groups; otherwise it is left as it was, also when the matrix would take more than
 * half the remaining budget. rule: the sampling rule of every round.
 * Returns TS_OK, TS_ELIMIT (deadline), TS_ENOMEM or an inference error. */
int ts_irr_discover(ts_probe_engine *e, const ts_stop_rule *rule, const unsigned char *live,
                    ts_utree *tree, int *replaced, ts_error *err);

#endif
