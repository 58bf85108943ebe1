/* toposcope — link identity across jobs, per-link baselines and anomaly detection.
 *
 * Identity. A job's inferred tree names its switches arbitrarily, so a link is keyed by what it
 * separates: a node's access link by the node name; an uplink by the nodes on its smaller side
 * (a hostlist in braces, "{n[01-08]}", or "{COUNT nodes FIRST..LAST #HASH}" when that would be
 * long), and by the admin's switch name when an admin tree (topology.conf) is given and its
 * switch holds exactly those of the job's nodes. Runs and jobs over the same nodes therefore
 * name the same links alike, whichever vertex the inference chose as the root.
 *
 * Baseline. Per link id: the median of earlier estimates, their MAD, the median of their
 * standard errors and their count. A bounded, versioned YAML file (doc/toposcope-epilog.8):
 *
 *   toposcope_baseline: 1
 *   links:
 *     - {link: "n0001", kind: access, median_us: 7.98, mad_us: 0.04, se_us: 0.06, count: 5}
 *
 * Detection. A link is slow when its excess over the baseline median is (1) significant: at
 * least z standard deviations of the difference, from this job's standard error and the
 * baseline's spread (the larger of its MAD and its typical standard error, plus the
 * uncertainty of a median of `count` values), and (2) above both policy thresholds, percent of
 * the baseline and absolute µs. Nodes that did not answer are anomalies of their access link,
 * and so are links whose pairs lost probes (see ts_anomaly_detect). */
#ifndef TOPOSCOPE_ANOMALY_H
#define TOPOSCOPE_ANOMALY_H

#include <stddef.h>
#include <stdio.h>
#include "toposcope/error.h"
#include "toposcope/fabric.h"
#include "toposcope/links.h"
#include "toposcope/linksolve.h"

#define TS_LINK_ID_MAX 512           /* bytes of an id, NUL included */
#define TS_BASELINE_VERSION 1
#define TS_BASELINE_MAX_BYTES (32u << 20)
#define TS_BASELINE_MAX_LINKS (1 << 20)
#define TS_ANOMALY_Z_DEFAULT 5.0
#define TS_ANOMALY_SCORE_UNREACHABLE 1000.0
#define TS_ANOMALY_SCORE_LOSS 500.0
#define TS_ANOMALY_LOSS_PCT_DEFAULT 25.0

/* ---- identity ---- */

/* The id of the link above tree vertex v (a node: its name; a switch: its node set, mapped
 * through admin when given). job_count: per admin vertex, how many of the job's nodes lie below
 * it (ts_link_admin_counts), NULL without admin. */
int ts_link_id(const ts_fabric *tree, int v, const ts_fabric *admin, const int *job_count,
               char *out, size_t max);
/* job_count[admin vertex] = number of the tree's nodes below it (nodes unknown to admin are
 * left out); caller frees. NULL on allocation failure. */
int *ts_link_admin_counts(const ts_fabric *admin, const ts_fabric *tree);

/* ---- a job's link ids against the admin's tree ---- */

/* How a link id of one job's record names a link of the admin's tree (topology.conf).
 * The rule, for an id that names a node set S (the job's nodes on the smaller side of the link):
 * EXACT, the admin switch whose subtree holds exactly S of the job's nodes, or exactly the job's
 * other nodes (the same link seen from its other side), the deepest such switch when several
 * hold the same nodes (a switch whose job nodes all sit under one child: the job cannot tell
 * their uplinks apart); else WITHIN, the smallest admin switch whose subtree contains S (not
 * the root: that says nothing), and the link is somewhere inside it (a mis-cabled node, a
 * switch topology.conf lacks); else NONE (a node topology.conf does not list). An id that is
 * already a vertex of the admin's tree (a node's access link, a switch named by an epilog that
 * had the topology) is EXACT. A hashed id ("{N nodes A..B #H}") is matched by its count and
 * hash, so EXACT only. */
