/* toposcope — keep only the splits of a guessed tree that the measurements confirm (private to
 * lib/; lib/discover/confirm.c).
 *
 * Where fast.c leaves a region unresolved, the tree of fast_irregular.c's additive method stands
 * in for it: a guess, not a tested split. The result is partial either way; what it reports
 * must be a coarser but true tree, so each split of the guess is tested on fast's own round
 * trips and a split they do not confirm is merged into its neighbour. */
#ifndef TOPOSCOPE_CONFIRM_H
#define TOPOSCOPE_CONFIRM_H

#include <stdint.h>
#include "toposcope/utree.h"

/* One round trip with its hosts' offsets taken off (us), between nodes a and b, in one set of
 * measurements (0..nsets-1: round trips of one kind, e.g. minima of one count of samples,
 * compared with each other only). */
typedef struct ts_confirm_meas {
    int a, b;
    int set;
    double r;
} ts_confirm_meas;

/* The splits of a tree (each as a fingerprint of the nodes on one side: 64 bits, sorted), to
 * compare two trees by. */
typedef struct ts_split_set {
    uint64_t *print;
    long n;
} ts_split_set;

int ts_split_set_of(const ts_utree *t, ts_split_set *out);     /* TS_OK or TS_ENOMEM */
void ts_split_set_free(ts_split_set *s);
/* How many of want's splits have lacks (both as ts_split_set_of makes them: sorted). */
long ts_split_set_missing(const ts_split_set *want, const ts_split_set *have);

/* Tests every split of t (an inner edge between two switches: the nodes on one side against
 * those on the other) on the measurements m[0..nm-1], set s of which has the noise (one
 * measurement's standard deviation) sigma_us[s], each set's estimates weighed by their
 * inverse variance, and contracts the weakest split that fails until every split left
 * stands; *contracted gets how many were contracted. false_split: the chance, over the whole
 * tree, that a split which is not in the fabric stands. With apply 0, t is left as it is and
 * *contracted is 1 when some split fails, 0 when all stand. A tree without a split (fewer
 * than two switches after the ones of one neighbour are spliced out) is left as it is.
 * Where sigma_us[s] is not a positive number (no pair was measured twice), that set is weighed
 * by the spread of the round trips between the same two of its branches instead: noise and
 * whatever a branch's inside adds, so fewer splits stand. What the measurements cannot test
 * stays as it is: a split whose every test needs two sets of nodes never measured together,
 * or whose own spread rests on fewer than 8 degrees of freedom. Returns TS_OK or
 * TS_ENOMEM. */
int ts_confirm_splits(ts_utree *t, int nnodes, const ts_confirm_meas *m, long nm,
                      const double *sigma_us, int nsets, double false_split, int apply,
                      int *contracted);

/* One measurement's noise in a set from its pairs measured more than once: 1.4826 x the
 * median absolute difference of a pair's repeats over sqrt(2) (a robust scale: a host now and
 * then holds a round trip for tens of us). m must be sorted so that a pair's repeats in a set
 * are adjacent, each pair with a < b. NAN when fewer than min_pairs differences. */
double ts_confirm_noise(const ts_confirm_meas *m, long nm, int set, long min_pairs);

/* How a guessed tree disagrees with a flat one (flat: its leaf switches straight under its
 * top; both over nodes 0..n-1, live[i] the nodes to read), each group of the guess (the nodes
 * below one of its switches: one side of a split) read against flat's leaves:
 *  - two or more of one leaf's nodes, not all: a level inside that leaf; the leaf in doubt;
 *  - several leaves whole, or a leaf of two or more nodes that no group makes (nor its
 *    complement): how the leaves group under the top is in doubt (top), not what they hold;
 *  - a group that cuts a leaf and holds nodes of another: the whole tree in doubt (whole), as
 *    when fewer than two leaves are left out of doubt to place the top's doubt, or the guess
 *    lacks a live node.
 * leaf[i] gets each live node's leaf switch (a vertex of flat), -1 for the others; doubt[v]
 * (flat->nvert of them) 1 for a leaf in doubt. Returns TS_OK or TS_ENOMEM. */
typedef struct ts_flat_doubt {
    int top;
    int whole;
} ts_flat_doubt;
int ts_flat_doubts(const ts_utree *flat, const ts_utree *guess, const unsigned char *live, int n,
                   int *leaf, unsigned char *doubt, ts_flat_doubt *d);

#endif
