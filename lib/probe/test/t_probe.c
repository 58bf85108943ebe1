/* Probe engine: robust statistics, the stopping rule, disjoint rounds and the deadline. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "tap.h"
#include "toposcope/probe.h"

/* A transport with a scripted clock: pair (a,b) answers a + b + base µs, except `dead` never
 * answers. Each sample costs its RTT; each round ends with its slowest pair. */
typedef struct fake {
    ts_transport tp;
    double now, base, timeout;
    int dead;
    int rounds_run;
    double noise_amp;   /* alternate +-noise_amp to make the interval wide */
} fake;

static double fake_now(ts_transport *t)
{
    return ((fake *)t->impl)->now;
}

typedef struct fake_probe_ctx {
    fake *f;
    int a, b, k;
} fake_probe_ctx;

static double fake_probe(void *ctx)
{
    fake_probe_ctx *c = ctx;
    if (c->a == c->f->dead || c->b == c->f->dead)
        return -1;
    return c->f->base + c->a + c->b + (c->k++ % 2 ? c->f->noise_amp : -c->f->noise_amp);
}

static int fake_round(ts_transport *t, const ts_pair *pairs, int n, const ts_stop_rule *rule,
                      double deadline, ts_pair_stats *out, ts_error *err)
{
    fake *f = t->impl;
    double longest = 0;
    for (int i = 0; i < n; i++) {
        fake_probe_ctx pc = {f, pairs[i].a, pairs[i].b, 0};
        ts_sample_pair(rule, fake_probe, &pc, f->timeout, deadline - f->now, pairs[i].a, pairs[i].b,
                       &out[i]);
        if (out[i].time_us > longest)
            longest = out[i].time_us;
    }
    f->now += longest;
    f->rounds_run++;
    (void)err;
    return TS_OK;
}

static int fake_control(ts_transport *t, double deadline, ts_error *err)
{
    fake *f = t->impl;
    f->now += 50;
    if (f->now > deadline) {
        f->now = deadline;
        return ts_fail(err, TS_ELIMIT, "deadline");
    }
    return TS_OK;
}

static const ts_transport_ops fake_ops = {fake_round, fake_now, fake_control, NULL};

static void fake_init(fake *f, int nnodes)
{
    memset(f, 0, sizeof *f);
    f->tp.ops = &fake_ops;
    f->tp.impl = f;
    f->tp.nnodes = nnodes;
    f->base = 100;
    f->timeout = 1000;
    f->dead = -1;
}

static void test_statistics(void)
{
    double x[] = {5, 1, 4, 2, 3};
    is_num(ts_median(x, 5), 3, 1e-12, "median of an odd sample");
    double y[] = {4, 1, 3, 2};
    is_num(ts_median(y, 4), 2.5, 1e-12, "median of an even sample");
    double z[] = {1, 1, 2, 2, 4, 6, 9};
    is_num(ts_mad(z, 7, 2), 1, 1e-12, "MAD of a skewed sample");
    /* Student t two-sided quantiles against tables */
    is_num(ts_student_t(0.90, 1), 6.3138, 1e-3, "t(0.90, 1)");
    is_num(ts_student_t(0.90, 2), 2.9200, 1e-3, "t(0.90, 2)");
    is_num(ts_student_t(0.90, 4), 2.1318, 5e-3, "t(0.90, 4)");
    is_num(ts_student_t(0.95, 10), 2.2281, 5e-3, "t(0.95, 10)");
    is_num(ts_student_t(0.90, 30), 1.6973, 2e-3, "t(0.90, 30)");
    is_num(ts_student_t(0.99, 100), 2.6259, 2e-3, "t(0.99, 100)");
    /* chi-square quantiles against tables (relative error) */
    is_num(ts_chi_square_quantile(0.10, 10) / 4.8652, 1, 5e-3, "chi2(0.10, 10)");
    is_num(ts_chi_square_quantile(0.01, 20) / 8.2604, 1, 5e-3, "chi2(0.01, 20)");
    is_num(ts_chi_square_quantile(0.05, 30) / 18.4927, 1, 2e-3, "chi2(0.05, 30)");
    is_num(ts_chi_square_quantile(0.10, 369) / 334.6415, 1, 1e-4, "chi2(0.10, 369)");
    is_num(ts_chi_square_quantile(0.90, 100) / 118.498, 1, 1e-3, "chi2(0.90, 100)");
    is_num(ts_chi_square_quantile(0.01, 1000) / 898.912, 1, 1e-3, "chi2(0.01, 1000)");
    ok(isnan(ts_chi_square_quantile(0.5, 0)), "chi2 of 0 dof: none");
}

