/* toposcope — per-link latency on a known tree, the plan (lib/links/links.c): the identifiable
 * links and a link-coverage plan built combinatorially from the tree. Its execution on the probe
 * engine and the weighted least-squares solve: linksolve.h; the result against a truth fabric
 * and as links.yaml: linkreport.h; PMM's plan for the same tree: pmm.h.
 *
 * What round trips can identify. RTT(a,b) = 2 * (one-way latencies of the links on the path)
 * + (h_a + h_b) / 2, so a node's access link and its host overhead always travel together: the
 * identifiable quantity is the node's "pendant" one-way latency link_us + host_us / 4. A switch
 * with one child and a parent (or a root with two children) joins its two links: every path
 * uses both or neither, and only their sum can be known (PMM's aggregated link). Links that no
 * node pair crosses (subtrees without nodes, the chain above the nodes' common ancestor) are not
 * measurable at all. The identifiable unknowns ("links" below) are therefore the edges of the
 * tree spanned by the nodes with degree-2 switches contracted; their number is the rank any
 * plan can reach.
 *
 * Units: estimates are one-way microseconds, like ts_vertex.link_us; pair residuals are round
 * trips (RTT µs) like the measurements. */
#ifndef TOPOSCOPE_LINKS_H
#define TOPOSCOPE_LINKS_H

#include <stdio.h>
#include "toposcope/error.h"
#include "toposcope/fabric.h"
#include "toposcope/model.h"
#include "toposcope/probe.h"

/* The identifiable links of a tree. Link k consists of the tree links (named by their lower
 * vertex) members[first[k] .. first[k+1]-1], listed from the bottom of the chain up; a chain
 * through a root with two children lists one side bottom-up, then the other. */
typedef struct ts_link_set {
    int nlinks;
    int *first;              /* nlinks + 1 entries */
    int *members;            /* vertex indices */
    int *of_vertex;          /* vertex -> link, TS_NONE for the root and unmeasurable links */
    int nunmeasurable;       /* tree links no node pair crosses */
    int span_root;           /* lowest common ancestor of all nodes */
} ts_link_set;

int ts_link_set_build(const ts_fabric *tree, ts_link_set *out, ts_error *err);
void ts_link_set_free(ts_link_set *s);
/* The links a node pair's path crosses, each once, ascending; returns the count (at most max
 * written; a path has at most 2 * depth links). */
int ts_link_set_path(const ts_link_set *s, const ts_fabric *tree, int node_a, int node_b,
                     int *out, int max);

/* ---- planning ---- */

/* A link plan: node pairs whose paths identify every identifiable link of a known tree, in
 * rounds where no two pairs share a link or a node. */
typedef struct ts_link_plan {
    int npairs;
    ts_pair *pairs;          /* round after round */
    int nrounds;
    int *round_start;        /* nrounds + 1 entries */
    int rank;                /* independent link combinations the pairs identify */
    long paths_examined;     /* for the seed method: rows offered to the elimination */
} ts_link_plan;

void ts_link_plan_free(ts_link_plan *p);
#define TS_LINK_EXTRA_ROUNDS_DEFAULT 8
#define TS_LINK_EXTRA_ROUNDS_MAX 256

typedef struct ts_link_plan_options {
    int redundancy;          /* fill every round's idle nodes with extra link-disjoint pairs (1) */
    int extra_rounds;        /* rounds of such pairs alone after the core (TS_LINK_EXTRA_ROUNDS_DEFAULT) */
} ts_link_plan_options;

void ts_link_plan_options_default(ts_link_plan_options *o);

/* The tree plan. Core: exactly rank pairs whose paths identify every link of the set (no
 * elimination: chosen switch by switch, bottom-up: at a switch with k >= 3 branches k pairs
 * between its branches forming odd cycles, at a switch with 2 branches one pair inside and one
 * completing a three-point triangle with a node outside). Rounds: greedy colouring with no link
 * (hence no node) used twice in a round. With redundancy, every round then gets as many extra
 * link-disjoint pairs as fit (matched bottom-up switch by switch), so the solve has residuals.
 * out->rank is the number of identifiable links; out->paths_examined the core pairs. */
int ts_link_plan_tree(const ts_fabric *tree, ts_link_plan *out, ts_error *err);
/* o NULL: the defaults. */
int ts_link_plan_tree_opts(const ts_fabric *tree, const ts_link_plan_options *o, ts_link_plan *out,
                           ts_error *err);

#endif
