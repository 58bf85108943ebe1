/* toposcope — one measurement of a set of nodes, whatever transport carries it: discovery, the
 * tree, the link plan, link measurement and solve, and the result files.
 *
 * `toposcope sim` runs it on the simulator, the node agent's leader on UDP between real nodes;
 * both call the same function, so what the simulator proves is what runs on the cluster. */
#ifndef TOPOSCOPE_MEASURE_H
#define TOPOSCOPE_MEASURE_H

#include "toposcope/discover.h"
#include "toposcope/error.h"
#include "toposcope/fabric.h"
#include "toposcope/infer.h"
#include "toposcope/links.h"
#include "toposcope/probe.h"
#include "toposcope/linksolve.h"
#include "toposcope/linkreport.h"

typedef struct ts_measure_options {
    ts_method method;
    /* Non-NULL: no discovery; this tree is the tree and PMM's plan selection replaces the
     * link-coverage plan (the seed method assumes a known topology). */
    const ts_fabric *known_tree;
    char *const *names;      /* node i's name, for the transport's nnodes nodes */
    int links;               /* run the link stage (1) */
    int link_extra_rounds;   /* TS_LINK_EXTRA_ROUNDS_DEFAULT */
} ts_measure_options;

void ts_measure_options_default(ts_measure_options *o);

typedef struct ts_measure {
    ts_fabric tree;          /* the inferred (or known) tree, nodes named by options.names */
    ts_infer_report rep;     /* reference node, unmeasured nodes, ambiguous switches */
    ts_probe_engine discovered;   /* counters and flags as discovery left them (db not owned) */
    double disc_start_us, disc_end_us;   /* transport clock */
    double disc_cpu_s;       /* discovery and inference; the transport's own CPU excluded */
    /* link stage */
    int links_ran;
    ts_link_plan plan;
    ts_link_result links;
    double link_cpu_s;       /* planning and solve; the transport's own CPU excluded */
    double link_plan_us;     /* transport clock spent planning (before the first round) */
    double link_time_us;     /* transport clock spent by the whole link stage */
} ts_measure;

/* Discovery, then the link stage with whatever budget remains on the engine. On success the
 * tree is always set (partial when the engine's deadline cut something: e->partial). */
int ts_measure_run(ts_probe_engine *e, const ts_measure_options *o, ts_measure *m, ts_error *err);
void ts_measure_free(ts_measure *m);

/* The measurement's verdict: "measured" when the whole plan ran, discovery resolved every
 * switch and every link it solved is plausible, else "partial" with the reason in why (cut by
 * the budget; switches discovery left unresolved; or a link whose latency
 * the solve puts below zero beyond TS_IMPLAUSIBLE_SE standard errors: no latency is negative, so
 * the split of the tree that made that link is not what the measurements say). Nodes missing
 * from the tree are the caller's to add (it knows the job's nodes). */
#define TS_IMPLAUSIBLE_SE 3.0
const char *ts_measure_verdict(const ts_measure *m, char *why, size_t max);

/* Into the directory open at dirfd: topology.conf, tree.yaml and (when the link stage ran)
 * links.yaml and pairs.yaml, each written aside (NAME.tmp, O_NOFOLLOW | O_EXCL) then renamed
 * over NAME, with `mode`. truth and lt (both or neither) add truth names and errors to links.yaml. */
int ts_measure_write(const ts_measure *m, int dirfd, int mode, const ts_fabric *truth,
                     const ts_link_truth *lt, ts_error *err);

/* The files as ts_measure_write writes them, into one caller-freed buffer each. */
typedef struct ts_measure_text {
    char *topology_conf, *tree_yaml;
    char *links_yaml, *pairs_yaml;   /* NULL without a link stage */
} ts_measure_text;

int ts_measure_render(const ts_measure *m, const ts_fabric *truth, const ts_link_truth *lt,
                      ts_measure_text *out, ts_error *err);
void ts_measure_text_free(ts_measure_text *t);

#endif
