/* toposcope — the latency model: built-in profiles, YAML parameters, injected faults and the
 * realized hardware of one fabric (see toposcope/model.h and doc/params.md). */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "toposcope/model.h"
#include "toposcope/rng.h"
#include "util/ydoc.h"

#define PARAMS_MAX_BYTES (1024 * 1024)
#define PARAMS_MAX_DEPTH 8
#define PARAMS_MAX_OVERRIDES 100000

/* Stream ids under the fabric seed; one per purpose so that node and link draws never interact. */
enum { STREAM_HOST = 0x686f7374, STREAM_LINK = 0x6c696e6b };

/* ------------------------------------------------------------------------------------------ */
/* Profiles                                                                                   */

const char *const ts_intra_level_names[TS_INTRA_LEVELS] = { "node", "package", "numa", "l3", "core" };

/* Every number below is explained, with its source, in doc/params.md ("Profiles"). */
typedef struct profile_def {
    const char *name;
    const char *old_name;          /* kept working for the scripts and tests that use it */
    double host_overhead_us, host_variation, link_latency_us, link_variation;
    double jitter_sigma, jitter_exp_mean_us, skew_median_us, skew_sigma;
    double outlier_prob, outlier_min_us, outlier_max_us;
    double timeout_us, flow_penalty_us;
} profile_def;

static const profile_def profiles[] = {
    /* Idealised: levels 3-15x clearer than kernel UDP sees them on a real Ethernet fabric. */
    { .name = "ideal-ethernet", .old_name = "ethernet",
      .host_overhead_us = 20, .host_variation = 0.05, .link_latency_us = 2.5, .link_variation = 0.10,
      .jitter_sigma = 0.05, .jitter_exp_mean_us = 2,
      .outlier_prob = 0.01, .outlier_min_us = 20, .outlier_max_us = 200,
      .timeout_us = 1000, .flow_penalty_us = 1 },
    { .name = "ideal-infiniband", .old_name = "infiniband",
      .host_overhead_us = 1.2, .host_variation = 0.05, .link_latency_us = 0.1, .link_variation = 0.10,
      .jitter_sigma = 0.02, .jitter_exp_mean_us = 0.05,
      .outlier_prob = 0.005, .outlier_min_us = 1, .outlier_max_us = 10,
      .timeout_us = 100, .flow_penalty_us = 0.05 },
    /* Kernel UDP over 25 GbE (sockperf, 449 213 round trips): base 63.1 = 4 x 0.6 links + 60.7
     * hosts, plus a lognormal whose median 1.5 and shape 0.92 give the run's median, p99, p99.9
     * and sd; its own tail reaches ~150-200 us in a run as long (the run's largest: 288 us),
     * so no outliers. */
    { .name = "ethernet-udp",
      .host_overhead_us = 60.7, .host_variation = 0.15, .link_latency_us = 0.6, .link_variation = 0.10,
      .skew_median_us = 1.5, .skew_sigma = 0.92,
      .outlier_min_us = 100, .outlier_max_us = 300,
      .timeout_us = 1000, .flow_penalty_us = 0.5 },
    /* IP over InfiniBand, ConnectX-3 FDR10 (sockperf, 78 928 round trips): a body of base 32.9
     * (4 x 0.2 links + 32.1 hosts) plus a lognormal of median 11 and shape 0.26 (the run's
     * minimum, quartiles and median), and 3.5 % slow probes 21-29 us later, which make its p99
     * and much of its sd. */
    { .name = "ipoib-udp",
      .host_overhead_us = 32.1, .host_variation = 0.15, .link_latency_us = 0.2, .link_variation = 0.10,
      .skew_median_us = 11, .skew_sigma = 0.26,
      .outlier_prob = 0.035, .outlier_min_us = 21, .outlier_max_us = 29,
      .timeout_us = 1000, .flow_penalty_us = 0.4 },
    /* Verbs (ib_send_lat, 0.83 us one way = 1.66 us round trip, sd 0.03 one way): base 1.56
     * (4 x 0.2 links + 0.76 hosts) plus a lognormal of median 0.1 and shape 0.5 (sd 0.06). */
    { .name = "rdma",
      .host_overhead_us = 0.76, .host_variation = 0.15, .link_latency_us = 0.2, .link_variation = 0.10,
      .skew_median_us = 0.1, .skew_sigma = 0.5,
      .outlier_min_us = 1, .outlier_max_us = 10,
      .timeout_us = 100, .flow_penalty_us = 0.16 },
};

static const profile_def *find_profile(const char *name)
{
    for (size_t i = 0; i < sizeof profiles / sizeof profiles[0]; i++)
        if (strcmp(name, profiles[i].name) == 0 ||
            (profiles[i].old_name && strcmp(name, profiles[i].old_name) == 0))
            return &profiles[i];
    return NULL;
}

int ts_model_params_profile(ts_model_params *p, const char *profile, ts_error *err)
{
    /* Before the name is checked: p may be uninitialised, and after a refusal the caller still
     * frees it with ts_model_params_free. */
    memset(p, 0, sizeof *p);
    const profile_def *d = find_profile(profile ? profile : "");
    if (!d)
        return ts_fail(err, TS_EINPUT, "unknown profile '%.200s' (expected %s)",
                       profile ? profile : "(null)", TS_MODEL_PROFILES_TEXT);
    snprintf(p->profile, sizeof p->profile, "%s", d->name);
    for (int i = 0; i < TS_MODEL_MAX_LEVELS; i++)
        p->level[i].latency_us = p->level[i].variation = p->level[i].bandwidth_mbps = NAN;
    for (int i = 0; i < TS_INTRA_LEVELS; i++)
        p->intra_latency_us[i] = NAN;
    p->intra_overhead_us = NAN;
    p->host_overhead_us = d->host_overhead_us;
    p->host_variation = d->host_variation;
    p->link_latency_us = d->link_latency_us;
    p->link_variation = d->link_variation;
    p->jitter_sigma = d->jitter_sigma;
    p->jitter_exp_mean_us = d->jitter_exp_mean_us;
    p->jitter_skew_median_us = d->skew_median_us;
    p->jitter_skew_sigma = d->skew_sigma;
    p->outlier_prob = d->outlier_prob;
    p->outlier_min_us = d->outlier_min_us;
    p->outlier_max_us = d->outlier_max_us;
    p->loss_prob = 0;
    p->timeout_us = d->timeout_us;
    p->flow_penalty_us = d->flow_penalty_us;
    /* Off in every profile; the range is what waking from a deep C-state costs a round trip
     * (10 GbE: ~34 us with deep C-states and adaptive coalescing, ~15 us with neither), there so
     * that a probability alone turns it on. */
    p->power_prob = 0;
    p->power_min_us = 5;
    p->power_max_us = 20;
    /* Off in every profile: no published figure gives how often a job's node holds its agent
     * (doc/params.md). The range, tens to a couple of hundred us, is a timer tick or a short
     * time slice of a competing task; there so that a probability alone turns it on. */
    p->hold_prob = 0;
    p->hold_min_us = 10;
    p->hold_max_us = 200;
    p->hold_window_us = 0;
    return TS_OK;
}

