/* toposcope — per-pair sampling with confidence-interval stopping, and the probe engine that
 * runs rounds of disjoint pairs on any transport against a deadline. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "toposcope/probe.h"
#include "util/prefetch.h"

/* ---- robust statistics ---- */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* x[0..n-1] ascending, in place. A pair's few samples (one to three, mostly) by insertion:
 * qsort's set-up for them, twice a pair (median and MAD), was 5 % of the fast method's
 * instructions at 8192 nodes. */
#define INSERTION_SORT_MAX 16

static void sort_doubles(double *x, int n)
{
    if (n > INSERTION_SORT_MAX) {
        qsort(x, (size_t)n, sizeof *x, cmp_double);
        return;
    }
    for (int i = 1; i < n; i++) {
        double v = x[i];
        int j = i;
        for (; j > 0 && x[j - 1] > v; j--)
            x[j] = x[j - 1];
        x[j] = v;
    }
}

double ts_median(double *x, int n)
{
    if (n <= 0)
        return NAN;
    sort_doubles(x, n);
    return n % 2 ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
}

double ts_mad(const double *x, int n, double median)
{
    if (n <= 0)
        return NAN;
    double dev[TS_SAMPLES_MAX];
    double *d = n <= TS_SAMPLES_MAX ? dev : malloc(sizeof *d * (size_t)n);
    if (!d)
        return NAN;
    for (int i = 0; i < n; i++)
        d[i] = fabs(x[i] - median);
    double m = ts_median(d, n);
    if (d != dev)
        free(d);
    return m;
}

