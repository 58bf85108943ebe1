/* toposcope sim — run a discovery method against the simulator and score the result. */
#include <dirent.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <limits.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "cli.h"
#include "toposcope/anomaly.h"
#include "toposcope/bound.h"
#include "toposcope/discover.h"
#include "toposcope/fabric.h"
#include "toposcope/infer.h"
#include "toposcope/links.h"
#include "toposcope/measure.h"
#include "toposcope/metrics.h"
#include "toposcope/model.h"
#include "toposcope/policy.h"
#include "toposcope/probe.h"
#include "toposcope/siteconf.h"
#include "toposcope/sim.h"
#include "toposcope/linksolve.h"
#include "toposcope/linkreport.h"
#include "toposcope/hostlist.h"
#include "toposcope/topoconf.h"
#include "toposcope/textout.h"

#define MAX_INJECT 256

static void sim_usage(FILE *out)
{
    fprintf(out,
            "usage: toposcope sim --fabric FILE --out DIR [options]\n"
            "\n"
            "Simulate the fabric in FILE (Slurm topology.conf), run a discovery method on it under a\n"
            "time budget, infer the switch tree and compare it with the truth.\n"
            "\n"
            "options:\n"
            "  --fabric FILE        the true fabric, Slurm topology.conf syntax (required)\n"
            "  --nodes HOSTLIST     a job's allocation: only these nodes of the fabric (Slurm\n"
            "                       hostlist, e.g. n[0003,0017-0020]) and the switches above them\n"
            "  --out DIR            output directory, created if needed (required)\n"
            "  --profile NAME       latency profile (doc/params.md), built on published round\n"
            "                       trips: ethernet-udp (the default: kernel UDP, 25 GbE),\n"
            "                       ipoib-udp (IP over InfiniBand), rdma (verbs); or idealised,\n"
            "                       levels 3-15x clearer than kernel UDP sees them on a real\n"
            "                       Ethernet fabric: ideal-ethernet (old name ethernet),\n"
            "                       ideal-infiniband (old name infiniband)\n"
            "  --params FILE        YAML latency parameters on top of the profile (doc/params.md)\n"
            "  --method NAME        fast (default: top-down splitting, for level-structured fabrics),\n"
            "                       allpairs (Bufe 2014) or shirai (Shirai et al. 2007);\n"
            "                       pmm (Liu et al.) runs no discovery: PMM assumes a known topology, so\n"
            "                       the true tree is used as the tree (tree_exact is true by construction)\n"
            "                       and PMM's own plan selection replaces the link-coverage plan\n"
            "  --seed N             seed of the run's noise (default 1)\n"
            "  --fabric-seed N      seed of the per-node and per-link hardware variation (default 0):\n"
            "                       runs with the same fabric seed see the same hardware\n"
            "  --plan-seed N        varies the discovery planner's random choices (default 0: they\n"
            "                       depend on the node count only, as on a real job)\n"
            "  --budget-ms MS       measurement budget in virtual milliseconds (default 0: none)\n"
            "  --level-step-ns NS   the least one switch level of this fabric adds to a round trip,\n"
            "                       as a site would set it (toposcope.yaml level_step_ns; default\n"
            "                       400, the least of any real fabric's): a job on one switch is\n"
            "                       measured once a level this large would have shown\n"
            "  --inject SPEC        inject a fault (repeatable): degrade:LINK:+30%%, degrade:LINK:+5us,\n"
            "                       loss:LINK:20%%, dead:NODE, slowhost:NODE:+10us; a link is named by\n"
            "                       its lower end (a node for its access link, a switch for its uplink)\n"
            "  --queries N          shared-link queries for the accuracy test (default 100000)\n"
            "  --link-extra-rounds N\n"
            "                       rounds of extra link-disjoint pairs after the link plan's own rounds\n"
            "                       (default 8; they tighten the estimates of the upper links)\n"
            "  --no-links           leave out the link stage (no links.yaml, pairs.yaml, link_* metrics)\n"
            "  --baseline PATH      compare the links with a baseline and write DIR/anomalies.yaml: PATH is\n"
            "                       a baseline file (toposcope report --update-baseline) or a directory\n"
            "                       of earlier runs on the same fabric (its own and its subdirectories'\n"
            "                       tree.yaml + links.yaml, pooled per link)\n"
            "  --policy NAME|FILE   anomaly thresholds (threshold_pct, threshold_us; default 0%%, 0 us:\n"
            "                       significance against the baseline's spread alone)\n"
            "  --anomaly-z X        significance of an excess in standard deviations (default 5)\n"
            "  --eps X --confidence X --min-samples N --max-samples N\n"
            "                       the stopping rule (defaults 0.03, 0.90, 3, 32)\n"
            "  --estimator NAME     a pair's round trip from its samples, for every method: min (the\n"
            "                       minimum of a fixed count; fast's default) or mean (the inlier mean\n"
            "                       under the stopping rule; the baselines' default)\n"
            "  --samples N          samples per pair at first, every method (default: fast 3; a\n"
            "                       baseline --min-samples under min, the stopping rule under mean)\n"
            "  --samples-max N      the most samples per pair sequential re-measurement takes, where\n"
            "                       a decision is not significant yet (default 48; fast doubles up to it,\n"
            "                       and without this option under --budget-ms on while the budget allows)\n"
            "  --bound-exact P      the bound's target: a tree exact in a share P of runs (default 0.99)\n"
            "  -h, --help           this text\n"
            "\n"
            "After discovery the link stage plans pairs that identify every link of the inferred tree,\n"
            "measures them with the budget that remains and solves for each link's one-way latency.\n"
            "\n"
            "writes DIR/topology.conf (inferred tree, Slurm syntax), DIR/tree.yaml (with edge latency\n"
            "estimates), DIR/truth.yaml (the simulated hardware), DIR/links.yaml (per link: estimate,\n"
            "90%% interval, samples, truth and relative error; links that cannot be separated are one\n"
            "aggregated entry listing its links), DIR/pairs.yaml (the link stage's measured pairs:\n"
            "round trip, fit, residual, weight) and DIR/metrics.yaml.\n"
            "exit status: 0 done, 1 failure, 2 bad input (the message names the file and line)\n");
}