void ts_model_params_free(ts_model_params *p)
{
    if (!p)
        return;
    free(p->link_overrides);
    free(p->host_overrides);
    p->link_overrides = NULL;
    p->host_overrides = NULL;
    p->nlink_overrides = p->nhost_overrides = 0;
}

/* dst gets its own override arrays; dst's previous contents are not freed. */
static int params_copy(ts_model_params *dst, const ts_model_params *src)
{
    *dst = *src;
    dst->link_overrides = NULL;
    dst->host_overrides = NULL;
    if (src->nlink_overrides > 0) {
        size_t sz = sizeof *src->link_overrides * (size_t)src->nlink_overrides;
        dst->link_overrides = malloc(sz);
        if (!dst->link_overrides)
            goto oom;
        memcpy(dst->link_overrides, src->link_overrides, sz);
    } else {
        dst->nlink_overrides = 0;
    }
    if (src->nhost_overrides > 0) {
        size_t sz = sizeof *src->host_overrides * (size_t)src->nhost_overrides;
        dst->host_overrides = malloc(sz);
        if (!dst->host_overrides)
            goto oom;
        memcpy(dst->host_overrides, src->host_overrides, sz);
    } else {
        dst->nhost_overrides = 0;
    }
    return TS_OK;
oom:
    ts_model_params_free(dst);
    return TS_ENOMEM;
}

/* ------------------------------------------------------------------------------------------ */
/* Value ranges, shared by the YAML schema check and by ts_model_realize                      */

typedef enum range_kind {
    R_NONNEG,   /* finite, >= 0 */
    R_PROB,     /* [0, 1] */
    R_VAR,      /* [0, 1) */
    R_SIGMA,    /* [0, 2] */
    R_POS,      /* finite, > 0 */
} range_kind;

static int in_range(double x, range_kind r)
{
    if (!isfinite(x) || x < 0)
        return 0;
    switch (r) {
    case R_NONNEG: return 1;
    case R_PROB:   return x <= 1;
    case R_VAR:    return x < 1;
    case R_SIGMA:  return x <= 2;
    case R_POS:    return x > 0;
    }
    return 0;
}

static const char *range_text(range_kind r)
{
    switch (r) {
    case R_NONNEG: return ">= 0";
    case R_PROB:   return "in [0, 1]";
    case R_VAR:    return "in [0, 1)";
    case R_SIGMA:  return "in [0, 2]";
    case R_POS:    return "> 0";
    }
    return "?";
}