/* Standard normal quantile (Acklam's rational approximation, |error| < 1.2e-9). */
double ts_normal_quantile(double p)
{
    static const double a[] = {-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02,
                               1.383577518672690e+02, -3.066479806614716e+01, 2.506628277459239e+00};
    static const double b[] = {-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
                               6.680131188771972e+01, -1.328068155288572e+01};
    static const double c[] = {-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
                               -2.549732539343734e+00, 4.374664141464968e+00, 2.938163982698783e+00};
    static const double d[] = {7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
                               3.754408661907416e+00};
    if (p <= 0)
        return -INFINITY;
    if (p >= 1)
        return INFINITY;
    if (p < 0.02425) {
        double q = sqrt(-2 * log(p));
        return (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
               ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
    }
    if (p > 1 - 0.02425)
        return -ts_normal_quantile(1 - p);
    double q = p - 0.5, r = q * q;
    return (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
           (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
}

double ts_student_t(double confidence, int dof)
{
    double p = 0.5 * (1.0 + confidence);
    if (dof <= 0)
        return INFINITY;
    if (dof == 1)
        return tan(M_PI * (p - 0.5));
    if (dof == 2)
        return (2 * p - 1) / sqrt(2 * p * (1 - p));
    /* Cornish-Fisher expansion around the normal quantile: accurate to ~1e-3 from 3 dof. */
    double z = ts_normal_quantile(p), v = dof, z2 = z * z;
    return z + (z2 * z + z) / (4 * v) + (5 * z2 * z2 * z + 16 * z2 * z + 3 * z) / (96 * v * v) +
           (3 * z2 * z2 * z2 * z + 19 * z2 * z2 * z + 17 * z2 * z - 15 * z) / (384 * v * v * v);
}

/* The chi-square quantile of dof degrees of freedom (dof > 0, not necessarily whole) at lower
 * tail p, by Wilson and Hilferty's cube-root normal approximation: within 0.25 % from 10 dof
 * on 0.05 <= p <= 0.99 and within 0.5 % from 20 dof on 0.01 <= p <= 0.99, the error shrinking
 * as dof grows; in the low tail it errs low. Where the cube root's base falls to 0 or below (a
 * very low p on very few dof) the quantile is reported as 0. */
double ts_chi_square_quantile(double p, double dof)
{
    if (!(dof > 0))
        return NAN;
    double h = 2.0 / (9.0 * dof), base = 1.0 - h + ts_normal_quantile(p) * sqrt(h);
    return base > 0 ? dof * base * base * base : 0.0;
}

/* ---- estimators, stopping rule and sampler ---- */

static const char *const estimator_names[] = {"default", "mean", "min"};

int ts_estimator_parse(const char *name, ts_estimator *out)
{
    for (int i = 0; i < (int)(sizeof estimator_names / sizeof *estimator_names); i++)
        if (strcmp(name, estimator_names[i]) == 0) {
            *out = (ts_estimator)i;
            return TS_OK;
        }
    return TS_EINPUT;
}

const char *ts_estimator_name(ts_estimator e)
{
    return (unsigned)e < sizeof estimator_names / sizeof *estimator_names ? estimator_names[e] : "?";
}

double ts_pair_estimate(const ts_pair_stats *s, ts_estimator est)
{
    return est == TS_ESTIMATE_MIN ? s->min_us : s->est_us;
}

void ts_stop_rule_default(ts_stop_rule *r)
{
    /* LogP/MPI's defaults: 3% precision at 90% confidence; a ping-pong of small probes is cheap,
     * so the cap is generous. */
    r->min_samples = 3;
    r->max_samples = 32;
    r->eps = 0.03;
    r->confidence = 0.90;
    r->max_lost = 3;
    r->estimator = TS_ESTIMATE_DEFAULT;
}

int ts_stop_rule_check(const ts_stop_rule *r, ts_error *err)
{
    if (r->min_samples < 1 || r->min_samples > r->max_samples)
        return ts_fail(err, TS_EINPUT, "min_samples must be 1..max_samples (got %d, max %d)",
                       r->min_samples, r->max_samples);
    if (r->max_samples > TS_SAMPLES_MAX)
        return ts_fail(err, TS_EINPUT, "max_samples must be at most %d (got %d)", TS_SAMPLES_MAX,
                       r->max_samples);
    if (!(r->eps > 0 && r->eps < 1))
        return ts_fail(err, TS_EINPUT, "eps must be in (0, 1) (got %g)", r->eps);
    if (!(r->confidence > 0 && r->confidence < 1))
        return ts_fail(err, TS_EINPUT, "confidence must be in (0, 1) (got %g)", r->confidence);
    if (r->max_lost < 1)
        return ts_fail(err, TS_EINPUT, "max_lost must be at least 1 (got %d)", r->max_lost);
    if ((unsigned)r->estimator > TS_ESTIMATE_MIN)
        return ts_fail(err, TS_EINPUT, "unknown estimator %d", (int)r->estimator);
    return TS_OK;
}

void ts_sampler_start(ts_sampler *s, const ts_stop_rule *rule)
{
    s->rule = rule;
    s->n = s->lost = s->lost_run = 0;
    s->time_us = 0;
}

void ts_sampler_add(ts_sampler *s, double rtt_us)
{
    if (s->n < TS_SAMPLES_MAX)
        s->x[s->n++] = rtt_us;
    s->lost_run = 0;
    s->time_us += rtt_us;
}

void ts_sampler_add_loss(ts_sampler *s, double timeout_us)
{
    s->lost++;
    s->lost_run++;
    s->time_us += timeout_us;
}

/* Mean, sd and count of the samples that are not outliers: above median + 5 scaled MADs a
 * sample is a rare spike (a descheduled host, a retransmission) and says nothing about the
 * path; LogP/MPI's plain mean would chase it. */
static void inlier_stats(const ts_sampler *s, double *mean, double *sd, int *count, double *median,
                         double *mad, double *min, double *all_mean)
{
    double sorted[TS_SAMPLES_MAX];
    memcpy(sorted, s->x, sizeof(double) * (size_t)s->n);
    double med = ts_median(sorted, s->n);
    double m = ts_mad(sorted, s->n, med);
    double limit = med + fmax(5 * 1.4826 * m, 1e-9 * fabs(med));
    double sum = 0, sum2 = 0, sum_all = 0;
    int k = 0;
    for (int i = 0; i < s->n; i++)
        sum_all += sorted[i];
    for (int i = 0; i < s->n; i++)
        if (sorted[i] <= limit) {
            sum += sorted[i];
            k++;
        }
    double mu = sum / k;
    for (int i = 0; i < s->n; i++)
        if (sorted[i] <= limit)
            sum2 += (sorted[i] - mu) * (sorted[i] - mu);
    *mean = mu;
    *sd = k > 1 ? sqrt(sum2 / (k - 1)) : INFINITY;
    *count = k;
    *median = med;
    *mad = m;
    *min = sorted[0];
    *all_mean = sum_all / s->n;
}

static double half_width(const ts_sampler *s, double sd, int k)
{
    if (k < 2)
        return INFINITY;
    return ts_student_t(s->rule->confidence, k - 1) * sd / sqrt((double)k);
}

int ts_sampler_done(const ts_sampler *s)
{
    const ts_stop_rule *r = s->rule;
    if (s->lost_run >= r->max_lost)
        return 1;
    if (s->n >= r->max_samples)
        return 1;
    if (r->estimator == TS_ESTIMATE_MIN)
        return s->n >= r->min_samples;
    if (s->n < r->min_samples || s->n < 2)
        return 0;
    double mean, sd, median, mad, min, all_mean;
    int k;
    inlier_stats(s, &mean, &sd, &k, &median, &mad, &min, &all_mean);
    return half_width(s, sd, k) <= r->eps * mean;
}

void ts_sampler_finish(const ts_sampler *s, int a, int b, ts_pair_stats *out)
{
    memset(out, 0, sizeof *out);
    out->a = a;
    out->b = b;
    out->samples = s->n;
    out->lost = s->lost;
    out->time_us = s->time_us;
    if (s->n == 0) {
        out->min_us = out->median_us = out->mad_us = out->mean_us = out->est_us = NAN;
        out->ci_us = INFINITY;
        if (s->lost_run >= s->rule->max_lost)
            out->flags |= TS_PAIR_UNREACHABLE;
        return;
    }
    double mean, sd, median, mad, min, all_mean;
    int k;
    inlier_stats(s, &mean, &sd, &k, &median, &mad, &min, &all_mean);
    out->min_us = min;
    out->median_us = median;
    out->mad_us = mad;
    /* every answered sample, spikes included: what the pair costs on average (the link solve
     * takes the spikes' share from it, pooled over all pairs; see linksolve.c) */
    out->mean_us = all_mean;
    /* The inlier mean: unbiased up to a constant jitter offset that every pair shares (it ends
     * up in the hosts' pendant edges), with less variance than the median. */
    out->est_us = mean;
    out->ci_us = half_width(s, sd, k);
    if (s->rule->estimator == TS_ESTIMATE_MIN) {
        /* The minimum's spread from the two lowest samples: with a lower tail of rate l the
         * lowest of k is Exp(k l) above the floor and the next spacing Exp((k-1) l), so
         * (k-1)/k of the spacing estimates the minimum's sd. */
        out->est_us = min;
        out->ci_us = INFINITY;
        if (s->n >= 2) {
            double second = INFINITY;
            int skipped = 0;
            for (int i = 0; i < s->n; i++) {
                if (s->x[i] == min && !skipped)
                    skipped = 1;
                else if (s->x[i] < second)
                    second = s->x[i];
            }
            double z = ts_normal_quantile(0.5 * (1.0 + s->rule->confidence));
            out->ci_us = z * (s->n - 1.0) / s->n * (second - min);
        }
        if (s->n >= s->rule->min_samples)
            out->flags |= TS_PAIR_TIGHT;
        return;
    }
    if (s->n >= 2 && out->ci_us <= s->rule->eps * mean)
        out->flags |= TS_PAIR_TIGHT;
    else if (s->n >= s->rule->max_samples)
        out->flags |= TS_PAIR_CAPPED;
}

void ts_sample_pair(const ts_stop_rule *rule, ts_probe_fn probe, void *ctx, double timeout_us,
                    double budget_us, int a, int b, ts_pair_stats *out)
{
    ts_sampler s;
    ts_sampler_start(&s, rule);
    int cut = 0;
    while (!ts_sampler_done(&s)) {
        double rtt = probe(ctx);
        double cost = rtt < 0 ? timeout_us : rtt;
        if (s.time_us + cost > budget_us) {
            cut = 1;
            s.time_us = budget_us;     /* the probe in flight is abandoned */
            break;
        }
        if (rtt < 0)
            ts_sampler_add_loss(&s, cost);
        else
            ts_sampler_add(&s, rtt);
    }
    ts_sampler_finish(&s, a, b, out);
    if (cut)
        out->flags |= TS_PAIR_DEADLINE;
}

/* ---- measured pairs ---- */

/* A slot of the pair index: the pair's key beside its place in stats, so that a look-up
 * compares keys in the index alone. (Reading each candidate's key out of stats was a second
 * cache miss per probe: the fast method records hundreds of thousands of pairs.) */
typedef struct pairdb_slot {
    uint64_t key;
    long at;           /* index into stats, -1 = empty */
} pairdb_slot;

struct ts_pairdb {
    long n, cap;
    ts_pair_stats *stats;
    pairdb_slot *slot; /* open addressing over stats indices */
    long slot_cap;
};

static uint64_t pair_key(int a, int b)
{
    uint32_t lo = (uint32_t)(a < b ? a : b), hi = (uint32_t)(a < b ? b : a);
    return ((uint64_t)lo << 32) | hi;
}

static uint64_t mix64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    return x ^ (x >> 33);
}

static long pairdb_find_slot(const ts_pairdb *db, uint64_t key)
{
    long mask = db->slot_cap - 1;
    long h = (long)(mix64(key) & (uint64_t)mask);
    while (db->slot[h].at >= 0 && db->slot[h].key != key)
        h = (h + 1) & mask;
    return h;
}

/* Asks the cache for the slot where the pair's search starts (ts_prefetch): a round's pairs
 * are recorded one after another, each at random in an index of megabytes. */
static void pairdb_prefetch(const ts_pairdb *db, int a, int b)
{
    if (db->slot_cap)
        ts_prefetch(&db->slot[mix64(pair_key(a, b)) & (uint64_t)(db->slot_cap - 1)], 0);
}

static int pairdb_grow(ts_pairdb *db)
{
    long cap = db->slot_cap ? db->slot_cap * 2 : 1024;
    pairdb_slot *slot = malloc(sizeof *slot * (size_t)cap);
    if (!slot)
        return TS_ENOMEM;
    for (long i = 0; i < cap; i++)
        slot[i] = (pairdb_slot){0, -1};
    free(db->slot);
    db->slot = slot;
    db->slot_cap = cap;
    for (long i = 0; i < db->n; i++) {
        uint64_t key = pair_key(db->stats[i].a, db->stats[i].b);
        db->slot[pairdb_find_slot(db, key)] = (pairdb_slot){key, i};
    }
    return TS_OK;
}

static const ts_pair_stats *pairdb_lookup(const ts_pairdb *db, int a, int b)
{
    if (!db->slot_cap)
        return NULL;
    long h = pairdb_find_slot(db, pair_key(a, b));
    return db->slot[h].at >= 0 ? &db->stats[db->slot[h].at] : NULL;
}

/* Combine a new measurement of a pair with an earlier one, weighting by answered samples. */
static void merge_stats(ts_pair_stats *old, const ts_pair_stats *add)
{
    if (add->samples == 0) {
        old->lost += add->lost;
        old->time_us += add->time_us;
        if (old->samples == 0)
            old->flags |= add->flags;
        return;
    }
    if (old->samples == 0) {
        int lost = old->lost;
        double t = old->time_us;
        *old = *add;
        old->lost += lost;
        old->time_us += t;
        return;
    }
    double w1 = old->samples, w2 = add->samples, w = w1 + w2;
    old->est_us = (w1 * old->est_us + w2 * add->est_us) / w;
    old->mean_us = (w1 * old->mean_us + w2 * add->mean_us) / w;
    old->median_us = (w1 * old->median_us + w2 * add->median_us) / w;
    old->mad_us = fmax(old->mad_us, add->mad_us);
    old->min_us = fmin(old->min_us, add->min_us);
    if (isfinite(old->ci_us) && isfinite(add->ci_us) && old->ci_us > 0 && add->ci_us > 0)
        old->ci_us = 1.0 / sqrt(1.0 / (old->ci_us * old->ci_us) + 1.0 / (add->ci_us * add->ci_us));
    else
        old->ci_us = fmin(old->ci_us, add->ci_us);
    old->samples += add->samples;
    old->lost += add->lost;
    old->time_us += add->time_us;
    old->flags = (old->flags | add->flags) & ~(unsigned)TS_PAIR_UNREACHABLE;
}

static int pairdb_record(ts_pairdb *db, const ts_pair_stats *s)
{
    if ((db->n + 1) * 2 > db->slot_cap && pairdb_grow(db) != TS_OK)
        return TS_ENOMEM;
    uint64_t key = pair_key(s->a, s->b);
    long h = pairdb_find_slot(db, key);
    if (db->slot[h].at >= 0) {
        merge_stats(&db->stats[db->slot[h].at], s);
        return TS_OK;
    }
    if (db->n == db->cap) {
        long cap = db->cap ? db->cap * 2 : 1024;
        ts_pair_stats *st = realloc(db->stats, sizeof *st * (size_t)cap);
        if (!st)
            return TS_ENOMEM;
        db->stats = st;
        db->cap = cap;
    }
    db->stats[db->n] = *s;
    db->slot[h] = (pairdb_slot){key, db->n++};
    return TS_OK;
}

/* ---- engine ---- */

int ts_probe_engine_init(ts_probe_engine *e, ts_transport *tp, const ts_stop_rule *rule,
                         double budget_us, ts_error *err)
{
    memset(e, 0, sizeof *e);
    if (rule) {
        int rc = ts_stop_rule_check(rule, err);
        if (rc != TS_OK)
            return rc;
        e->rule = *rule;
    } else {
        ts_stop_rule_default(&e->rule);
    }
    e->tp = tp;
    e->db = calloc(1, sizeof *e->db);
    e->busy_mark = calloc((size_t)tp->nnodes, sizeof(int));
    if (!e->db || !e->busy_mark) {
        ts_probe_engine_free(e);
        return ts_fail(err, TS_ENOMEM, "out of memory");
    }
    e->start_us = tp->ops->now_us(tp);
    e->deadline_us = budget_us > 0 ? e->start_us + budget_us : INFINITY;
    return TS_OK;
}

void ts_probe_engine_free(ts_probe_engine *e)
{
    if (e->db) {
        free(e->db->stats);
        free(e->db->slot);
        free(e->db);
    }
    free(e->busy_mark);
    e->db = NULL;
    e->busy_mark = NULL;
}

double ts_probe_now(const ts_probe_engine *e)
{
    return e->tp->ops->now_us(e->tp);
}

double ts_probe_remaining_us(const ts_probe_engine *e)
{
    return e->deadline_us - ts_probe_now(e);
}

int ts_probe_round(ts_probe_engine *e, const ts_pair *pairs, int npairs, ts_pair_stats *out,
                   ts_error *err)
{
    return ts_probe_round_rule(e, pairs, npairs, &e->rule, out, err);
}

int ts_probe_round_rule(ts_probe_engine *e, const ts_pair *pairs, int npairs,
                        const ts_stop_rule *rule, ts_pair_stats *out, ts_error *err)
{
    if (npairs <= 0)
        return TS_OK;
    if (ts_probe_now(e) >= e->deadline_us) {
        e->partial = 1;
        return ts_fail(err, TS_ELIMIT, "the probing deadline has passed");
    }
    int nn = e->tp->nnodes;
    if (++e->busy_gen == INT32_MAX) {
        memset(e->busy_mark, 0, sizeof(int) * (size_t)nn);
        e->busy_gen = 1;
    }
    for (int i = 0; i < npairs; i++) {
        int a = pairs[i].a, b = pairs[i].b;
        if (a < 0 || b < 0 || a >= nn || b >= nn || a == b)
            return ts_fail(err, TS_EINPUT, "round pair %d (%d,%d) is not a pair of distinct nodes", i,
                           a, b);
        if (e->busy_mark[a] == e->busy_gen || e->busy_mark[b] == e->busy_gen)
            return ts_fail(err, TS_EINPUT, "round pair %d (%d,%d): a node is already in this round",
                           i, a, b);
        e->busy_mark[a] = e->busy_mark[b] = e->busy_gen;
    }
    ts_pair_stats *res = out ? out : malloc(sizeof *res * (size_t)npairs);
    if (!res)
        return ts_fail(err, TS_ENOMEM, "out of memory");
    int rc = e->tp->ops->run_round(e->tp, pairs, npairs, rule, e->deadline_us, res, err);
    if (rc == TS_OK) {
        e->count.rounds++;
        for (int i = 0; i < npairs; i++) {
            if (i + TS_PREFETCH_AHEAD < npairs)
                pairdb_prefetch(e->db, res[i + TS_PREFETCH_AHEAD].a, res[i + TS_PREFETCH_AHEAD].b);
            e->count.probes++;
            e->count.samples += res[i].samples;
            if (res[i].samples > e->count.samples_most)
                e->count.samples_most = res[i].samples;
            e->count.lost += res[i].lost;
            if (res[i].flags & TS_PAIR_DEADLINE)
                e->partial = 1;
            if ((res[i].samples > 0 || (res[i].flags & TS_PAIR_UNREACHABLE)) &&
                pairdb_record(e->db, &res[i]) != TS_OK) {
                rc = ts_fail(err, TS_ENOMEM, "out of memory");
                break;
            }
        }
    }
    if (!out)
        free(res);
    return rc;
}

int ts_probe_control(ts_probe_engine *e, ts_error *err)
{
    e->count.control_steps++;
    int rc = e->tp->ops->control_step(e->tp, e->deadline_us, err);
    if (rc == TS_ELIMIT)
        e->partial = 1;
    return rc;
}

const ts_pair_stats *ts_probe_lookup(const ts_probe_engine *e, int a, int b)
{
    return pairdb_lookup(e->db, a, b);
}

double ts_probe_distance(const ts_probe_engine *e, int a, int b)
{
    const ts_pair_stats *s = pairdb_lookup(e->db, a, b);
    return s && s->samples > 0 ? s->est_us : NAN;
}

long ts_probe_npairs(const ts_probe_engine *e)
{
    return e->db->n;
}

const ts_pair_stats *ts_probe_pair_at(const ts_probe_engine *e, long i)
{
    return i >= 0 && i < e->db->n ? &e->db->stats[i] : NULL;
}