static int in_allocation(const char *name, void *arg)
{
    const ts_hostlist *job = arg;
    for (size_t i = 0; i < job->count; i++)
        if (strcmp(job->hosts[i], name) == 0)
            return 1;
    return 0;
}

/* *f restricted to the nodes of HOSTLIST nodes (a job's allocation: the rest of the fabric is
 * not measured) and the switches above them. A node the fabric does not hold is bad input. */
static int keep_allocation(ts_fabric *f, const char *fabric_path, const char *nodes, ts_error *err)
{
    ts_hostlist job = {0, NULL};
    int rc = ts_hostlist_expand(nodes, strlen(nodes), &job, err);
    if (rc != TS_OK) {
        char why[sizeof err->text];
        snprintf(why, sizeof why, "%s", err->text);
        ts_fail(err, rc, "--nodes '%s': %s", nodes, why);
    }
    for (size_t i = 0; rc == TS_OK && i < job.count; i++) {
        int v = ts_fabric_find(f, job.hosts[i]);
        if (v == TS_NONE || f->v[v].kind != TS_NODE)
            rc = ts_fail(err, TS_EINPUT, "--nodes: %s is no node of %s", job.hosts[i], fabric_path);
    }
    ts_fabric kept;
    ts_fabric_pruned dropped = {0, NULL, 0};
    ts_fabric_init(&kept);
    if (rc == TS_OK && (rc = ts_fabric_keep_nodes(&kept, f, in_allocation, &job, &dropped, err)) == TS_OK) {
        ts_fabric_free(f);
        *f = kept;
    } else {
        ts_fabric_free(&kept);
    }
    free(dropped.names);
    ts_hostlist_free(&job);
    return rc;
}

static double peak_rss_mb(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_maxrss / 1024.0;
}

typedef struct sim_options {
    const char *fabric, *nodes, *out, *profile, *params, *method;
    uint64_t seed, fabric_seed, queries, plan_seed;
    double budget_ms;
    ts_fault faults[MAX_INJECT];
    int nfaults;
    ts_stop_rule rule;
    int samples_first, samples_max;
    ts_estimator estimator;
    double bound_exact;
    double level_step_ns;      /* 0: the built-in */
    int links;                 /* run the link stage */
    int link_extra_rounds;
    const char *baseline, *policy;
    double anomaly_z;
} sim_options;

