/* The lower bound on probing time (lib/discover/bound.c): the total variation of a shift on laws
 * whose answer is known in closed form, the samples a decision needs, and the whole bound on a
 * generated fabric with a sampler of known steps, offsets and noise. */
#include <math.h>
#include <stdlib.h>
#include "tap.h"
#include "toposcope/bound.h"
#include "toposcope/gen.h"
#include "toposcope/rng.h"

#define NS 20000

/* a fabric of 2 x 4 x 4 nodes: RTT = 2 per link crossed + both hosts' offsets + Exp(1) noise */
typedef struct fake {
    const ts_fabric *f;
    ts_rng rng;
    double off[64];
    long calls;
} fake;

static double fake_sample(void *ctx, int a, int b)
{
    fake *k = ctx;
    k->calls++;
    int hops = ts_fabric_hops(k->f, k->f->node_vertex[a], k->f->node_vertex[b]);
    return 2.0 * hops + k->off[a] + k->off[b] + ts_rng_exponential(&k->rng, 1.0);
}

int main(void)
{
    double *x = malloc(sizeof(double) * NS);
    /* uniform on (0, 1): a shift by 0.25 leaves 0.75 overlapping, tv 0.25 */
    for (int i = 0; i < NS; i++)
        x[NS - 1 - i] = (i + 0.5) / NS;
    is_num(ts_shift_tv(x, NS, 0.25), 0.25, 0.002, "uniform(0,1) shifted by 0.25: tv 0.25");
    /* exponential(1): the shifted law is the same beyond delta, so tv = F(delta) */
    for (int i = 0; i < NS; i++)
        x[i] = -log(1.0 - (i + 0.5) / NS);
    is_num(ts_shift_tv(x, NS, 0.5), 1.0 - exp(-0.5), 0.003, "exponential(1) shifted by 0.5: tv 1 - e^-0.5");
    /* two modes (a slow path): 0.9 on (0,1), 0.1 on (20,21); tv of 0.5 is 0.5, from both */
    for (int i = 0; i < NS; i++)
        x[i] = i < NS / 10 ? 20 + (i + 0.5) / (NS / 10) : (i - NS / 10 + 0.5) / (NS - NS / 10);
    is_num(ts_shift_tv(x, NS, 0.5), 0.5, 0.003, "a law of two modes: each mode's rise counts");
    for (int i = 0; i < NS; i++)
        x[i] = (i + 0.5) / NS;
    is_num(ts_shift_tv(x, NS, 2.0), 1.0, 1e-12, "a shift beyond the support: tv 1");
    is_num(ts_shift_tv(x, 0, 1.0), 0.0, 0, "no samples: tv 0");

    is_int(ts_decision_samples(0.5, 0.01), 6, "tv 0.5, error 0.01: ln 50 / ln 2 -> 6 samples");
    is_int(ts_decision_samples(1.0, 0.01), 1, "tv 1: one sample decides");
    is_int(ts_decision_samples(0.1, 0.01), 38, "tv 0.1, error 0.01: ln 50 / -ln 0.9 -> 38 samples");
    /* the bound's promise: with n - 1 samples, alpha + beta >= (1 - tv)^(n-1) > 2 error */
    ok(pow(1 - 0.1, 38 - 1) > 2 * 0.01 && pow(1 - 0.1, 38) <= 2 * 0.01, "38 is the least n with (1-tv)^n <= 2 error");

    /* the whole bound: steps of 4 us (two links more, twice, each way) at both levels, host
     * offsets of several us that the four-point difference must cancel */
    ts_fabric f;
    ts_error err;
    int fan[3] = {2, 4, 4};
    ok(ts_gen_regular(&f, fan, 3, 3, &err) == TS_OK, "a 2 x 4 x 4 fabric");
    fake k = {.f = &f};
    ts_rng_seed_stream(&k.rng, 7, 1);
    for (int i = 0; i < f.nnodes; i++)
        k.off[i] = 5.0 * ts_rng_uniform(&k.rng);
    ts_time_bound b;
    ok(ts_probe_time_bound(&f, fake_sample, &k, 4096, 3.0, 0.99, &b, &err) == TS_OK, "bound computed");
    is_int(b.levels, 2, "two levels measured");
    is_num(b.step_us[0], 4.0, 0.1, "leaf step 4 us, the hosts' offsets cancelled");
    is_num(b.step_us[1], 4.0, 0.1, "next step 4 us");
    is_num(b.tv[0], 1.0 - exp(-4.0), 0.02, "tv of Exp(1) noise at a step of 4: 1 - e^-4");
    int n = ts_decision_samples(b.tv[0] > b.tv[1] ? b.tv[1] : b.tv[0], 0.01);
    is_num(b.bound_s, n * 3.0e-6, 3.1e-6, "bound = samples per decision x the fastest round trip");
    ok(k.calls >= 8 * 4096, "every pair of both quartets sampled");
    ok(ts_probe_time_bound(&f, fake_sample, &k, 4096, 3.0, 1.0, &b, &err) == TS_EINPUT, "exact share 1 refused");

    /* a star (one switch): no sibling switches, no step, no bound */
    ts_fabric star;
    int fan1[1] = {8};
    ok(ts_gen_regular(&star, fan1, 1, 1, &err) == TS_OK, "a star of 8 nodes");
    k.f = &star;
    ok(ts_probe_time_bound(&star, fake_sample, &k, 256, 3.0, 0.99, &b, &err) == TS_OK && b.levels == 0 &&
           isnan(b.bound_s), "a star has no level step: the bound is NAN");
    ts_fabric_free(&star);
    ts_fabric_free(&f);
    free(x);
    return done_testing();
}