static void test_sampler(void)
{
    ts_stop_rule r;
    ts_stop_rule_default(&r);
    ts_sampler s;
    ts_pair_stats st;

    ts_sampler_start(&s, &r);
    int n = 0;
    while (!ts_sampler_done(&s)) {
        ts_sampler_add(&s, 50.0);
        n++;
    }
    is_int(n, r.min_samples, "identical samples stop at min_samples");
    ts_sampler_finish(&s, 0, 1, &st);
    ok(st.flags & TS_PAIR_TIGHT, "and the interval is tight");
    is_num(st.est_us, 50, 1e-9, "estimate of identical samples");

    /* wide noise never gets tight: capped at max_samples */
    ts_sampler_start(&s, &r);
    n = 0;
    while (!ts_sampler_done(&s)) {
        ts_sampler_add(&s, n % 2 ? 10.0 : 90.0);
        n++;
    }
    is_int(n, r.max_samples, "noisy samples stop at max_samples");
    ts_sampler_finish(&s, 0, 1, &st);
    ok(st.flags & TS_PAIR_CAPPED, "flagged capped");
    ok(!(st.flags & TS_PAIR_TIGHT), "not flagged tight");

    /* a spike is set aside by the estimate but kept in the minimum/median bookkeeping */
    ts_sampler_start(&s, &r);
    double v[] = {40, 41, 39, 40, 400, 40, 41, 39};
    for (int i = 0; i < 8; i++)
        ts_sampler_add(&s, v[i]);
    ts_sampler_finish(&s, 0, 1, &st);
    ok(st.est_us < 41 && st.est_us > 39, "an outlier does not move the estimate (%.2f)", st.est_us);
    is_num(st.min_us, 39, 1e-12, "minimum kept");
    is_num(st.median_us, 40, 1e-12, "median kept");

    /* losses in a row: unreachable */
    ts_sampler_start(&s, &r);
    n = 0;
    while (!ts_sampler_done(&s)) {
        ts_sampler_add_loss(&s, 1000);
        n++;
    }
    is_int(n, r.max_lost, "gives up after max_lost losses in a row");
    ts_sampler_finish(&s, 0, 1, &st);
    ok(st.flags & TS_PAIR_UNREACHABLE, "flagged unreachable");
    ok(isnan(st.est_us), "no estimate without samples");
    is_num(st.time_us, 1000.0 * r.max_lost, 1e-9, "timeouts are charged");

    ts_stop_rule bad = r;
    bad.min_samples = 0;
    ts_error err;
    ok(ts_stop_rule_check(&bad, &err) == TS_EINPUT && strstr(err.text, "min_samples"),
       "a bad rule is refused: %s", err.text);
    bad = r;
    bad.max_samples = TS_SAMPLES_MAX + 1;
    ok(ts_stop_rule_check(&bad, &err) == TS_EINPUT, "max_samples over the hard cap is refused");
}