static int parse_options(int argc, char **argv, sim_options *o)
{
    enum { O_FABRIC = 256, O_OUT, O_PROFILE, O_PARAMS, O_METHOD, O_SEED, O_FSEED, O_BUDGET,
           O_INJECT, O_QUERIES, O_EPS, O_CONF, O_MIN, O_MAX, O_LINK_EXTRA, O_NO_LINKS,
           O_BASELINE, O_POLICY, O_ANOMALY_Z, O_PSEED, O_ESTIMATOR, O_SAMPLES, O_SAMPLES_MAX,
           O_BOUND_EXACT, O_LEVEL_STEP, O_NODES };
    static const struct option longopts[] = {
        {"fabric", required_argument, 0, O_FABRIC}, {"out", required_argument, 0, O_OUT},
        {"nodes", required_argument, 0, O_NODES},
        {"profile", required_argument, 0, O_PROFILE}, {"params", required_argument, 0, O_PARAMS},
        {"method", required_argument, 0, O_METHOD}, {"seed", required_argument, 0, O_SEED},
        {"fabric-seed", required_argument, 0, O_FSEED}, {"budget-ms", required_argument, 0, O_BUDGET},
        {"plan-seed", required_argument, 0, O_PSEED},
        {"inject", required_argument, 0, O_INJECT}, {"queries", required_argument, 0, O_QUERIES},
        {"eps", required_argument, 0, O_EPS}, {"confidence", required_argument, 0, O_CONF},
        {"min-samples", required_argument, 0, O_MIN}, {"max-samples", required_argument, 0, O_MAX},
        {"link-extra-rounds", required_argument, 0, O_LINK_EXTRA},
        {"no-links", no_argument, 0, O_NO_LINKS},
        {"baseline", required_argument, 0, O_BASELINE}, {"policy", required_argument, 0, O_POLICY},
        {"anomaly-z", required_argument, 0, O_ANOMALY_Z},
        {"estimator", required_argument, 0, O_ESTIMATOR}, {"samples", required_argument, 0, O_SAMPLES},
        {"samples-max", required_argument, 0, O_SAMPLES_MAX},
        {"bound-exact", required_argument, 0, O_BOUND_EXACT},
        {"level-step-ns", required_argument, 0, O_LEVEL_STEP},
        {"help", no_argument, 0, 'h'}, {0, 0, 0, 0},
    };
    memset(o, 0, sizeof *o);
    o->profile = "ethernet-udp";
    o->method = "fast";
    o->seed = 1;
    o->queries = 100000;
    ts_stop_rule_default(&o->rule);
    o->links = 1;
    o->link_extra_rounds = TS_LINK_EXTRA_ROUNDS_DEFAULT;
    o->anomaly_z = TS_ANOMALY_Z_DEFAULT;
    o->bound_exact = 0.99;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        uint64_t u;
        double x;
        ts_error err;
        switch (c) {
        case O_FABRIC: o->fabric = optarg; break;
        case O_NODES: o->nodes = optarg; break;
        case O_OUT: o->out = optarg; break;
        case O_PROFILE: o->profile = optarg; break;
        case O_PARAMS: o->params = optarg; break;
        case O_METHOD: o->method = optarg; break;
        case O_SEED:
        case O_FSEED:
        case O_PSEED:
        case O_QUERIES:
            if (cli_parse_u64(optarg, &u)) {
                cli_error("sim", "--%s wants a non-negative whole number, not '%s'",
                          c == O_SEED ? "seed" : c == O_FSEED ? "fabric-seed" : c == O_PSEED ? "plan-seed"
                                                                                          : "queries",
                          optarg);
                return CLI_USAGE;
            }
            *(c == O_SEED ? &o->seed : c == O_FSEED ? &o->fabric_seed : c == O_PSEED ? &o->plan_seed
                                                                                      : &o->queries) = u;
            break;
        case O_BUDGET:
            if (cli_parse_double(optarg, &x) || !(x >= 0) || !isfinite(x)) {
                cli_error("sim", "--budget-ms wants milliseconds >= 0, not '%s'", optarg);
                return CLI_USAGE;
            }
            o->budget_ms = x;
            break;
        case O_INJECT:
            if (o->nfaults == MAX_INJECT) {
                cli_error("sim", "at most %d --inject options", MAX_INJECT);
                return CLI_USAGE;
            }
            if (ts_fault_parse(optarg, &o->faults[o->nfaults], &err) != TS_OK) {
                cli_error("sim", "--inject %s: %s", optarg, err.text);
                return CLI_USAGE;
            }
            o->nfaults++;
            break;
        case O_EPS:
        case O_CONF:
            if (cli_parse_double(optarg, &x)) {
                cli_error("sim", "--%s wants a number, not '%s'", c == O_EPS ? "eps" : "confidence", optarg);
                return CLI_USAGE;
            }
            *(c == O_EPS ? &o->rule.eps : &o->rule.confidence) = x;
            break;
        case O_MIN:
        case O_MAX:
            if (cli_parse_u64(optarg, &u) || u > 100000) {
                cli_error("sim", "--%s wants a small whole number, not '%s'",
                          c == O_MIN ? "min-samples" : "max-samples", optarg);
                return CLI_USAGE;
            }
            *(c == O_MIN ? &o->rule.min_samples : &o->rule.max_samples) = (int)u;
            break;
        case O_ESTIMATOR:
            if (ts_estimator_parse(optarg, &o->estimator) != TS_OK) {
                cli_error("sim", "--estimator wants min or mean, not '%s'", optarg);
                return CLI_USAGE;
            }
            break;
        case O_SAMPLES:
        case O_SAMPLES_MAX:
            if (cli_parse_u64(optarg, &u) || u < 1 || u > TS_SAMPLES_MAX) {
                cli_error("sim", "--%s wants a whole number 1..%d, not '%s'",
                          c == O_SAMPLES ? "samples" : "samples-max", TS_SAMPLES_MAX, optarg);
                return CLI_USAGE;
            }
            *(c == O_SAMPLES ? &o->samples_first : &o->samples_max) = (int)u;
            break;
        case O_LEVEL_STEP:
            if (cli_parse_u64(optarg, &u) || u < TS_LEVEL_STEP_NS_MIN || u > TS_LEVEL_STEP_NS_MAX) {
                cli_error("sim", "--level-step-ns wants nanoseconds, " TS_LEVEL_STEP_NS_RANGE_TEXT
                          ", not '%s'", optarg);
                return CLI_USAGE;
            }
            o->level_step_ns = (double)u;
            break;
        case O_BOUND_EXACT:
            if (cli_parse_double(optarg, &x) || !(x > 0.5 && x < 1)) {
                cli_error("sim", "--bound-exact wants a share in (0.5, 1), not '%s'", optarg);
                return CLI_USAGE;
            }
            o->bound_exact = x;
            break;
        case O_LINK_EXTRA:
            if (cli_parse_u64(optarg, &u) || u > TS_LINK_EXTRA_ROUNDS_MAX) {
                cli_error("sim", "--link-extra-rounds wants a whole number 0..%d, not '%s'",
                          TS_LINK_EXTRA_ROUNDS_MAX, optarg);
                return CLI_USAGE;
            }
            o->link_extra_rounds = (int)u;
            break;
        case O_NO_LINKS:
            o->links = 0;
            break;
        case O_BASELINE: o->baseline = optarg; break;
        case O_POLICY: o->policy = optarg; break;
        case O_ANOMALY_Z:
            if (cli_parse_double(optarg, &x) || !(x > 0) || !isfinite(x)) {
                cli_error("sim", "--anomaly-z wants a number > 0, not '%s'", optarg);
                return CLI_USAGE;
            }
            o->anomaly_z = x;
            break;
        case 'h':
            sim_usage(stdout);
            exit(CLI_OK);
        default:
            sim_usage(stderr);
            return CLI_USAGE;
        }
    }
    if (optind < argc) {
        cli_error("sim", "unexpected argument '%s'", argv[optind]);
        return CLI_USAGE;
    }
    if (!o->fabric || !o->out) {
        cli_error("sim", "--fabric FILE and --out DIR are required (see --help)");
        return CLI_USAGE;
    }
    if (o->baseline && !o->links) {
        cli_error("sim", "--baseline compares links: it cannot go with --no-links");
        return CLI_USAGE;
    }
    ts_error err;
    if (ts_stop_rule_check(&o->rule, &err) != TS_OK) {
        cli_error("sim", "stopping rule: %s", err.text);
        return CLI_USAGE;
    }
    return CLI_OK;
}