typedef enum ts_link_match_kind {
    TS_MATCH_NONE = 0,
    TS_MATCH_EXACT,
    TS_MATCH_WITHIN,
} ts_link_match_kind;

typedef struct ts_link_match {
    ts_link_match_kind kind;
    int vertex;                      /* the admin vertex (EXACT, WITHIN), else TS_NONE */
} ts_link_match;

typedef struct ts_link_matcher ts_link_matcher;

/* A matcher for admin's ids (admin must outlive it), in time and memory linear in admin's size. */
int ts_link_matcher_new(const ts_fabric *admin, ts_link_matcher **out, ts_error *err);
/* The job whose ids are matched next: its measured nodes are the hostlists groups[0..n) (a
 * record's leaf_groups: the nodes of its tree; a node that did not answer is on neither side
 * of any link). Time linear in those nodes times admin's depth, whatever admin's size, so a
 * report reuses one matcher for every record. */
int ts_link_matcher_set_job(ts_link_matcher *m, char *const *groups, int n, ts_error *err);
void ts_link_matcher_free(ts_link_matcher *m);
/* The admin link id names, in time linear in the id's nodes (TS_MATCH_NONE when out of memory). */
ts_link_match ts_link_match_id(const ts_link_matcher *m, const char *id);
/* "leaf05", "within pod01" or "matches no switch of topology.conf" for a match of id, into out. */
void ts_link_match_describe(const ts_fabric *admin, ts_link_match mt, char *out, size_t max);

/* ---- one job's (or run's) link estimates, keyed by id ---- */

typedef struct ts_link_obs {
    char id[TS_LINK_ID_MAX];
    int access;
    double est_us, lo_us, hi_us;
    double se_us;                    /* the estimate's standard error (se_us of links.yaml and the
                                      * records; files without it: ts_link_obs_interval_se) */
    long samples;
    int pairs;
    int uncertain;                   /* at a switch discovery left unresolved (tree.yaml), above or below:
                                      * it may span hidden switches, so it is recorded but neither
                                      * held against a baseline nor learned into one */
} ts_link_obs;

typedef struct ts_link_obs_set {
    int n;
    ts_link_obs *o;
} ts_link_obs_set;

void ts_link_obs_set_free(ts_link_obs_set *s);
/* A standard error read off an interval lo..hi at two-sided confidence conf: (hi - lo) / (2 z).
 * For files written before se_us was: their intervals stood on the error scale's estimate. */
double ts_link_obs_interval_se(double lo_us, double hi_us, double conf);
/* From a solve on tree (ts_measure: tree and links). Links without an estimate are left out. */
int ts_link_obs_from_result(const ts_fabric *tree, const ts_link_result *res, const ts_fabric *admin,
                            ts_link_obs_set *out, ts_error *err);
/* From links.yaml (as ts_links_write_yaml writes it) of a run whose tree is `tree` (tree.yaml):
 * entries are matched to tree vertices by tree_link when present, else by link. */
int ts_link_obs_parse_links_yaml(const ts_fabric *tree, const char *text, size_t len,
                                 const char *source, const ts_fabric *admin, ts_link_obs_set *out,
                                 ts_error *err);
int ts_link_obs_load_run(const char *tree_yaml, const char *links_yaml, const ts_fabric *admin,
                         ts_link_obs_set *out, ts_error *err);

/* ---- baseline ---- */

typedef struct ts_baseline_link {
    char id[TS_LINK_ID_MAX];
    int access;
    double median_us, mad_us, se_us;
    int count;
} ts_baseline_link;

typedef struct ts_baseline {
    int n, cap;
    ts_baseline_link *l;
    int *slot;                       /* open addressing over ids */
    int slot_cap;
} ts_baseline;

/* Accumulates estimates per id, then summarizes them into a baseline. */
typedef struct ts_baseline_builder ts_baseline_builder;

ts_baseline_builder *ts_baseline_builder_new(void);
int ts_baseline_builder_add(ts_baseline_builder *bb, const char *id, int access, double est_us,
                            double se_us);