static void test_engine(void)
{
    fake f;
    fake_init(&f, 8);
    ts_probe_engine e;
    ts_error err;
    ok(ts_probe_engine_init(&e, &f.tp, NULL, 0, &err) == TS_OK, "engine starts");
    ts_pair round1[] = {{0, 1}, {2, 3}, {4, 5}};
    ok(ts_probe_round(&e, round1, 3, NULL, &err) == TS_OK, "a disjoint round runs");
    is_num(ts_probe_distance(&e, 3, 2), 105, 1e-9, "distance of (2,3) in either order");
    ok(isnan(ts_probe_distance(&e, 0, 2)), "unmeasured pair has no distance");
    is_int(e.count.rounds, 1, "one round counted");
    is_int(e.count.probes, 3, "three probes counted");
    is_int(e.count.samples, 9, "three samples each (identical answers are tight at once)");

    ts_pair clash[] = {{0, 1}, {1, 2}};
    ok(ts_probe_round(&e, clash, 2, NULL, &err) == TS_EINPUT && strstr(err.text, "already"),
       "a node in two pairs of a round is refused: %s", err.text);
    ts_pair self[] = {{3, 3}};
    ok(ts_probe_round(&e, self, 1, NULL, &err) == TS_EINPUT, "a node paired with itself is refused");
    ts_pair out_of_range[] = {{0, 8}};
    ok(ts_probe_round(&e, out_of_range, 1, NULL, &err) == TS_EINPUT, "an unknown node is refused");
    is_int(f.rounds_run, 1, "refused rounds never reach the transport");

    /* measuring a pair again merges the evidence */
    ts_pair again[] = {{1, 0}};
    ok(ts_probe_round(&e, again, 1, NULL, &err) == TS_OK, "re-measure");
    const ts_pair_stats *st = ts_probe_lookup(&e, 0, 1);
    ok(st && st->samples == 6, "samples of both measurements are kept (%d)", st ? st->samples : -1);
    is_int(ts_probe_npairs(&e), 3, "still three distinct pairs");
    ts_probe_engine_free(&e);

    /* unreachable node */
    fake_init(&f, 4);
    f.dead = 3;
    ts_probe_engine_init(&e, &f.tp, NULL, 0, &err);
    ts_pair r2[] = {{0, 3}, {1, 2}};
    ts_pair_stats out[2];
    ok(ts_probe_round(&e, r2, 2, out, &err) == TS_OK, "round with a dead node completes");
    ok(out[0].flags & TS_PAIR_UNREACHABLE, "the dead node's pair is unreachable");
    ok(ts_probe_lookup(&e, 0, 3) != NULL && isnan(ts_probe_distance(&e, 0, 3)),
       "unreachable pairs are recorded without a distance");
    ts_probe_engine_free(&e);
}

static void test_deadline(void)
{
    fake f;
    fake_init(&f, 2);
    f.noise_amp = 40;    /* never tight: every pair runs to max_samples */
    ts_probe_engine e;
    ts_error err;
    ts_stop_rule r;
    ts_stop_rule_default(&r);
    double budget = 5000;
    ts_probe_engine_init(&e, &f.tp, &r, budget, &err);
    ts_pair p[] = {{0, 1}};
    int rc = TS_OK, rounds = 0;
    while (rc == TS_OK && rounds < 1000) {
        rc = ts_probe_round(&e, p, 1, NULL, &err);
        rounds++;
    }
    is_int(rc, TS_ELIMIT, "rounds stop with TS_ELIMIT at the deadline");
    ok(e.partial, "the engine says the result is partial");
    ok(f.now <= e.deadline_us + 1e-9, "the clock never passes the deadline (%.1f <= %.1f)", f.now,
       e.deadline_us);
    ok(ts_probe_remaining_us(&e) <= 0, "no time remains");
    ok(ts_probe_lookup(&e, 0, 1) && ts_probe_lookup(&e, 0, 1)->samples > 0,
       "what was measured before the deadline is kept");
    ok(ts_probe_control(&e, &err) == TS_ELIMIT, "a control step after the deadline is refused");
    ts_probe_engine_free(&e);
}

/* --estimator min: exactly min_samples samples, their minimum, its spread from the two lowest */
static void test_min_estimator(void)
{
    ts_stop_rule r;
    ts_stop_rule_default(&r);
    r.estimator = TS_ESTIMATE_MIN;
    r.min_samples = 4;
    r.max_samples = 48;
    ok(ts_stop_rule_check(&r, NULL) == TS_OK, "a min rule is valid");
    ts_sampler s;
    ts_sampler_start(&s, &r);
    const double v[] = {12.0, 10.0, 30.0, 11.0, 10.5};
    int k = 0;
    while (!ts_sampler_done(&s))
        ts_sampler_add(&s, v[k++]);
    is_int(k, 4, "the min rule stops at min_samples, whatever the spread");
    ts_pair_stats st;
    ts_sampler_finish(&s, 0, 1, &st);
    is_num(st.est_us, 10.0, 0, "est_us is the minimum");
    is_num(ts_pair_estimate(&st, TS_ESTIMATE_MIN), 10.0, 0, "ts_pair_estimate(min) reads min_us");
    is_num(st.ci_us, 1.6448536 * 0.75 * 1.0, 1e-4, "ci: z(90%%) * (k-1)/k * (second lowest - lowest)");
    ok(st.flags & TS_PAIR_TIGHT, "a min pair is complete at its count");
    ts_estimator e;
    ok(ts_estimator_parse("mean", &e) == TS_OK && e == TS_ESTIMATE_MEAN && ts_estimator_parse("median", &e) != TS_OK,
       "estimator names");
}

int main(void)
{
    test_statistics();
    test_sampler();
    test_engine();
    test_deadline();
    test_min_estimator();
    return done_testing();
}