/* e: the engine as discovery left it (the link stage runs on after disc_end_us). */
static int write_metrics(const sim_options *o, FILE *m, const ts_probe_engine *e, double disc_end_us,
                         const ts_sim *sim, const ts_fabric *truth, const ts_fabric *inferred,
                         const ts_accuracy *acc, const ts_infer_report *rep, double cpu_s)
{
    double sim_time_s = (disc_end_us - e->start_us) * 1e-6;
    double total_s = (ts_sim_now_us(sim) - e->start_us) * 1e-6;
    int exceeded = o->budget_ms > 0 && total_s * 1e3 > o->budget_ms + 1e-9;
    fprintf(m, "# toposcope sim: measured in virtual time; accuracy against the simulated truth\n");
    fprintf(m, "method: %s\nprofile: %s\nseed: %llu\nfabric_seed: %llu\nplan_seed: %llu\n", o->method,
            o->profile, (unsigned long long)o->seed, (unsigned long long)o->fabric_seed,
            (unsigned long long)o->plan_seed);
    fprintf(m, "nodes: %d\n", truth->nnodes);
    fprintf(m, "estimator: %s\nsamples_first: %d\nsamples_max: %d\n", ts_estimator_name(o->estimator),
            o->samples_first, o->samples_max);
    if (o->level_step_ns > 0)   /* the site's word; absent: fast's built-in least level step */
        fprintf(m, "level_step_ns: %.0f\n", o->level_step_ns);
    fprintf(m, "probes: %ld\nsamples: %ld\nlost: %ld\nrounds: %ld\ncontrol_steps: %ld\n",
            e->count.probes, e->count.samples, e->count.lost, e->count.rounds, e->count.control_steps);
    fprintf(m, "sim_time_s: %.6f\n", sim_time_s);
    fprintf(m, "cpu_time_s: %.4f\n", cpu_s);
    fprintf(m, "sim_cpu_time_s: %.4f\n", ts_sim_cpu_s(sim));
    fprintf(m, "peak_rss_mb: %.1f\n", peak_rss_mb());
    fprintf(m, "budget_ms: %g\n", o->budget_ms);
    fprintf(m, "budget_exceeded: %s\npartial: %s\n", exceeded ? "true" : "false",
            e->partial ? "true" : "false");
    fprintf(m, "tree_exact: %s\nleaf_groups_exact: %s\nleaf_ari: %.6f\n", acc->tree_exact ? "true" : "false",
            acc->leaf_groups_exact ? "true" : "false", acc->leaf_ari);
    fprintf(m, "splits_missing: %d\nsplits_extra: %d\n", acc->splits_missing, acc->splits_extra);
    fprintf(m, "shared_link_fp: %.6f\nshared_link_fn: %.6f\nqueries: %ld\n", acc->shared_link_fp,
            acc->shared_link_fn, acc->queries);
    fprintf(m, "merge_tolerance_us: %.4f\n", rep->tol_us);
    /* a level step below the coarsest star's resolution could have been missed (fast) */
    fprintf(m, "star_resolution_us: %.4f\nstars_unpowered: %d\n", rep->star_resolution_us,
            rep->nunpowered);
    if (rep->reference != TS_NONE)
        fprintf(m, "reference_node: \"%s\"\n", truth->v[truth->node_vertex[rep->reference]].name);
    fprintf(m, "unmeasured_nodes: [");
    for (int i = 0; i < rep->nunmeasured; i++)
        fprintf(m, "%s\"%s\"", i ? ", " : "", truth->v[truth->node_vertex[rep->unmeasured[i]]].name);
    fprintf(m, "]\n");
    /* the switches kept whole because their children could not be told apart (tree.yaml's
     * unresolved ones), by their inferred names */
    fprintf(m, "ambiguous_switches: [");
    for (int v = 0, k = 0; v < inferred->nvert; v++)
        if (inferred->v[v].unresolved)
            fprintf(m, "%s\"%s\"", k++ ? ", " : "", inferred->v[v].name);
    fprintf(m, "]\n");
    return 0;
}

