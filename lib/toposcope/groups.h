/* toposcope — hierarchy hints: levels, each rank's group at every level and whether it leads it,
 * and a LogP estimate of communication between groups of each level.
 *
 * Levels, outermost first, named the same on every job so a program can ask for them:
 *   job                 every rank (the root switch)
 *   switchK             K = H-1 .. 2 for a tree of height H: the nearest switch of height >= K
 *   leaf                the switch a node hangs from
 *   node, package, numa, l3, core
 * A level the hardware lacks (no L3) takes the groups of the next level out. A rank's group at
 * an intra-node level is that of its first core. Group ids are dense per level, numbered in the
 * order of their lowest rank, so rank 0 is in group 0 everywhere; the leader of a group is its
 * lowest rank. Without a placement (measure-only) the members are the nodes, down to `node`.
 *
 * LogP (Culler et al.; measured as in Kielmann's LogP/MPI): for two ranks whose closest common
 * group is at level X, a message costs o_s + L + o_r one way and back-to-back messages leave
 * at most every g. For the switch levels it comes from the tree: the one-way path latency S
 * between two nodes in one group of X but different groups of the level below (median over the
 * groups), with round trip RTT = 2 S = 2 (o_s + L + o_r):
 *   o_s = o_r = host overhead per round trip / 4   (the model's host_overhead_us, or the
 *                                                   nodes' host_us where the tree has them)
 *   L = S - o_s - o_r when the tree's node links are estimates (they carry half the host part),
 *       S when the tree gives host_us separately (a truth file), or the model's per-level link
 *       latencies when the tree has none
 *   g = o_s + flow_penalty_us (a second message in flight on the same link pays the model's
 *       per-flow penalty)
 * Intra-node levels (node, package, numa, l3, core) have no measurement: the node agents time
 * messages between nodes only. They come from the model when a parameter file gives its
 * intra_node part (no profile does): L = intra_node.latency_us.<level>, o_s = o_r =
 * intra_node.overhead_us, g = o_s (no link is shared inside a node), source "model", pairs the
 * groups of the level in which two members meet there. Any level without an estimate is NAN
 * with source "none" and a reason: no two members meet at that level, or no value exists. */
#ifndef TOPOSCOPE_GROUPS_H
#define TOPOSCOPE_GROUPS_H

#include "toposcope/error.h"
#include "toposcope/hier.h"
#include "toposcope/model.h"
#include "toposcope/place.h"

#define TS_LEVELS_MAX 40
#define TS_LEVEL_NAME_MAX 24

typedef struct ts_logp {
    double L_us, o_s_us, o_r_us, g_us;   /* NAN: unknown */
    int pairs;                           /* groups the estimate comes from */
    const char *source;                  /* "tree", "model" or "none" */
    const char *reason;                  /* why the values are NAN; NULL when they are not */
} ts_logp;

typedef struct ts_level {
    char name[TS_LEVEL_NAME_MAX];
    ts_hier_kind kind;                   /* TS_HK_SWITCH for job, switchK, leaf */
    int height;                          /* switch levels: the height asked for */
    int ngroups;
    ts_logp logp;
} ts_level;

typedef struct ts_groups {
    int nlevels;
    ts_level level[TS_LEVELS_MAX];
    int nmembers;
    int members_are_nodes;               /* measure-only: members are node indices */
    int *group;                          /* nmembers x nlevels */
    unsigned char *leader;               /* nmembers x nlevels */
} ts_groups;

/* pl may be NULL or have no ranks: then the members are the nodes. */
int ts_groups_compute(ts_groups *g, const ts_hierarchy *h, const ts_placement *pl, ts_error *err);
/* Fill each level's logp from the tree's latencies and the model parameters. */
int ts_groups_logp(ts_groups *g, const ts_hierarchy *h, const ts_model_params *mp, ts_error *err);
void ts_groups_free(ts_groups *g);
/* Index of a level by name, or -1. */
int ts_groups_level(const ts_groups *g, const char *name);

#endif