/* One observation, unless it is uncertain (a link at a switch left unresolved); then every
 * observation of the set. Both return TS_OK, TS_ELIMIT or TS_ENOMEM as ts_baseline_builder_add. */
int ts_baseline_builder_learn(ts_baseline_builder *bb, const ts_link_obs *o);
int ts_baseline_builder_add_set(ts_baseline_builder *bb, const ts_link_obs_set *s);
/* b is initialised here; ids in sorted order. */
int ts_baseline_builder_finish(ts_baseline_builder *bb, ts_baseline *b, ts_error *err);
void ts_baseline_builder_free(ts_baseline_builder *bb);

void ts_baseline_init(ts_baseline *b);
void ts_baseline_free(ts_baseline *b);
const ts_baseline_link *ts_baseline_find(const ts_baseline *b, const char *id);
int ts_baseline_write(const ts_baseline *b, FILE *out);
/* b is initialised here; every refusal names SOURCE:LINE:COLUMN. */
int ts_baseline_parse(ts_baseline *b, const char *text, size_t len, const char *source, ts_error *err);
int ts_baseline_load(ts_baseline *b, const char *path, ts_error *err);

/* ---- detection ---- */

typedef enum ts_anomaly_kind {
    TS_ANOMALY_SLOW = 0,
    TS_ANOMALY_UNREACHABLE,
    TS_ANOMALY_LOSS,
} ts_anomaly_kind;

typedef struct ts_anomaly {
    char id[TS_LINK_ID_MAX];
    int access;
    ts_anomaly_kind kind;
    double expected_us, observed_us, excess_us, excess_pct;
    double z;                        /* excess in standard deviations of the difference */
    double loss_pct;                 /* TS_ANOMALY_LOSS: probes its pairs lost, NAN otherwise */
    double score;                    /* severity: z (below TS_ANOMALY_SCORE_LOSS), TS_ANOMALY_SCORE_LOSS
                                      * + the 95% lower bound of loss_pct (its probes' evidence)
                                      * for a lossy link, TS_ANOMALY_SCORE_UNREACHABLE
                                      * for a silent node */
} ts_anomaly;

typedef struct ts_anomaly_list {
    int n, cap;
    ts_anomaly *a;
    int checked;                     /* links compared with a baseline entry */
} ts_anomaly_list;

typedef struct ts_detect_options {
    double threshold_pct;            /* policy anomaly.threshold_pct */
    double threshold_us;             /* policy anomaly.threshold_us */
    double z;                        /* significance, TS_ANOMALY_Z_DEFAULT */
    double loss_pct;                 /* a link whose pairs answered this much less often than the
                                      * job's typical link is lossy (TS_ANOMALY_LOSS_PCT_DEFAULT) */
} ts_detect_options;

void ts_detect_options_default(ts_detect_options *o);
void ts_anomaly_list_free(ts_anomaly_list *l);
/* Compare every observed link that has a baseline entry; append the slow ones. Independent of
 * any baseline, a link whose pairs got fewer answered probes per pair than the job's median link
 * (every pair of a link round sends the same number of probes) by loss_pct or more is lossy:
 * one lossy link thins all of its own pairs, a neighbour only the few that cross it. Lossy
 * links rank by the lower bound of their loss, so that of two with the same share the one
 * with more probes behind it (the link its neighbour's pairs all cross) comes first. */
int ts_anomaly_detect(const ts_link_obs_set *obs, const ts_baseline *b, const ts_detect_options *o,
                      ts_anomaly_list *out, ts_error *err);
/* A node that did not answer: an anomaly of its access link. */
int ts_anomaly_add_unreachable(ts_anomaly_list *l, const char *node, const ts_baseline *b,
                               ts_error *err);
/* Most severe first (score, then excess, then id). */
void ts_anomaly_sort(ts_anomaly_list *l);
/* anomalies.yaml: a list of {link, kind, reason, expected_us, observed_us, excess_pct, excess_us,
 * score}, most severe first. */
int ts_anomalies_write_yaml(const ts_anomaly_list *l, FILE *out);

#endif