/* ---- the link stage's scores against the truth (sim only) ---- */

typedef struct link_score {
    ts_link_truth truth;
    double rel_err_median, rel_err_access, rel_err_uplink;
    ts_link_interval_score ci, ci_access, ci_uplink;
} link_score;

/* Median relative error over the access links (want_access 1) or the others (0). */
static double link_rel_err_kind(const ts_link_result *res, const ts_link_truth *lt, int want_access)
{
    double *e = malloc(sizeof(double) * (size_t)(res->nlinks ? res->nlinks : 1));
    if (!e)
        return NAN;
    int n = 0;
    for (int k = 0; k < res->nlinks; k++) {
        double est = res->link[k].est_us, tru = lt->truth_us[k];
        if (res->link[k].access == want_access && isfinite(est) && isfinite(tru) && tru > 0)
            e[n++] = fabs(est - tru) / tru;
    }
    double med = n ? ts_median(e, n) : NAN;
    free(e);
    return med;
}

static int link_score_run(const ts_measure *M, const ts_fabric *truth, const ts_model *model,
                          link_score *L)
{
    ts_error err;
    if (!M->links_ran)
        return CLI_OK;
    if (ts_link_truth_map(&M->tree, &M->links, truth, model, &L->truth, &err) != TS_OK) {
        cli_error("sim", "%s", err.text);
        return CLI_FAIL;
    }
    L->rel_err_median = ts_link_rel_err_median(&M->links, &L->truth);
    L->rel_err_access = link_rel_err_kind(&M->links, &L->truth, 1);
    L->rel_err_uplink = link_rel_err_kind(&M->links, &L->truth, 0);
    L->ci = ts_link_interval_score_of(&M->links, &L->truth, -1);
    L->ci_access = ts_link_interval_score_of(&M->links, &L->truth, 1);
    L->ci_uplink = ts_link_interval_score_of(&M->links, &L->truth, 0);
    return CLI_OK;
}

static void metric_num(FILE *m, const char *key, double v)
{
    if (isfinite(v))
        fprintf(m, "%s: %.6f\n", key, v);
    else
        fprintf(m, "%s: null\n", key);
}

static void link_stage_metrics(FILE *m, const ts_measure *M, const link_score *L)
{
    if (!M->links_ran)
        return;
    /* entries of links.yaml that list more than one link (named in the truth where matched) */
    int aggregated = 0;
    for (int k = 0; k < M->links.nlinks; k++) {
        int names = L->truth.first[k + 1] - L->truth.first[k];
        aggregated += (names ? names : M->links.link[k].nmembers) > 1;
    }
    fprintf(m, "# link stage: per-link one-way latency on the tree above (links.yaml)\n");
    metric_num(m, "link_rel_err_median", L->rel_err_median);
    metric_num(m, "link_rel_err_median_access", L->rel_err_access);
    metric_num(m, "link_rel_err_median_uplink", L->rel_err_uplink);
    /* the intervals against the truth: the share holding it (want the confidence, 0.90) and
     * how wide they are, over the links with an interval (link_cover_links of them) */
    fprintf(m, "link_cover_links: %d\n", L->ci.n);
    metric_num(m, "link_cover", L->ci.cover);
    metric_num(m, "link_cover_access", L->ci_access.cover);
    metric_num(m, "link_cover_uplink", L->ci_uplink.cover);
    metric_num(m, "link_ci_rel_halfwidth", L->ci.rel_halfwidth);
    metric_num(m, "link_ci_rel_halfwidth_access", L->ci_access.rel_halfwidth);
    metric_num(m, "link_ci_rel_halfwidth_uplink", L->ci_uplink.rel_halfwidth);
    fprintf(m, "link_rounds: %d\nlink_rounds_run: %d\nlink_pairs: %d\nlink_rank: %d\n", M->plan.nrounds,
            M->links.rounds_run, M->plan.npairs, M->plan.rank);
    fprintf(m, "link_links: %d\nlink_aggregated: %d\nlink_undetermined: %d\n", M->links.nlinks, aggregated,
            M->links.undetermined);
    fprintf(m, "link_plan_cpu_s: %.4f\n", M->link_cpu_s);
    fprintf(m, "link_sim_time_s: %.6f\n", M->link_time_us * 1e-6);
    fprintf(m, "link_partial: %s\n", M->links.partial ? "true" : "false");
}

