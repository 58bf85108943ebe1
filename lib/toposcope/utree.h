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
/* Split the edge above v at distance `from_v` (RTT µs) from v: returns the new switch. */
int ts_utree_split_edge(ts_utree *t, int v, double from_v);

/* Convert to a fabric rooted at the centre (minimum eccentricity switch), dropping switches
 * with fewer than two other neighbours. names[i] is node i's name. */
int ts_utree_to_fabric(const ts_utree *t, char *const *names, int nnodes, ts_fabric *out,
                       ts_error *err);

#endif
