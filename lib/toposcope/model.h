/* toposcope — the latency model of a fabric: parameters, built-in profiles, YAML overrides,
 * injected faults, and the "realized" hardware of one fabric.
 *
 *   RTT(a,b) = 2 * sum of one-way latencies of the links on the tree path
 *            + host part (h_a + h_b) / 2, multiplied by lognormal jitter exp(sigma * Z)
 *            + exponential jitter (mean jitter_exp_mean_us)
 *            + skewed jitter exp(ln(jitter_skew_median_us) + jitter_skew_sigma * Z')
 *            + with probability outlier_prob, U(outlier_min_us, outlier_max_us)
 *            + with probability power_prob, U(power_min_us, power_max_us)
 *            + hold of a, + hold of b: per round, a host is held with probability hold_prob
 *              and then pays U(hold_min_us, hold_max_us) on every probe of that round
 *            + flow_penalty_us for every extra concurrent flow on each directed link used
 *
 * Links may also have a rate (bandwidth_mbps, absent = unlimited). The simulator's probes are a
 * few bytes, so it never reads the rate; the testbed's fabric emulator queues every frame on
 * each link direction it crosses, so flows sharing an uplink share its rate.
 *
 * h_x is node x's stack overhead per round trip, so two nominal hosts add host_overhead_us.
 * Per-node and per-link variation is hardware: drawn once from the fabric seed. Run noise is
 * drawn from the run seed, so runs of one fabric serve as each other's baseline. */
#ifndef TOPOSCOPE_MODEL_H
#define TOPOSCOPE_MODEL_H

#include <stdint.h>
#include "toposcope/error.h"
#include "toposcope/fabric.h"

#define TS_MODEL_MAX_LEVELS 16     /* level 0 = access links, k = uplink of a switch of height k */
#define TS_NAME_MAX 256

typedef struct ts_link_override {
    char name[TS_NAME_MAX];        /* a node (access link) or switch (uplink) name */
    double latency_us;             /* NAN = keep */
    double variation;              /* NAN = keep */
    double loss;                   /* NAN = keep; probability per traversal */
    double bandwidth_mbps;         /* NAN = keep */
} ts_link_override;

typedef struct ts_host_override {
    char name[TS_NAME_MAX];
    double overhead_us;            /* NAN = keep */
    double variation;              /* NAN = keep */
} ts_host_override;

typedef struct ts_level_params {
    double latency_us;             /* NAN = profile default */
    double variation;              /* NAN = profile default */
    double bandwidth_mbps;         /* NAN = the file's bandwidth_mbps */
} ts_level_params;

/* Intra-node levels of the hierarchy (lib/place/groups.c), outermost first. */
enum { TS_INTRA_NODE, TS_INTRA_PACKAGE, TS_INTRA_NUMA, TS_INTRA_L3, TS_INTRA_CORE, TS_INTRA_LEVELS };
extern const char *const ts_intra_level_names[TS_INTRA_LEVELS];   /* "node", ... "core" */

typedef struct ts_model_params {
    char profile[32];
    double host_overhead_us;       /* nominal per round trip */
    double host_variation;         /* relative, uniform +-, fixed per node */
    double link_latency_us;        /* nominal one-way */
    double link_variation;         /* relative, uniform +-, fixed per link */
    double jitter_sigma;           /* lognormal sigma on the host part */
    double jitter_exp_mean_us;     /* additive exponential jitter */
    /* Additive lognormal jitter (0 = none): always positive with a long upper tail, the shape
     * of a kernel stack's round trips (a tight lower tail, a long upper one). */
    double jitter_skew_median_us, jitter_skew_sigma;
    double outlier_prob, outlier_min_us, outlier_max_us;
    /* Probes that wake a core from a deep C-state: a per-probe probability and the added range */
    double power_prob, power_min_us, power_max_us;
    /* A host held by its scheduler (descheduled agent, a busy core, interrupts): per round of
     * probes (hold_window_us 0) or per window of hold_window_us of virtual time (a round belongs
     * to the window it starts in), each host is held with probability hold_prob, and every probe
     * it takes part in meanwhile pays the same U(hold_min_us, hold_max_us). Unlike the per-probe
     * terms it survives a pair's minimum and moves all of a host's pairs of the round together. */
    double hold_prob, hold_min_us, hold_max_us, hold_window_us;
    double loss_prob;              /* per probe, everywhere */
    double timeout_us;             /* cost of a lost probe */
    double flow_penalty_us;        /* per extra concurrent flow on a link, same direction */
    double bandwidth_mbps;         /* every link's rate, each direction; 0 = unlimited */
    ts_level_params level[TS_MODEL_MAX_LEVELS];
    /* Messages inside a node, for the LogP estimates of hints.yaml only (the simulator's probes
     * run between nodes): one-way latency between two ranks whose closest common group is that
     * level, and the software overhead per message on each side. NAN in every profile: the
     * model has no intra-node part unless a parameter file gives one. */
    double intra_latency_us[TS_INTRA_LEVELS];
    double intra_overhead_us;
    int nlink_overrides, nhost_overrides;
    ts_link_override *link_overrides;
    ts_host_override *host_overrides;
} ts_model_params;