/* Hand-built params (not from YAML) get the same checks, without a position. */
static int params_validate(const ts_model_params *p, ts_error *err)
{
    const struct { const char *name; double v; range_kind r; } g[] = {
        { "host_overhead_us", p->host_overhead_us, R_NONNEG },
        { "host_variation", p->host_variation, R_VAR },
        { "link_latency_us", p->link_latency_us, R_NONNEG },
        { "link_variation", p->link_variation, R_VAR },
        { "jitter.lognormal_sigma", p->jitter_sigma, R_SIGMA },
        { "jitter.exp_mean_us", p->jitter_exp_mean_us, R_NONNEG },
        { "jitter.skew_median_us", p->jitter_skew_median_us, R_NONNEG },
        { "jitter.skew_sigma", p->jitter_skew_sigma, R_SIGMA },
        { "outliers.probability", p->outlier_prob, R_PROB },
        { "outliers.min_us", p->outlier_min_us, R_NONNEG },
        { "outliers.max_us", p->outlier_max_us, R_NONNEG },
        { "power_state.probability", p->power_prob, R_PROB },
        { "power_state.min_us", p->power_min_us, R_NONNEG },
        { "power_state.max_us", p->power_max_us, R_NONNEG },
        { "host_hold.probability", p->hold_prob, R_PROB },
        { "host_hold.min_us", p->hold_min_us, R_NONNEG },
        { "host_hold.max_us", p->hold_max_us, R_NONNEG },
        { "host_hold.window_us", p->hold_window_us, R_NONNEG },
        { "loss_probability", p->loss_prob, R_PROB },
        { "timeout_us", p->timeout_us, R_NONNEG },
        { "flow_penalty_us", p->flow_penalty_us, R_NONNEG },
        { "bandwidth_mbps", p->bandwidth_mbps, R_NONNEG },   /* 0 here = unlimited */
    };
    for (size_t i = 0; i < sizeof g / sizeof g[0]; i++)
        if (!in_range(g[i].v, g[i].r))
            return ts_fail(err, TS_EINPUT, "model parameters: %s must be %s (got %g)", g[i].name,
                           range_text(g[i].r), g[i].v);
    if (p->outlier_min_us > p->outlier_max_us)
        return ts_fail(err, TS_EINPUT, "model parameters: outliers.min_us (%g) exceeds max_us (%g)",
                       p->outlier_min_us, p->outlier_max_us);
    if (p->power_min_us > p->power_max_us)
        return ts_fail(err, TS_EINPUT, "model parameters: power_state.min_us (%g) exceeds max_us "
                       "(%g)", p->power_min_us, p->power_max_us);
    if (p->hold_min_us > p->hold_max_us)
        return ts_fail(err, TS_EINPUT, "model parameters: host_hold.min_us (%g) exceeds max_us "
                       "(%g)", p->hold_min_us, p->hold_max_us);
    for (int k = 0; k < TS_MODEL_MAX_LEVELS; k++) {
        const ts_level_params *l = &p->level[k];
        if ((!isnan(l->latency_us) && !in_range(l->latency_us, R_NONNEG)) ||
            (!isnan(l->variation) && !in_range(l->variation, R_VAR)) ||
            (!isnan(l->bandwidth_mbps) && !in_range(l->bandwidth_mbps, R_POS)))
            return ts_fail(err, TS_EINPUT, "model parameters: level %d latency must be >= 0, "
                           "variation in [0, 1) and bandwidth > 0", k);
    }
    for (int i = 0; i < TS_INTRA_LEVELS; i++)
        if (!isnan(p->intra_latency_us[i]) && !in_range(p->intra_latency_us[i], R_NONNEG))
            return ts_fail(err, TS_EINPUT, "model parameters: intra_node.latency_us.%s must be >= 0",
                           ts_intra_level_names[i]);
    if (!isnan(p->intra_overhead_us) && !in_range(p->intra_overhead_us, R_NONNEG))
        return ts_fail(err, TS_EINPUT, "model parameters: intra_node.overhead_us must be >= 0");
    for (int i = 0; i < p->nlink_overrides; i++) {
        const ts_link_override *o = &p->link_overrides[i];
        if ((!isnan(o->latency_us) && !in_range(o->latency_us, R_NONNEG)) ||
            (!isnan(o->variation) && !in_range(o->variation, R_VAR)) ||
            (!isnan(o->loss) && !in_range(o->loss, R_PROB)) ||
            (!isnan(o->bandwidth_mbps) && !in_range(o->bandwidth_mbps, R_POS)))
            return ts_fail(err, TS_EINPUT, "model parameters: link override '%.200s' is out of range",
                           o->name);
    }
    for (int i = 0; i < p->nhost_overrides; i++) {
        const ts_host_override *o = &p->host_overrides[i];
        if ((!isnan(o->overhead_us) && !in_range(o->overhead_us, R_NONNEG)) ||
            (!isnan(o->variation) && !in_range(o->variation, R_VAR)))
            return ts_fail(err, TS_EINPUT, "model parameters: host override '%.200s' is out of range",
                           o->name);
    }
    return TS_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* YAML: the shared bounded tree of ydoc.h (iterative, depth-limited) is checked against the
 * schema, whose own depth is fixed, so nothing recurses on the input. The messages are this
 * file's own wording, positioned by ts_ydoc_fail.                                            */

typedef struct yctx {
    ts_ydoc d;
    ts_error *err;
} yctx;

#define yfail(c, node, ...) ts_ydoc_fail(&(c)->d, (int)((node) - (c)->d.v), (c)->err, __VA_ARGS__)

static int get_number(yctx *c, const ts_ynode *y, const char *key, range_kind r, double *out)
{
    if (y->type != TS_Y_SCALAR || !y->plain || y->len == 0)
        return yfail(c, y, "'%s' must be a number %s, not %s", key, range_text(r),
                     y->type == TS_Y_SCALAR ? (y->plain ? "an empty value" : "a quoted string")
                                            : ts_ydoc_type_name(y));
    /* strtod alone would also take hex floats, "inf", "nan" and leading blanks */
    const char *s = y->text;
    if (*s == '+' || *s == '-')
        s++;
    if (!((*s >= '0' && *s <= '9') || *s == '.'))
        return yfail(c, y, "'%s' must be a number %s, got '%.64s'", key, range_text(r), y->text);
    for (const char *q = s; *q; q++)
        if (*q == 'x' || *q == 'X')
            return yfail(c, y, "'%s' must be a decimal number, got '%.64s'", key, y->text);
    char *end;
    errno = 0;
    double v = strtod(y->text, &end);
    if (end == y->text || *end != '\0')
        return yfail(c, y, "'%s' must be a number %s, got '%.64s'", key, range_text(r), y->text);
    if (!in_range(v, r))
        return yfail(c, y, "'%s' must be %s (got %.64s)", key, range_text(r), y->text);
    *out = v;
    return TS_OK;
}

static int get_name(yctx *c, const ts_ynode *y, const char *key, char *out)
{
    if (y->type != TS_Y_SCALAR || y->len == 0)
        return yfail(c, y, "'%s' must be a non-empty name, not %s", key,
                     y->type == TS_Y_SCALAR ? "an empty value" : ts_ydoc_type_name(y));
    if (y->len >= TS_NAME_MAX)
        return yfail(c, y, "'%s' is longer than %d characters", key, TS_NAME_MAX - 1);
    memcpy(out, y->text, y->len + 1);
    return TS_OK;
}

/* Checks that y is a mapping with scalar keys drawn from `allowed` and no key twice; `noun`
 * says what a key stands for in messages ("key", "level"). The wording differs from
 * ts_ydoc_check_keys' and is what the parameter tests and doc/params.md show. */
static int check_map_of(yctx *c, const ts_ynode *y, const char *what, const char *noun,
                        const char *const *allowed, const char *allowed_text)
{
    if (y->type != TS_Y_MAP)
        return yfail(c, y, "%s must be a mapping with keys %s, not %s", what, allowed_text,
                     ts_ydoc_type_name(y));
    const ts_ynode *v = c->d.v;
    for (int k = y->first; k >= 0; k = v[v[k].next].next) {
        if (v[k].type != TS_Y_SCALAR)
            return yfail(c, &v[k], "%s: keys must be plain names, not %s", what,
                         ts_ydoc_type_name(&v[k]));
        int known = 0;
        for (int a = 0; allowed[a] && !known; a++)
            known = strcmp(allowed[a], v[k].text) == 0;
        if (!known)
            return yfail(c, &v[k], "unknown %s '%.64s' in %s (allowed: %s)", noun, v[k].text, what,
                         allowed_text);
        /* every key is from a short list by now, so a quadratic scan stays short */
        for (int j = y->first; j != k; j = v[v[j].next].next)
            if (v[j].type == TS_Y_SCALAR && strcmp(v[j].text, v[k].text) == 0)
                return yfail(c, &v[k], "duplicate key '%.64s' in %s", v[k].text, what);
    }
    return TS_OK;
}

static int check_map(yctx *c, const ts_ynode *y, const char *what, const char *const *allowed,
                     const char *allowed_text)
{
    return check_map_of(c, y, what, "key", allowed, allowed_text);
}

static int apply_levels(yctx *c, const ts_ynode *y, ts_model_params *q)
{
    static const char *const lkeys[] = { "latency_us", "variation", "bandwidth_mbps", NULL };
    if (ts_ydoc_is_null(y))
        return TS_OK;
    /* listing the keys here keeps check_map's duplicate scan short for hostile files */
    static const char *const levkeys[] = { "access", "1", "2", "3", "4", "5", "6", "7", "8", "9",
                                           "10", "11", "12", "13", "14", "15", NULL };
    const ts_ynode *v = c->d.v;
    int rc = check_map_of(c, y, "levels", "level", levkeys, "access or 1..15");
    if (rc)
        return rc;
    for (int k = y->first; k >= 0; k = v[v[k].next].next) {
        const ts_ynode *key = &v[k], *val = &v[key->next];
        int lv = strcmp(key->text, "access") == 0 ? 0 : atoi(key->text);
        char what[96];
        snprintf(what, sizeof what, "levels.%s", key->text);
        if ((rc = check_map(c, val, what, lkeys, "latency_us, variation, bandwidth_mbps")))
            return rc;
        for (int j = val->first; j >= 0; j = v[v[j].next].next) {
            const ts_ynode *lk = &v[j], *lval = &v[lk->next];
            if (strcmp(lk->text, "latency_us") == 0)
                rc = get_number(c, lval, "latency_us", R_NONNEG, &q->level[lv].latency_us);
            else if (strcmp(lk->text, "variation") == 0)
                rc = get_number(c, lval, "variation", R_VAR, &q->level[lv].variation);
            else
                rc = get_number(c, lval, "bandwidth_mbps", R_POS, &q->level[lv].bandwidth_mbps);
            if (rc)
                return rc;
        }
    }
    return TS_OK;
}

static int apply_intra(yctx *c, const ts_ynode *y, ts_model_params *q)
{
    static const char *const ikeys[] = { "latency_us", "overhead_us", NULL };
    static const char *const lkeys[] = { "node", "package", "numa", "l3", "core", NULL };
    const ts_ynode *v = c->d.v;
    int rc = check_map(c, y, "'intra_node'", ikeys, "latency_us, overhead_us");
    for (int k = y->first; k >= 0 && !rc; k = v[v[k].next].next) {
        const ts_ynode *val = &v[v[k].next];
        if (strcmp(v[k].text, "overhead_us") == 0) {
            rc = get_number(c, val, "intra_node.overhead_us", R_NONNEG, &q->intra_overhead_us);
            continue;
        }
        if ((rc = check_map(c, val, "intra_node.latency_us", lkeys,
                            "node, package, numa, l3, core")))
            return rc;
        for (int j = val->first; j >= 0 && !rc; j = v[v[j].next].next) {
            int lv = 0;
            while (strcmp(lkeys[lv], v[j].text))
                lv++;
            char what[64];
            snprintf(what, sizeof what, "intra_node.latency_us.%s", v[j].text);
            rc = get_number(c, &v[v[j].next], what, R_NONNEG, &q->intra_latency_us[lv]);
        }
    }
    return rc;
}

static int grow(yctx *c, void **arr, int *cap, int need, size_t elem)
{
    if (need <= *cap)
        return TS_OK;
    int ncap = *cap ? *cap : 16;
    while (ncap < need)
        ncap *= 2;
    void *a = realloc(*arr, elem * (size_t)ncap);
    if (!a)
        return ts_fail(c->err, TS_ENOMEM, "%s: out of memory", c->d.src);
    *arr = a;
    *cap = ncap;
    return TS_OK;
}

static int check_override_count(yctx *c, const ts_ynode *y, const ts_model_params *q, int more)
{
    if ((long)q->nlink_overrides + q->nhost_overrides + more > PARAMS_MAX_OVERRIDES)
        return ts_fail(c->err, TS_ELIMIT, "%s:%d:%d: more than %d link and host overrides",
                       c->d.src, y->line, y->col, PARAMS_MAX_OVERRIDES);
    return TS_OK;
}

static int apply_links(yctx *c, const ts_ynode *y, ts_model_params *q)
{
    static const char *const keys[] = { "link", "latency_us", "variation", "loss",
                                        "bandwidth_mbps", NULL };
    const ts_ynode *v = c->d.v;
    if (ts_ydoc_is_null(y))
        return TS_OK;
    if (y->type != TS_Y_SEQ)
        return yfail(c, y, "'links' must be a list of {link: NAME, latency_us, variation, loss, "
                     "bandwidth_mbps}, not %s", ts_ydoc_type_name(y));
    int rc = check_override_count(c, y, q, y->n);
    if (rc)
        return rc;
    int cap = q->nlink_overrides;
    if ((rc = grow(c, (void **)&q->link_overrides, &cap, q->nlink_overrides + y->n,
                   sizeof *q->link_overrides)))
        return rc;
    for (int e = y->first; e >= 0; e = v[e].next) {
        if ((rc = check_map(c, &v[e], "a links entry", keys,
                            "link, latency_us, variation, loss, bandwidth_mbps")))
            return rc;
        ts_link_override o = { .latency_us = NAN, .variation = NAN, .loss = NAN,
                               .bandwidth_mbps = NAN };
        int named = 0;
        for (int k = v[e].first; k >= 0 && !rc; k = v[v[k].next].next) {
            const ts_ynode *key = &v[k], *val = &v[key->next];
            if (strcmp(key->text, "link") == 0) {
                rc = get_name(c, val, "link", o.name);
                named = 1;
            } else if (strcmp(key->text, "latency_us") == 0) {
                rc = get_number(c, val, "latency_us", R_NONNEG, &o.latency_us);
            } else if (strcmp(key->text, "variation") == 0) {
                rc = get_number(c, val, "variation", R_VAR, &o.variation);
            } else if (strcmp(key->text, "bandwidth_mbps") == 0) {
                rc = get_number(c, val, "bandwidth_mbps", R_POS, &o.bandwidth_mbps);
            } else {
                rc = get_number(c, val, "loss", R_PROB, &o.loss);
            }
        }
        if (rc)
            return rc;
        if (!named)
            return yfail(c, &v[e], "a links entry needs 'link: NAME' (a node or switch name)");
        q->link_overrides[q->nlink_overrides++] = o;
    }
    return TS_OK;
}

static int apply_hosts(yctx *c, const ts_ynode *y, ts_model_params *q)
{
    static const char *const keys[] = { "node", "overhead_us", "variation", NULL };
    const ts_ynode *v = c->d.v;
    if (ts_ydoc_is_null(y))
        return TS_OK;
    if (y->type != TS_Y_SEQ)
        return yfail(c, y, "'hosts' must be a list of {node: NAME, overhead_us, variation}, not %s",
                     ts_ydoc_type_name(y));
    int rc = check_override_count(c, y, q, y->n);
    if (rc)
        return rc;
    int cap = q->nhost_overrides;
    if ((rc = grow(c, (void **)&q->host_overrides, &cap, q->nhost_overrides + y->n,
                   sizeof *q->host_overrides)))
        return rc;
    for (int e = y->first; e >= 0; e = v[e].next) {
        if ((rc = check_map(c, &v[e], "a hosts entry", keys, "node, overhead_us, variation")))
            return rc;
        ts_host_override o = { .overhead_us = NAN, .variation = NAN };
        int named = 0;
        for (int k = v[e].first; k >= 0 && !rc; k = v[v[k].next].next) {
            const ts_ynode *key = &v[k], *val = &v[key->next];
            if (strcmp(key->text, "node") == 0) {
                rc = get_name(c, val, "node", o.name);
                named = 1;
            } else if (strcmp(key->text, "overhead_us") == 0) {
                rc = get_number(c, val, "overhead_us", R_NONNEG, &o.overhead_us);
            } else {
                rc = get_number(c, val, "variation", R_VAR, &o.variation);
            }
        }
        if (rc)
            return rc;
        if (!named)
            return yfail(c, &v[e], "a hosts entry needs 'node: NAME'");
        q->host_overrides[q->nhost_overrides++] = o;
    }
    return TS_OK;
}

static const char *const top_keys[] = {
    "profile", "host_overhead_us", "host_variation", "link_latency_us", "link_variation",
    "jitter", "outliers", "power_state", "host_hold", "loss_probability", "timeout_us",
    "flow_penalty_us", "bandwidth_mbps", "levels", "links", "hosts", "intra_node", NULL
};
#define TOP_KEYS_TEXT "profile, host_overhead_us, host_variation, link_latency_us, " \
    "link_variation, jitter, outliers, power_state, host_hold, loss_probability, timeout_us, " \
    "flow_penalty_us, bandwidth_mbps, levels, links, hosts, intra_node"

/* A sporadic delay, {probability, min_us, max_us}: `outliers`, `power_state`, and `host_hold`,
 * which has window_us too (window_us non-NULL). Where the mapping is, is kept in *at, so that a
 * min_us over max_us, which can only be judged after the whole file (the other bound may come
 * from the profile or an earlier file), is reported there. */
static int apply_sporadic(yctx *c, const ts_ynode *val, const char *name, double *prob,
                          double *min_us, double *max_us, double *window_us, const ts_ynode **at)
{
    static const char *const keys[] = { "probability", "min_us", "max_us", NULL };
    static const char *const wkeys[] = { "probability", "min_us", "max_us", "window_us", NULL };
    const ts_ynode *v = c->d.v;
    char what[32], key[64];
    snprintf(what, sizeof what, "'%s'", name);
    int rc = window_us ? check_map(c, val, what, wkeys, "probability, min_us, max_us, window_us")
                       : check_map(c, val, what, keys, "probability, min_us, max_us");
    if (rc)
        return rc;
    *at = val;
    for (int j = val->first; j >= 0 && !rc; j = v[v[j].next].next) {
        const ts_ynode *ov = &v[v[j].next];
        const char *k = v[j].text;
        snprintf(key, sizeof key, "%s.%s", name, k);
        if (strcmp(k, "probability") == 0)
            rc = get_number(c, ov, key, R_PROB, prob);
        else
            rc = get_number(c, ov, key, R_NONNEG, strcmp(k, "min_us") == 0   ? min_us
                                                  : strcmp(k, "max_us") == 0 ? max_us
                                                                             : window_us);
    }
    return rc;
}

static int check_sporadic(yctx *c, const char *name, double min_us, double max_us,
                          const ts_ynode *at)
{
    if (min_us <= max_us)
        return TS_OK;
    if (at)
        return yfail(c, at, "%s: min_us (%g) must not exceed max_us (%g)", name, min_us, max_us);
    return ts_fail(c->err, TS_EINPUT, "%s: %s: min_us (%g) must not exceed max_us (%g)", c->d.src,
                   name, min_us, max_us);
}

typedef struct sporadic_at {
    const ts_ynode *outliers, *power, *hold;
} sporadic_at;

static int apply_top(yctx *c, const ts_ynode *key, const ts_ynode *val, ts_model_params *q,
                     sporadic_at *at)
{
    static const char *const jkeys[] = { "lognormal_sigma", "exp_mean_us", "skew_median_us",
                                         "skew_sigma", NULL };
    const ts_ynode *v = c->d.v;
    const char *k = key->text;
    int rc;
    const struct { const char *name; double *dst; range_kind r; } num[] = {
        { "host_overhead_us", &q->host_overhead_us, R_NONNEG },
        { "host_variation", &q->host_variation, R_VAR },
        { "link_latency_us", &q->link_latency_us, R_NONNEG },
        { "link_variation", &q->link_variation, R_VAR },
        { "loss_probability", &q->loss_prob, R_PROB },
        { "timeout_us", &q->timeout_us, R_NONNEG },
        { "flow_penalty_us", &q->flow_penalty_us, R_NONNEG },
        { "bandwidth_mbps", &q->bandwidth_mbps, R_POS },
    };
    for (size_t i = 0; i < sizeof num / sizeof num[0]; i++)
        if (strcmp(k, num[i].name) == 0)
            return get_number(c, val, k, num[i].r, num[i].dst);
    if (strcmp(k, "profile") == 0)
        return TS_OK;                       /* handled before every other key */
    if (strcmp(k, "jitter") == 0) {
        if ((rc = check_map(c, val, "'jitter'", jkeys,
                            "lognormal_sigma, exp_mean_us, skew_median_us, skew_sigma")))
            return rc;
        for (int j = val->first; j >= 0 && !rc; j = v[v[j].next].next) {
            const char *jk = v[j].text;
            const ts_ynode *jv = &v[v[j].next];
            if (strcmp(jk, "lognormal_sigma") == 0)
                rc = get_number(c, jv, "jitter.lognormal_sigma", R_SIGMA, &q->jitter_sigma);
            else if (strcmp(jk, "exp_mean_us") == 0)
                rc = get_number(c, jv, "jitter.exp_mean_us", R_NONNEG, &q->jitter_exp_mean_us);
            else if (strcmp(jk, "skew_median_us") == 0)
                rc = get_number(c, jv, "jitter.skew_median_us", R_NONNEG, &q->jitter_skew_median_us);
            else
                rc = get_number(c, jv, "jitter.skew_sigma", R_SIGMA, &q->jitter_skew_sigma);
        }
        return rc;
    }
    if (strcmp(k, "outliers") == 0)
        return apply_sporadic(c, val, "outliers", &q->outlier_prob, &q->outlier_min_us,
                              &q->outlier_max_us, NULL, &at->outliers);
    if (strcmp(k, "power_state") == 0)
        return apply_sporadic(c, val, "power_state", &q->power_prob, &q->power_min_us,
                              &q->power_max_us, NULL, &at->power);
    if (strcmp(k, "host_hold") == 0)
        return apply_sporadic(c, val, "host_hold", &q->hold_prob, &q->hold_min_us,
                              &q->hold_max_us, &q->hold_window_us, &at->hold);
    if (strcmp(k, "levels") == 0)
        return apply_levels(c, val, q);
    if (strcmp(k, "links") == 0)
        return apply_links(c, val, q);
    if (strcmp(k, "intra_node") == 0)
        return apply_intra(c, val, q);
    return apply_hosts(c, val, q);
}

static int apply_document(yctx *c, int root, ts_model_params *q)
{
    const ts_ynode *v = c->d.v;
    if (root < 0 || ts_ydoc_is_null(&v[root]))
        return TS_OK;                       /* an empty file changes nothing */
    int rc = check_map(c, &v[root], "the parameter file", top_keys, TOP_KEYS_TEXT);
    if (rc)
        return rc;
    for (int k = v[root].first; k >= 0; k = v[v[k].next].next) {
        if (strcmp(v[k].text, "profile") != 0)
            continue;
        const ts_ynode *val = &v[v[k].next];
        if (val->type != TS_Y_SCALAR)
            return yfail(c, val, "'profile' must be a profile name (%s), not %s",
                         TS_MODEL_PROFILES_TEXT, ts_ydoc_type_name(val));
        if (!find_profile(val->text))
            return yfail(c, val, "unknown profile '%.64s' (allowed: %s)", val->text,
                         TS_MODEL_PROFILES_TEXT);
        ts_model_params_free(q);
        ts_model_params_profile(q, val->text, NULL);
    }
    sporadic_at at = { NULL, NULL, NULL };
    for (int k = v[root].first; k >= 0; k = v[v[k].next].next)
        if ((rc = apply_top(c, &v[k], &v[v[k].next], q, &at)))
            return rc;
    if ((rc = check_sporadic(c, "outliers", q->outlier_min_us, q->outlier_max_us, at.outliers)))
        return rc;
    if ((rc = check_sporadic(c, "power_state", q->power_min_us, q->power_max_us, at.power)))
        return rc;
    return check_sporadic(c, "host_hold", q->hold_min_us, q->hold_max_us, at.hold);
}

int ts_model_params_parse_yaml(ts_model_params *p, const char *text, size_t len,
                               const char *source, ts_error *err)
{
    /* no count limit of its own: the byte limit already bounds the number of values */
    static const ts_ylimits lim = { PARAMS_MAX_BYTES, PARAMS_MAX_DEPTH, INT_MAX };
    const char *src = source ? source : "<input>";
    if (len > PARAMS_MAX_BYTES)
        return ts_fail(err, TS_ELIMIT, "%s: parameter file is larger than %d bytes", src,
                       PARAMS_MAX_BYTES);
    if (!text && len)
        return ts_fail(err, TS_EINPUT, "%s: no input", src);
    yctx c = { .err = err };
    int rc = ts_ydoc_parse(&c.d, text ? text : "", len, src, &lim, err);
    if (rc)
        return rc;                          /* ts_ydoc_parse frees on failure */
    ts_model_params q;
    if (params_copy(&q, p) != TS_OK) {
        ts_ydoc_free(&c.d);
        return ts_fail(err, TS_ENOMEM, "%s: out of memory", src);
    }
    rc = apply_document(&c, c.d.root, &q);
    ts_ydoc_free(&c.d);
    if (rc) {
        ts_model_params_free(&q);
        return rc;
    }
    ts_model_params_free(p);
    *p = q;
    return TS_OK;
}

int ts_model_params_load_yaml(ts_model_params *p, const char *path, ts_error *err)
{
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return ts_fail(err, TS_ESYS, "%s: %s", path, strerror(errno));
    char *buf = malloc(PARAMS_MAX_BYTES + 1);
    if (!buf) {
        fclose(fp);
        return ts_fail(err, TS_ENOMEM, "%s: out of memory", path);
    }
    size_t n = fread(buf, 1, PARAMS_MAX_BYTES + 1, fp);
    int bad = ferror(fp);
    int saved = errno;
    fclose(fp);
    int rc;
    if (bad)
        rc = ts_fail(err, TS_ESYS, "%s: %s", path, strerror(saved));
    else
        rc = ts_model_params_parse_yaml(p, buf, n, path, err);   /* n > max is refused there */
    free(buf);
    return rc;
}

/* ------------------------------------------------------------------------------------------ */
/* Faults                                                                                     */

#define FAULT_FORMS "degrade:LINK:+PCT%, degrade:LINK:+USus, loss:LINK:PCT%, dead:NODE or " \
    "slowhost:NODE:+USus"

/* A non-negative decimal with an optional leading '+', followed by exactly `suffix`. */
static int parse_amount(const char *s, const char *suffix, double *out)
{
    if (*s == '+')
        s++;
    if (!((*s >= '0' && *s <= '9') || *s == '.'))
        return -1;
    for (const char *q = s; *q; q++)
        if (*q == 'x' || *q == 'X')
            return -1;
    char *end;
    double v = strtod(s, &end);
    if (end == s || strcmp(end, suffix) != 0 || !isfinite(v) || v < 0)
        return -1;
    *out = v;
    return 0;
}

int ts_fault_parse(const char *spec, ts_fault *out, ts_error *err)
{
    memset(out, 0, sizeof *out);   /* a refused spec leaves no stale fault behind */
    if (!spec || !*spec)
        return ts_fail(err, TS_EINPUT, "empty fault (expected %s)", FAULT_FORMS);
    const char *c1 = strchr(spec, ':');
    if (!c1)
        return ts_fail(err, TS_EINPUT, "fault '%.200s': expected %s", spec, FAULT_FORMS);
    size_t klen = (size_t)(c1 - spec);
    const char *target = c1 + 1;
    const char *c2 = strchr(target, ':');
    size_t tlen = c2 ? (size_t)(c2 - target) : strlen(target);
    const char *amount = c2 ? c2 + 1 : NULL;
    ts_fault f;
    memset(&f, 0, sizeof f);
    const char *form;

    if (klen == 7 && strncmp(spec, "degrade", 7) == 0) {
        form = "degrade:LINK:+PCT% or degrade:LINK:+USus";
        f.kind = TS_FAULT_DEGRADE_PCT;
    } else if (klen == 4 && strncmp(spec, "loss", 4) == 0) {
        form = "loss:LINK:PCT%";
        f.kind = TS_FAULT_LOSS;
    } else if (klen == 4 && strncmp(spec, "dead", 4) == 0) {
        form = "dead:NODE";
        f.kind = TS_FAULT_DEAD;
    } else if (klen == 8 && strncmp(spec, "slowhost", 8) == 0) {
        form = "slowhost:NODE:+USus";
        f.kind = TS_FAULT_SLOWHOST;
    } else {
        return ts_fail(err, TS_EINPUT, "fault '%.200s': unknown kind '%.*s' (expected %s)", spec,
                       (int)(klen > 64 ? 64 : klen), spec, FAULT_FORMS);
    }
    if (tlen == 0)
        return ts_fail(err, TS_EINPUT, "fault '%.200s': missing name (expected %s)", spec, form);
    if (tlen >= TS_NAME_MAX)
        return ts_fail(err, TS_EINPUT, "fault '%.200s': name longer than %d characters", spec,
                       TS_NAME_MAX - 1);
    memcpy(f.target, target, tlen);
    f.target[tlen] = '\0';

    if (f.kind == TS_FAULT_DEAD) {
        if (amount)
            return ts_fail(err, TS_EINPUT, "fault '%.200s': unexpected ':%.64s' (expected %s)",
                           spec, amount, form);
        *out = f;
        return TS_OK;
    }
    if (!amount || !*amount)
        return ts_fail(err, TS_EINPUT, "fault '%.200s': missing amount (expected %s)", spec, form);
    if (strchr(amount, ':'))
        return ts_fail(err, TS_EINPUT, "fault '%.200s': too many ':' fields (expected %s)", spec,
                       form);
    switch (f.kind) {
    case TS_FAULT_DEGRADE_PCT:
        if (parse_amount(amount, "%", &f.value) == 0)
            break;
        if (parse_amount(amount, "us", &f.value) == 0) {
            f.kind = TS_FAULT_DEGRADE_US;
            break;
        }
        return ts_fail(err, TS_EINPUT, "fault '%.200s': bad amount '%.64s' (expected %s, "
                       "a non-negative number)", spec, amount, form);
    case TS_FAULT_LOSS:
        if (parse_amount(amount, "%", &f.value) != 0 || f.value > 100)
            return ts_fail(err, TS_EINPUT, "fault '%.200s': bad amount '%.64s' (expected %s, "
                           "a percentage 0..100)", spec, amount, form);
        f.value /= 100;
        break;
    default:
        if (parse_amount(amount, "us", &f.value) != 0)
            return ts_fail(err, TS_EINPUT, "fault '%.200s': bad amount '%.64s' (expected %s, "
                           "a non-negative number)", spec, amount, form);
        break;
    }
    *out = f;
    return TS_OK;
}

/* Rebuilds the user's spelling for messages; ts_fault does not keep the original text. */
static void fault_text(const ts_fault *f, char *buf, size_t n)
{
    switch (f->kind) {
    case TS_FAULT_DEGRADE_PCT: snprintf(buf, n, "degrade:%s:+%g%%", f->target, f->value); break;
    case TS_FAULT_DEGRADE_US:  snprintf(buf, n, "degrade:%s:+%gus", f->target, f->value); break;
    case TS_FAULT_LOSS:        snprintf(buf, n, "loss:%s:%g%%", f->target, f->value * 100); break;
    case TS_FAULT_DEAD:        snprintf(buf, n, "dead:%s", f->target); break;
    case TS_FAULT_SLOWHOST:    snprintf(buf, n, "slowhost:%s:+%gus", f->target, f->value); break;
    default:                   snprintf(buf, n, "?:%s", f->target); break;
    }
}

/* ------------------------------------------------------------------------------------------ */
/* Realized hardware                                                                          */

void ts_model_free(ts_model *m)
{
    if (!m)
        return;
    ts_model_params_free(&m->p);
    free(m->link_us);
    free(m->link_loss);
    free(m->link_mbps);
    free(m->host_us);
    free(m->dead);
    m->link_us = m->link_loss = m->link_mbps = m->host_us = NULL;
    m->dead = NULL;
    m->nvert = 0;
}

static int link_level(const ts_vertex *x)
{
    if (x->kind == TS_NODE)
        return 0;
    /* a switch with nothing below has height 0 after finalize, but it is still an uplink */
    return x->height < 1 ? 1 : x->height;
}

static int apply_faults(ts_model *m, const ts_fabric *f, const ts_fault *faults, int nfaults,
                        ts_error *err)
{
    for (int i = 0; i < nfaults; i++) {
        const ts_fault *ft = &faults[i];
        char spec[TS_NAME_MAX + 64];
        fault_text(ft, spec, sizeof spec);
        int x = ts_fabric_find(f, ft->target);
        if (x == TS_NONE)
            return ts_fail(err, TS_EINPUT, "fault '%s': no link or node named '%s'", spec, ft->target);
        int needs_node = ft->kind == TS_FAULT_DEAD || ft->kind == TS_FAULT_SLOWHOST;
        if (needs_node && f->v[x].kind != TS_NODE)
            return ts_fail(err, TS_EINPUT, "fault '%s': '%s' is a switch, not a node", spec,
                           ft->target);
        if (!needs_node && x == f->root)
            return ts_fail(err, TS_EINPUT, "fault '%s': '%s' is the root switch and has no uplink",
                           spec, ft->target);
        if (!isfinite(ft->value) || ft->value < 0 || (ft->kind == TS_FAULT_LOSS && ft->value > 1))
            return ts_fail(err, TS_EINPUT, "fault '%s': value out of range", spec);
        switch (ft->kind) {
        case TS_FAULT_DEGRADE_PCT: m->link_us[x] *= 1 + ft->value / 100; break;
        case TS_FAULT_DEGRADE_US:  m->link_us[x] += ft->value; break;
        case TS_FAULT_LOSS:        m->link_loss[x] = ft->value; break;
        case TS_FAULT_DEAD:        m->dead[x] = 1; break;
        case TS_FAULT_SLOWHOST:    m->host_us[x] += ft->value; break;
        default:
            return ts_fail(err, TS_EINPUT, "fault '%s': unknown kind", spec);
        }
    }
    return TS_OK;
}

static int realize(ts_model *m, ts_fabric *f, uint64_t fabric_seed, const ts_fault *faults,
                   int nfaults, ts_error *err)
{
    const ts_model_params *p = &m->p;
    int n = f->nvert;
    /* nominal values and variations before drawing, so overrides never shift the draws */
    double *lat = malloc(sizeof(double) * (size_t)n), *var = malloc(sizeof(double) * (size_t)n);
    if (!lat || !var) {
        free(lat);
        free(var);
        return ts_fail(err, TS_ENOMEM, "out of memory");
    }
    for (int i = 0; i < n; i++) {
        const ts_vertex *x = &f->v[i];
        int lv = link_level(x);
        lat[i] = p->link_latency_us;
        var[i] = p->link_variation;
        /* a rate is a port's speed, set by the hardware: it does not vary with the seed */
        m->link_mbps[i] = i == f->root ? 0 : p->bandwidth_mbps;
        if (lv < TS_MODEL_MAX_LEVELS) {
            if (!isnan(p->level[lv].latency_us))
                lat[i] = p->level[lv].latency_us;
            if (!isnan(p->level[lv].variation))
                var[i] = p->level[lv].variation;
            if (!isnan(p->level[lv].bandwidth_mbps) && i != f->root)
                m->link_mbps[i] = p->level[lv].bandwidth_mbps;
        }
        m->host_us[i] = x->kind == TS_NODE ? p->host_overhead_us : 0;
    }
    int rc = TS_OK;
    for (int i = 0; i < p->nlink_overrides && rc == TS_OK; i++) {
        const ts_link_override *o = &p->link_overrides[i];
        int x = ts_fabric_find(f, o->name);
        if (x == TS_NONE)
            rc = ts_fail(err, TS_EINPUT, "link override: no link named '%s' (name a node or a "
                         "switch)", o->name);
        else if (x == f->root)
            rc = ts_fail(err, TS_EINPUT, "link override: '%s' is the root switch and has no "
                         "uplink", o->name);
        else {
            if (!isnan(o->latency_us))
                lat[x] = o->latency_us;
            if (!isnan(o->variation))
                var[x] = o->variation;
            if (!isnan(o->loss))
                m->link_loss[x] = o->loss;
            if (!isnan(o->bandwidth_mbps))
                m->link_mbps[x] = o->bandwidth_mbps;
        }
    }
    /* host nominal values are kept in host_us and their variations in a second pass below */
    double *hvar = rc == TS_OK ? malloc(sizeof(double) * (size_t)n) : NULL;
    if (rc == TS_OK && !hvar)
        rc = ts_fail(err, TS_ENOMEM, "out of memory");
    for (int i = 0; rc == TS_OK && i < n; i++)
        hvar[i] = p->host_variation;
    for (int i = 0; i < p->nhost_overrides && rc == TS_OK; i++) {
        const ts_host_override *o = &p->host_overrides[i];
        int x = ts_fabric_find(f, o->name);
        if (x == TS_NONE)
            rc = ts_fail(err, TS_EINPUT, "host override: no node named '%s'", o->name);
        else if (f->v[x].kind != TS_NODE)
            rc = ts_fail(err, TS_EINPUT, "host override: '%s' is a switch; hosts must be nodes",
                         o->name);
        else {
            if (!isnan(o->overhead_us))
                m->host_us[x] = o->overhead_us;
            if (!isnan(o->variation))
                hvar[x] = o->variation;
        }
    }
    if (rc == TS_OK) {
        ts_rng hr, lr;
        ts_rng_seed_stream(&hr, fabric_seed, STREAM_HOST);
        ts_rng_seed_stream(&lr, fabric_seed, STREAM_LINK);
        /* one draw per vertex from each stream, in index order, whatever the vertex is */
        for (int i = 0; i < n; i++) {
            double uh = ts_rng_range(&hr, -1, 1), ul = ts_rng_range(&lr, -1, 1);
            if (f->v[i].kind == TS_NODE)
                m->host_us[i] *= 1 + hvar[i] * uh;
            m->link_us[i] = i == f->root ? 0 : lat[i] * (1 + var[i] * ul);
        }
        rc = apply_faults(m, f, faults, nfaults, err);
    }
    free(hvar);
    free(lat);
    free(var);
    return rc;
}

int ts_model_realize(ts_model *m, ts_fabric *f, const ts_model_params *p, uint64_t fabric_seed,
                     const ts_fault *faults, int nfaults, ts_error *err)
{
    memset(m, 0, sizeof *m);
    if (!f || f->root == TS_NONE)
        return ts_fail(err, TS_EINPUT, "the fabric must be finalized before the model is realized");
    if (nfaults < 0 || (nfaults > 0 && !faults))
        return ts_fail(err, TS_EINPUT, "bad fault list");
    int rc = params_validate(p, err);
    if (rc)
        return rc;
    if (params_copy(&m->p, p) != TS_OK)
        return ts_fail(err, TS_ENOMEM, "out of memory");
    size_t n = (size_t)f->nvert;
    m->nvert = f->nvert;
    m->link_us = calloc(n, sizeof *m->link_us);
    m->link_loss = calloc(n, sizeof *m->link_loss);
    m->link_mbps = calloc(n, sizeof *m->link_mbps);
    m->host_us = calloc(n, sizeof *m->host_us);
    m->dead = calloc(n, sizeof *m->dead);
    if (!m->link_us || !m->link_loss || !m->link_mbps || !m->host_us || !m->dead) {
        ts_model_free(m);
        return ts_fail(err, TS_ENOMEM, "out of memory");
    }
    rc = realize(m, f, fabric_seed, faults, nfaults, err);
    if (rc) {
        ts_model_free(m);
        return rc;
    }
    for (int i = 0; i < f->nvert; i++) {
        f->v[i].link_us = m->link_us[i];
        if (f->v[i].kind == TS_NODE)
            f->v[i].host_us = m->host_us[i];
    }
    return TS_OK;
}

double ts_model_base_rtt(const ts_model *m, const ts_fabric *f, int node_a, int node_b)
{
    int va = ts_fabric_node_vertex(f, node_a), vb = ts_fabric_node_vertex(f, node_b);
    int l = ts_fabric_lca(f, va, vb);
    double links = 0;
    /* the same links ts_fabric_path_links lists, summed without a size-limited buffer */
    for (int x = va; x != l; x = f->v[x].parent)
        links += m->link_us[x];
    for (int x = vb; x != l; x = f->v[x].parent)
        links += m->link_us[x];
    return 2 * links + (m->host_us[va] + m->host_us[vb]) / 2;
}

double ts_model_mean_jitter_us(const ts_model_params *p)
{
    double skew = p->jitter_skew_median_us > 0
                ? p->jitter_skew_median_us * exp(0.5 * p->jitter_skew_sigma * p->jitter_skew_sigma) : 0;
    return p->jitter_exp_mean_us + skew;
}