/* ---- the lower bound on probing time (toposcope/bound.h) ---- */

#define BOUND_SAMPLES 16384   /* round trips per calibration pair, outside the run's time */

static double bound_sample(void *ctx, int a, int b)
{
    return ts_sim_sample_once(ctx, a, b);
}

/* The bound for the true fabric: its noise and level steps measured on calibration pairs of the
 * simulator (drawn after the run, so they change none of its samples and cost none of its time),
 * its round trip the fastest the run itself measured. */
static void bound_metrics(FILE *m, const sim_options *o, ts_sim *sim, const ts_probe_engine *e,
                          const ts_fabric *truth)
{
    double floor_us = INFINITY;
    for (long i = 0; i < ts_probe_npairs(e); i++) {
        const ts_pair_stats *s = ts_probe_pair_at(e, i);
        if (s->samples > 0 && s->min_us < floor_us)
            floor_us = s->min_us;
    }
    ts_time_bound b;
    ts_error err;
    fprintf(m, "# lower bound on discovery's probing time for a tree exact in bound_exact_share of runs\n");
    if (ts_probe_time_bound(truth, bound_sample, sim, BOUND_SAMPLES, floor_us, o->bound_exact, &b, &err) != TS_OK) {
        fprintf(m, "probe_time_bound_s: null\n");
        return;
    }
    if (isfinite(b.bound_s))
        fprintf(m, "probe_time_bound_s: %.6g\n", b.bound_s);
    else
        fprintf(m, "probe_time_bound_s: null\n");
    fprintf(m, "bound_exact_share: %g\n", o->bound_exact);
    metric_num(m, "bound_rtt_floor_us", b.rtt_floor_us);
    for (int lv = 0; lv < b.levels; lv++) {
        char key[64];
        snprintf(key, sizeof key, "bound_step_us_level%d", lv + 1);
        metric_num(m, key, b.step_us[lv]);
        snprintf(key, sizeof key, "bound_tv_level%d", lv + 1);
        metric_num(m, key, b.tv[lv]);
        fprintf(m, "bound_samples_level%d: %d\n", lv + 1, b.samples[lv]);
    }
}

/* What the agents would write in status.yaml for this measurement, with or without links. */
static void verdict_metrics(FILE *m, const ts_measure *M)
{
    char why[TS_ERROR_TEXT_MAX];
    fprintf(m, "status: %s\nstatus_reason: ", ts_measure_verdict(M, why, sizeof why));
    ts_emit_yaml_string(m, why);
    fputc('\n', m);
}

/* ---- anomalies against a baseline ---- */

/* One earlier run in dir (tree.yaml + links.yaml) into the builder; 0 when dir holds none. */
static int baseline_add_run(ts_baseline_builder *bb, const char *dir, const ts_fabric *truth, int *runs)
{
    char tree[PATH_MAX], links[PATH_MAX];
    snprintf(tree, sizeof tree, "%s/tree.yaml", dir);
    snprintf(links, sizeof links, "%s/links.yaml", dir);
    if (access(links, F_OK) != 0)
        return CLI_OK;
    ts_link_obs_set s;
    ts_error err;
    int rc = ts_link_obs_load_run(tree, links, truth, &s, &err);
    if (rc != TS_OK) {
        cli_error("sim", "baseline: %s", err.text);
        return rc == TS_ENOMEM ? CLI_FAIL : CLI_USAGE;
    }
    rc = ts_baseline_builder_add_set(bb, &s);
    ts_link_obs_set_free(&s);
    if (rc != TS_OK) {
        cli_error("sim", "baseline: out of memory");
        return CLI_FAIL;
    }
    (*runs)++;
    return CLI_OK;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* --baseline PATH: a baseline file, or a directory of earlier runs (itself and its
 * subdirectories, in name order). Links are named through the truth fabric, which plays the
 * admin's topology.conf here. */
static int baseline_load(const char *path, const ts_fabric *truth, ts_baseline *b)
{
    ts_error err;
    struct stat st;
    if (stat(path, &st) != 0) {
        cli_error("sim", "--baseline %s: %s", path, strerror(errno));
        return CLI_USAGE;
    }
    if (!S_ISDIR(st.st_mode)) {
        if (ts_baseline_load(b, path, &err) != TS_OK) {
            cli_error("sim", "%s", err.text);
            return CLI_USAGE;
        }
        return CLI_OK;
    }
    ts_baseline_builder *bb = ts_baseline_builder_new();
    DIR *d = opendir(path);
    char **sub = NULL;
    int nsub = 0, runs = 0, rc = CLI_FAIL;
    if (!bb || !d) {
        cli_error("sim", "--baseline %s: %s", path, bb ? strerror(errno) : "out of memory");
        goto out;
    }
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.')
            continue;
        char **t = realloc(sub, sizeof *sub * (size_t)(nsub + 1));
        if (!t || !(t[nsub] = malloc(strlen(path) + strlen(de->d_name) + 2))) {
            sub = t ? t : sub;
            cli_error("sim", "out of memory");
            goto out;
        }
        sub = t;
        sprintf(sub[nsub++], "%s/%s", path, de->d_name);
    }
    if (nsub > 1)
        qsort(sub, (size_t)nsub, sizeof *sub, cmp_str);
    if ((rc = baseline_add_run(bb, path, truth, &runs)) != CLI_OK)
        goto out;
    for (int i = 0; i < nsub; i++) {
        if (stat(sub[i], &st) == 0 && S_ISDIR(st.st_mode) &&
            (rc = baseline_add_run(bb, sub[i], truth, &runs)) != CLI_OK)
            goto out;
    }
    if (runs == 0) {
        cli_error("sim", "--baseline %s: no earlier run there (no links.yaml in it or its subdirectories)", path);
        rc = CLI_USAGE;
        goto out;
    }
    if (ts_baseline_builder_finish(bb, b, &err) != TS_OK) {
        cli_error("sim", "%s", err.text);
        rc = CLI_FAIL;
        goto out;
    }
    rc = CLI_OK;
out:
    if (d)
        closedir(d);
    for (int i = 0; i < nsub; i++)
        free(sub[i]);
    free(sub);
    ts_baseline_builder_free(bb);
    return rc;
}