/* The built-in profiles (doc/params.md): two idealised ones, still under their old names too,
 * and three from published round trips. */
#define TS_MODEL_PROFILES_TEXT "ideal-ethernet (old name: ethernet), ideal-infiniband (old name: " \
    "infiniband), ethernet-udp, ipoib-udp, rdma"

/* Fills p with a profile by name (an old name gives its profile, whose name p->profile then
 * holds). Returns TS_EINPUT for an unknown name. p is initialised here (its earlier contents are
 * not freed); on error it is empty, safe to ts_model_params_free. */
int ts_model_params_profile(ts_model_params *p, const char *profile, ts_error *err);
void ts_model_params_free(ts_model_params *p);
/* Apply a YAML file on top of p (a `profile:` key in it first resets p to that profile).
 * Errors name FILE:LINE:COLUMN. */
int ts_model_params_load_yaml(ts_model_params *p, const char *path, ts_error *err);
int ts_model_params_parse_yaml(ts_model_params *p, const char *text, size_t len,
                               const char *source, ts_error *err);

/* Injected faults, --inject SPEC:
 *   degrade:LINK:+30%   degrade:LINK:+5us   loss:LINK:20%   dead:NODE   slowhost:NODE:+10us */
typedef enum ts_fault_kind {
    TS_FAULT_DEGRADE_PCT,
    TS_FAULT_DEGRADE_US,
    TS_FAULT_LOSS,
    TS_FAULT_DEAD,
    TS_FAULT_SLOWHOST,
} ts_fault_kind;

typedef struct ts_fault {
    ts_fault_kind kind;
    char target[TS_NAME_MAX];
    double value;                  /* percent, microseconds or probability (0..1) */
} ts_fault;

int ts_fault_parse(const char *spec, ts_fault *out, ts_error *err);

/* The realized hardware of one fabric. Arrays are indexed by vertex. */
typedef struct ts_model {
    ts_model_params p;             /* a private copy (overrides included) */
    int nvert;
    double *link_us;               /* one-way latency of the vertex's uplink (root: 0) */
    double *link_loss;             /* loss probability per traversal of the uplink */
    double *link_mbps;             /* the uplink's rate in each direction, 0 = unlimited */
    double *host_us;               /* nodes: overhead per round trip */
    unsigned char *dead;           /* nodes: never answers */
} ts_model;

/* Draw per-node and per-link variation from fabric_seed, apply overrides and faults (faults
 * naming unknown links or nodes are TS_EINPUT). Also writes link_us/host_us into f's vertices
 * so the truth can be printed and compared. */
int ts_model_realize(ts_model *m, ts_fabric *f, const ts_model_params *p, uint64_t fabric_seed,
                     const ts_fault *faults, int nfaults, ts_error *err);
void ts_model_free(ts_model *m);
/* Noise-free round trip: 2 * links + host part (no jitter, no interference). */
double ts_model_base_rtt(const ts_model *m, const ts_fabric *f, int node_a, int node_b);
/* The mean of the additive jitter every round trip pays (exponential and skewed parts; not the
 * sporadic outliers and power-state wake-ups), in µs. */
double ts_model_mean_jitter_us(const ts_model_params *p);

#endif
