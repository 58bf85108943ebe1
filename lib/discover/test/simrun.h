/* Shared by the discovery-method tests: run a method on a simulated fabric and score it. */
#ifndef TOPOSCOPE_TEST_SIMRUN_H
#define TOPOSCOPE_TEST_SIMRUN_H

#include <stdlib.h>
#include <string.h>
#include "tap.h"
#include "toposcope/discover.h"
#include "toposcope/metrics.h"
#include "toposcope/model.h"
#include "toposcope/sim.h"

typedef struct run {
    int rc;
    ts_accuracy acc;
    ts_probe_counters count;
    int partial, nunmeasured, nodes_in_tree;
    int nambiguous, ambiguous_nodes;   /* ambiguous switches; nodes below the first */
    int nunpowered;                    /* stars too coarse for the step that matters */
    double star_resolution_us;
    double tol_us, budget_used_us, budget_us;
} run;

static void zero_jitter(ts_model_params *p)
{
    p->jitter_sigma = 0;
    p->jitter_exp_mean_us = 0;
    p->outlier_prob = 0;
}

static int tree_nodes(const ts_utree *t)
{
    int k = 0;
    for (int v = 0; v < t->nvert; v++)
        k += t->node[v] != TS_NONE;
    return k;
}

typedef int (*discover_fn)(ts_probe_engine *e, ts_utree *tree, ts_infer_report *rep, ts_error *err);

/* The engine's plan_seed for the runs that follow (0: the plan a job of that size makes). */
static uint64_t simrun_plan_seed;
/* the site's least level step the next runs are given (ts_probe_engine.least_level_step_us) */
static double simrun_least_step_us;
/* the samples per pair the next runs' methods take first (ts_probe_engine.samples_first; 0:
 * each method's own) */
static int simrun_samples_first;

/* Nodes hanging from the switch that node `node` hangs from in t. */
static int siblings_of(const ts_utree *t, int node)
{
    int v0 = -1, k = 0;
    for (int v = 0; v < t->nvert; v++)
        if (t->node[v] == node)
            v0 = v;
    for (int v = 0; v0 >= 0 && v < t->nvert; v++)
        k += t->node[v] != TS_NONE && t->parent[v] == t->parent[v0];
    return k;
}

/* Simulate `truth` under the parameters p, run one discovery method through the probe engine,
 * and compare the inferred tree with the truth. */
static run simulate_method_params(discover_fn discover, const char *what, ts_fabric *truth,
                                  const ts_model_params *p, uint64_t seed, double budget_us)
{
    run r;
    memset(&r, 0, sizeof r);
    ts_error err = {{0}};
    ts_model m;
    ts_sim *sim = NULL;
    ts_probe_engine e;
    ts_utree t;
    ts_infer_report rep;
    memset(&rep, 0, sizeof rep);
    r.rc = ts_model_realize(&m, truth, p, seed, NULL, 0, &err);
    if (r.rc == TS_OK)
        r.rc = ts_sim_create(&sim, truth, &m, seed * 7 + 1, &err);
    if (r.rc == TS_OK)
        r.rc = ts_probe_engine_init(&e, ts_sim_transport(sim), NULL, budget_us, &err);
    if (r.rc == TS_OK) {
        e.plan_seed = simrun_plan_seed;
        e.least_level_step_us = simrun_least_step_us;
        e.samples_first = simrun_samples_first;
    }
    if (r.rc != TS_OK) {
        diag("setup: %s", err.text);
        return r;
    }
    r.rc = discover(&e, &t, &rep, &err);
    if (r.rc == TS_OK) {
        r.count = e.count;
        r.partial = e.partial;
        r.nunmeasured = rep.nunmeasured;
        r.nambiguous = rep.nambiguous;
        r.nunpowered = rep.nunpowered;
        r.star_resolution_us = rep.star_resolution_us;
        r.ambiguous_nodes = rep.nambiguous ? siblings_of(&t, rep.ambiguous[0]) : 0;
        r.tol_us = rep.tol_us;
        r.nodes_in_tree = tree_nodes(&t);
        r.budget_used_us = ts_probe_now(&e) - e.start_us;
        char **names = malloc(sizeof(char *) * (size_t)truth->nnodes);
        for (int i = 0; i < truth->nnodes; i++)
            names[i] = truth->v[truth->node_vertex[i]].name;
        ts_fabric inf;
        r.rc = ts_utree_to_fabric(&t, names, truth->nnodes, &inf, &err);
        if (r.rc == TS_OK) {
            r.rc = ts_accuracy_compare(truth, &inf, 1000, seed, &r.acc, &err);
            ts_fabric_free(&inf);
        }
        free(names);
        ts_utree_free(&t);
        ts_infer_report_free(&rep);
    }
    if (r.rc != TS_OK)
        diag("%s: %s", what, err.text);
    ts_probe_engine_free(&e);
    ts_sim_free(sim);
    ts_model_free(&m);
    return r;
}

/* The same under a built-in profile (exact = no jitter). */
static run simulate_method(discover_fn discover, const char *what, ts_fabric *truth, const char *profile, int exact, uint64_t seed, double budget_us)
{
    ts_model_params p;
    ts_error err = {{0}};
    if (ts_model_params_profile(&p, profile, &err) != TS_OK) {
        run r;
        memset(&r, 0, sizeof r);
        r.rc = TS_EINPUT;
        diag("setup: %s", err.text);
        return r;
    }
    if (exact)
        zero_jitter(&p);
    run r = simulate_method_params(discover, what, truth, &p, seed, budget_us);
    ts_model_params_free(&p);
    return r;
}

#endif