/* anomalies.yaml of this run: its links against the baseline, and the nodes that did not answer. */
static int anomaly_stage(const sim_options *o, const ts_measure *M, const ts_fabric *truth,
                         int *nflagged, int *nchecked)
{
    ts_error err;
    ts_policy pol;
    ts_baseline b;
    ts_link_obs_set obs = { 0 };
    ts_anomaly_list al = { 0 };
    int rc = CLI_FAIL;
    ts_baseline_init(&b);
    ts_policy_default(&pol);
    if (o->policy) {
        const char *dirs[CLI_POLICY_DIRS];
        cli_policy_dirs(dirs);
        if (ts_policy_load(&pol, o->policy, dirs, &err) != TS_OK) {
            cli_error("sim", "%s", err.text);
            return CLI_USAGE;
        }
    }
    if ((rc = baseline_load(o->baseline, truth, &b)) != CLI_OK)
        return rc;
    rc = CLI_FAIL;
    ts_detect_options dopt;
    ts_detect_options_default(&dopt);
    dopt.threshold_pct = pol.anomaly_pct;
    dopt.threshold_us = pol.anomaly_us;
    dopt.z = o->anomaly_z;
    if (ts_link_obs_from_result(&M->tree, &M->links, truth, &obs, &err) != TS_OK ||
        ts_anomaly_detect(&obs, &b, &dopt, &al, &err) != TS_OK) {
        cli_error("sim", "%s", err.text);
        goto out;
    }
    for (int i = 0; i < M->rep.nunmeasured; i++)
        if (ts_anomaly_add_unreachable(&al, truth->v[truth->node_vertex[M->rep.unmeasured[i]]].name, &b,
                                       &err) != TS_OK) {
            cli_error("sim", "%s", err.text);
            goto out;
        }
    ts_anomaly_sort(&al);
    FILE *f = cli_open_out("sim", o->out, "anomalies.yaml");
    if (!f)
        goto out;
    ts_anomalies_write_yaml(&al, f);
    if (cli_close_out("sim", f, o->out, "anomalies.yaml"))
        goto out;
    *nflagged = al.n;
    *nchecked = al.checked;
    rc = CLI_OK;
out:
    ts_anomaly_list_free(&al);
    ts_link_obs_set_free(&obs);
    ts_baseline_free(&b);
    return rc;
}

