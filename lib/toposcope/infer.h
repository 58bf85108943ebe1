/* toposcope — tree inference from round-trip times.
 *
 * RTTs between nodes form (up to noise) an additive tree metric: every node's host overhead and
 * access link are a pendant edge, every switch-to-switch link adds twice its one-way latency.
 * Inference works in these RTT units on a growable tree (ts_utree, utree.h) and converts the
 * result to a ts_fabric: rooted at its centre, degree-2 switches contracted, switches named
 * s1, s2, ..., link_us = one-way latency (half the RTT contribution; for a node's edge that includes half
 * of its host overhead, which RTTs cannot separate from the access link). */
#ifndef TOPOSCOPE_INFER_H
#define TOPOSCOPE_INFER_H

#include "toposcope/error.h"
#include "toposcope/fabric.h"
#include "toposcope/utree.h"

/* Distances between n nodes: d[a*n+b] (RTT µs, NAN where unknown) and the half-width of each
 * estimate's confidence interval in ci (may be NULL). */
typedef struct ts_distmat {
    int n;
    double *d;
    double *ci;
} ts_distmat;

typedef struct ts_infer_report {
    double tol_us;           /* smallest edge length accepted (RTT units) */
    double noise_us;         /* standard error of one distance the checks assumed */
    int moved;               /* nodes moved down into a clade by the placement check */
    int reference;           /* node the Gromov products were taken from */
    int nunmeasured;         /* nodes without any distance: left out of the tree */
    int *unmeasured;         /* their indices (malloc'd; free with ts_infer_report_free) */
    int nambiguous;          /* switches whose children could not be told apart: kept as one */
    int *ambiguous;          /* one node hanging from each (malloc'd), naming the switch */
    int *unresolved_of;      /* per node index (malloc'd, or NULL): the ambiguous switch whose
                              * region holds it, or -1. Whatever the tree shows inside a region
                              * is a guess that may miss levels; NULL: only the named switches */
    unsigned char *grouping_only; /* per ambiguous switch (malloc'd, or NULL: none): 1 where only
                              * how its children group is in doubt, not what lies inside them
                              * (the switch alone is unresolved, not those below it) */
    int rechecked;           /* pairs measured again because a split rested on them alone */
    /* Switches found without children (stars; the fast method): a level step the data could
     * have missed with probability 10 % at most is below the coarsest resolution, us (0: no
     * star resolved one). Unpowered stars were still coarser than the step that matters: a
     * level below unpowered_us (their coarsest) cannot be excluded; the result is partial. */
    double star_resolution_us;
    int nunpowered;
    double unpowered_us;
} ts_infer_report;

void ts_infer_report_free(ts_infer_report *r);

/* Robust additive-tree reconstruction from a (possibly incomplete) matrix: Gromov products
 * from a reference node, average-linkage clustering, then dendrogram edges shorter than the
 * tolerance (derived from the measured spread when tol_us <= 0) contracted into multi-way
 * switches. O(n^2) time and memory. */
int ts_infer_matrix(const ts_distmat *dm, double tol_us, ts_utree *out, ts_infer_report *rep,
                    ts_error *err);

#endif
