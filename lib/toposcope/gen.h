/* toposcope — fabric generators for tests and benchmarks.
 *
 * Every generator initialises f itself: the caller may pass uninitialised memory, and a fabric
 * that already holds a tree must be freed first (it would leak otherwise). On error f is left
 * empty (nvert == 0), so ts_fabric_free on it is always safe. */
#ifndef TOPOSCOPE_GEN_H
#define TOPOSCOPE_GEN_H

#include <stdint.h>
#include "toposcope/fabric.h"

/* The tree abstraction of a p-port 3-tree fat tree: p pod switches under one core switch,
 * p/2 leaf switches per pod, p/2 nodes per leaf (p^3/4 nodes: p=8 -> 128, 16 -> 1024,
 * 32 -> 8192). With shuffle_seed != 0 node names are a random permutation of the
 * name space, so hostname order carries no hint of the topology. */
int ts_gen_fat_tree(ts_fabric *f, int p, uint64_t shuffle_seed, ts_error *err);

/* A regular tree: fanout[0] switches under the root, fanout[1] under each of those, ...,
 * the last entry is nodes per leaf switch. levels = number of entries (>= 1). */
int ts_gen_regular(ts_fabric *f, const int *fanout, int levels, uint64_t shuffle_seed,
                   ts_error *err);

/* An irregular random tree: switch depth 2..4 (chosen per branch), fan-out 2..9, leaf
 * switches with 1..24 nodes; parameters drawn from seed. Names shuffled as above. */
int ts_gen_irregular(ts_fabric *f, uint64_t seed, ts_error *err);

/* Random tree for property tests: every internal vertex has degree >= 3 once unrooted
 * (at least 2 children, root at least 3) so it is exactly identifiable from distances;
 * up to max_nodes nodes, depth up to max_depth. */
int ts_gen_random_identifiable(ts_fabric *f, int max_nodes, int max_depth, uint64_t seed,
                               ts_error *err);

#endif