int cmd_sim(int argc, char **argv)
{
    sim_options o;
    int rc = parse_options(argc, argv, &o);
    if (rc != CLI_OK)
        return rc;
    ts_error err;
    ts_fabric truth;
    ts_model_params params;
    ts_model model = {0};
    ts_sim *sim = NULL;
    ts_probe_engine engine = {0};
    ts_measure M;
    int measured = 0;
    link_score score;
    char **names = NULL;
    int dirfd = -1;
    ts_fabric_init(&truth);
    memset(&params, 0, sizeof params);
    memset(&score, 0, sizeof score);
    int status = CLI_FAIL;

    ts_measure_options mo;
    ts_measure_options_default(&mo);
    mo.links = o.links;
    mo.link_extra_rounds = o.link_extra_rounds;
    /* pmm is no discovery method: it measures links on the known (true) tree */
    int pmm = strcmp(o.method, "pmm") == 0;
    if (!pmm && ts_method_parse(o.method, &mo.method) != TS_OK) {
        cli_error("sim", "unknown --method '%s' (fast, allpairs, shirai, pmm)", o.method);
        return CLI_USAGE;
    }
    if (ts_fabric_load_topology_conf(&truth, o.fabric, &err) != TS_OK ||
        (o.nodes && keep_allocation(&truth, o.fabric, o.nodes, &err) != TS_OK)) {
        cli_error("sim", "%s", err.text);
        status = CLI_USAGE;
        goto out;
    }
    if (ts_model_params_profile(&params, o.profile, &err) != TS_OK ||
        (o.params && ts_model_params_load_yaml(&params, o.params, &err) != TS_OK)) {
        cli_error("sim", "%s", err.text);
        status = CLI_USAGE;
        goto out;
    }
    if (ts_model_realize(&model, &truth, &params, o.fabric_seed, o.faults, o.nfaults, &err) != TS_OK) {
        cli_error("sim", "%s", err.text);
        status = CLI_USAGE;
        goto out;
    }
    if (ts_sim_create(&sim, &truth, &model, o.seed, &err) != TS_OK ||
        ts_probe_engine_init(&engine, ts_sim_transport(sim), &o.rule, o.budget_ms * 1e3, &err) != TS_OK) {
        cli_error("sim", "%s", err.text);
        goto out;
    }
    engine.plan_seed = o.plan_seed;
    engine.least_level_step_us = o.level_step_ns / 1e3;
    engine.samples_first = o.samples_first;
    engine.samples_max = o.samples_max;
    engine.estimator = o.estimator;
    names = malloc(sizeof(char *) * (size_t)truth.nnodes);
    if (!names) {
        cli_error("sim", "out of memory");
        goto out;
    }
    for (int i = 0; i < truth.nnodes; i++)
        names[i] = truth.v[truth.node_vertex[i]].name;
    mo.names = names;
    mo.known_tree = pmm ? &truth : NULL;
    rc = ts_measure_run(&engine, &mo, &M, &err);
    measured = 1;
    if (rc != TS_OK) {
        cli_error("sim", "%s: %s", o.method, err.text);
        goto out;
    }
    if (link_score_run(&M, &truth, &model, &score) != CLI_OK)
        goto out;
    int nflagged = 0, nchecked = 0;
    ts_accuracy acc;
    if (ts_accuracy_compare(&truth, &M.tree, (long)o.queries, o.seed, &acc, &err) != TS_OK) {
        cli_error("sim", "%s", err.text);
        goto out;
    }
    if (cli_mkdir_p(o.out) != 0 || (dirfd = open(o.out, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
        cli_error("sim", "cannot create %s", o.out);
        goto out;
    }
    if (ts_measure_write(&M, dirfd, 0644, &truth, M.links_ran ? &score.truth : NULL, &err) != TS_OK) {
        cli_error("sim", "%s: %s", o.out, err.text);
        goto out;
    }
    if (o.baseline && M.links_ran && (status = anomaly_stage(&o, &M, &truth, &nflagged, &nchecked)) != CLI_OK)
        goto out;
    status = CLI_FAIL;
    FILE *f;
    if (!(f = cli_open_out("sim", o.out, "truth.yaml")))
        goto out;
    ts_fabric_write_yaml(&truth, f);
    if (cli_close_out("sim", f, o.out, "truth.yaml"))
        goto out;
    if (!(f = cli_open_out("sim", o.out, "metrics.yaml")))
        goto out;
    write_metrics(&o, f, &M.discovered, M.disc_end_us, sim, &truth, &M.tree, &acc, &M.rep, M.disc_cpu_s);
    link_stage_metrics(f, &M, &score);
    bound_metrics(f, &o, sim, &engine, &truth);
    verdict_metrics(f, &M);
    if (o.baseline && M.links_ran)
        fprintf(f, "# anomalies against the baseline (anomalies.yaml)\nanomalies: %d\nanomaly_links_checked: %d\n",
                nflagged, nchecked);
    if (!acc.tree_exact) {
        /* which switches were merged or split, for the bench's failure list */
        char why[1024];
        ts_accuracy_explain(&truth, &M.tree, why, sizeof why);
        fprintf(f, "explanation: \"");
        for (const char *c = why; *c; c++)
            fputs(*c == '"' ? "\\\"" : *c == '\\' ? "\\\\" : *c == '\n' ? " " : (char[2]){*c, 0}, f);
        fprintf(f, "\"\n");
    }
    if (cli_close_out("sim", f, o.out, "metrics.yaml"))
        goto out;
    status = CLI_OK;
out:
    if (dirfd >= 0)
        close(dirfd);
    ts_link_truth_free(&score.truth);
    if (measured)
        ts_measure_free(&M);
    free(names);
    if (engine.db)
        ts_probe_engine_free(&engine);
    ts_sim_free(sim);
    ts_model_free(&model);
    ts_model_params_free(&params);
    ts_fabric_free(&truth);
    return status;
}
