/* toposcope — accuracy of an inferred tree against the truth.
 *
 * What distances can identify is the unrooted tree with every degree-2 switch contracted
 * (a switch with one child and a parent is invisible to round-trip times, and so is a root
 * with two children). Both trees are reduced that way before they are compared, and the
 * comparison is by splits: every edge of a tree splits the nodes in two. The trees are equal
 * when their split sets are. Nodes are matched by name. */
#ifndef TOPOSCOPE_METRICS_H
#define TOPOSCOPE_METRICS_H

#include <stdint.h>
#include "toposcope/fabric.h"

typedef struct ts_accuracy {
    int tree_exact;             /* identical split sets (after reduction) */
    int leaf_groups_exact;      /* identical partition of nodes by the switch they hang from */
    double leaf_ari;            /* adjusted Rand index of that partition */
    int splits_missing;         /* truth splits not in the inferred tree (merged switches) */
    int splits_extra;           /* inferred splits not in the truth (split switches) */
    double shared_link_fp;      /* Shirai's query test: fraction of queries answered */
    double shared_link_fn;      /*   "share" where truth says no, and the converse */
    long queries;
    int nodes_missing;          /* truth nodes absent from the inferred tree */
} ts_accuracy;

/* Compare; both fabrics finalized. `queries` random shared-link queries drawn from seed
 * (100000 in the CLI). Nodes that are only in one tree count in nodes_missing and are left
 * out of the queries and the partition. */
int ts_accuracy_compare(const ts_fabric *truth, const ts_fabric *inferred, long queries,
                        uint64_t seed, ts_accuracy *out, ts_error *err);

/* A human explanation of the differences ("switch s12 of the inferred tree merges truth
 * switches leaf3 and leaf4 (nodes ...)"), at most `max` bytes, for bench output. */
int ts_accuracy_explain(const ts_fabric *truth, const ts_fabric *inferred, char *buf, size_t max);

#endif
