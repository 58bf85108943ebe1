/* toposcope — a growable tree in RTT units, and its conversion to a rooted fabric
 * (lib/discover/utree.c): what inference and every discovery method build (infer.h). */
#ifndef TOPOSCOPE_UTREE_H
#define TOPOSCOPE_UTREE_H

#include "toposcope/error.h"
#include "toposcope/fabric.h"

/* A tree under construction: every vertex but the root has a parent and the length (RTT µs)
 * of the edge to it; node vertices carry their node index. */
typedef struct ts_utree {
    int nvert, cap;
    int *parent;
    double *len;
    int *node;       /* node index, or TS_NONE for a switch */
} ts_utree;

void ts_utree_init(ts_utree *t);
void ts_utree_free(ts_utree *t);
/* Add a vertex under parent (TS_NONE for the root). Returns its index or a negative error. */
int ts_utree_add(ts_utree *t, int parent, double len, int node);
/* dst (initialised here) as a copy of src: TS_OK or TS_ENOMEM. */
int ts_utree_copy(ts_utree *dst, const ts_utree *src);
/* Split the edge above v at distance `from_v` (RTT µs) from v: returns the new switch. */
int ts_utree_split_edge(ts_utree *t, int v, double from_v);

/* Add to a every split of b that is compatible with all of a's (the nodes on one side of b's
 * edge are, in a, the nodes below some children of one switch, whole, and not a side a already
 * has): each as a new switch over those children, its edge as long as b's (at most the shortest
 * of theirs, which lose it). a is rooted again at its first node's switch. Both must hold the
 * same nodes (indices below nnodes), each a leaf; otherwise TS_EINPUT and a is as it was.
 * *added gets the count. Returns TS_OK, TS_EINPUT or TS_ENOMEM. */
int ts_utree_refine(ts_utree *a, const ts_utree *b, int nnodes, int *added);

/* Convert to a fabric rooted at the centre (minimum eccentricity switch), dropping switches
 * with fewer than two other neighbours. names[i] is node i's name. */
int ts_utree_to_fabric(const ts_utree *t, char *const *names, int nnodes, ts_fabric *out,
                       ts_error *err);

#endif
