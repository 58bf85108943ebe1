/* toposcope — the simulator transport: virtual clock, noise, loss and interference. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "toposcope/rng.h"
#include "toposcope/sim.h"

#define SIM_PATH_MAX 256     /* links on one path; deeper trees are refused at create time */

struct ts_sim {
    ts_transport tp;
    const ts_fabric *f;
    const ts_model *m;
    ts_rng rng;
    uint64_t run_seed;
    double now_us;
    double control_rtt_us;   /* the round trip one gather/scatter step costs */
    int *link_flows;         /* per vertex: pairs of the current round using its uplink */
    double *hold_us;         /* per vertex: what a node's scheduler holds it this round */
    double cpu_s;            /* CPU time spent inside the simulator */
};

static double thread_cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double sim_now(ts_transport *t)
{
    return ((ts_sim *)t->impl)->now_us;
}

/* One ping-pong sample: the round trip in µs, or a negative value if the probe was lost.
 * `extra_flows` is the sum over the path's links of (pairs on that link - 1). */
static double sample_rtt(ts_sim *s, int va, int vb, const int *links, int nlinks, int extra_flows,
                         double hold_us)
{
    const ts_model *m = s->m;
    const ts_model_params *p = &m->p;
    if (m->dead[va] || m->dead[vb])
        return -1;
    double survive = 1.0 - p->loss_prob;
    double link_part = 0;
    for (int i = 0; i < nlinks; i++) {
        double l = m->link_loss[links[i]];
        survive *= (1.0 - l) * (1.0 - l);     /* the request and the reply both cross it */
        link_part += m->link_us[links[i]];
    }
    if (survive < 1.0 && ts_rng_uniform(&s->rng) >= survive)
        return -1;
    double host_part = 0.5 * (m->host_us[va] + m->host_us[vb]);
    double rtt = 2.0 * link_part;
    rtt += host_part * (p->jitter_sigma > 0 ? exp(p->jitter_sigma * ts_rng_normal(&s->rng)) : 1.0);
    if (p->jitter_exp_mean_us > 0)
        rtt += ts_rng_exponential(&s->rng, p->jitter_exp_mean_us);
    if (p->outlier_prob > 0 && ts_rng_uniform(&s->rng) < p->outlier_prob)
        rtt += ts_rng_range(&s->rng, p->outlier_min_us, p->outlier_max_us);
    /* Drawn after the older terms and only when set, so the idealised profiles see the very
     * same samples from a given run seed as before these terms existed. */
    if (p->jitter_skew_median_us > 0)
        rtt += p->jitter_skew_median_us * exp(p->jitter_skew_sigma * ts_rng_normal(&s->rng));
    if (p->power_prob > 0 && ts_rng_uniform(&s->rng) < p->power_prob)
        rtt += ts_rng_range(&s->rng, p->power_min_us, p->power_max_us);
    /* Ping-pong uses each link of its path in both directions, so every other pair on the
     * link is an extra flow in the same direction twice per round trip. */
    rtt += 2.0 * extra_flows * p->flow_penalty_us;
    return rtt + hold_us;
}

typedef struct sim_probe_ctx {
    ts_sim *s;
    int va, vb;
    const int *links;
    int nlinks, extra_flows;
    double hold_us;          /* both ends' holds this round */
} sim_probe_ctx;

static double sim_probe(void *ctx)
{
    sim_probe_ctx *c = ctx;
    return sample_rtt(c->s, c->va, c->vb, c->links, c->nlinks, c->extra_flows, c->hold_us);
}

/* Node vertex v's hold in window w: its own stream of the run seed, so that every round of one
 * window sees the same hold, whatever else was drawn between them. */
static double window_hold(const ts_sim *s, int v, uint64_t w)
{
    const ts_model_params *p = &s->m->p;
    ts_rng r;
    ts_rng_seed_stream(&r, s->run_seed ^ (w + 1) * 0x9e3779b97f4a7c15ULL, 0x401du + (uint64_t)v);
    return ts_rng_uniform(&r) < p->hold_prob ? ts_rng_range(&r, p->hold_min_us, p->hold_max_us) : 0;
}

/* The hosts of this round that their schedulers hold (host_hold): each node of the round
 * draws once, whatever pairs it is in, and pays the same delay on every probe of the round.
 * Drawn only when the term is on (per round: from the run's stream), so without it every run
 * sees the samples it saw before the term existed. */
static void draw_holds(ts_sim *s, const ts_pair *pairs, int npairs)
{
    const ts_model_params *p = &s->m->p;
    if (p->hold_window_us > 0) {
        uint64_t w = (uint64_t)(s->now_us / p->hold_window_us);
        for (int i = 0; i < npairs; i++) {
            int va = s->f->node_vertex[pairs[i].a], vb = s->f->node_vertex[pairs[i].b];
            s->hold_us[va] = window_hold(s, va, w);
            s->hold_us[vb] = window_hold(s, vb, w);
        }
        return;
    }
    for (int i = 0; i < npairs; i++) {
        int v[2] = {s->f->node_vertex[pairs[i].a], s->f->node_vertex[pairs[i].b]};
        for (int e = 0; e < 2; e++)
            s->hold_us[v[e]] = -1;
    }
    for (int i = 0; i < npairs; i++) {
        int v[2] = {s->f->node_vertex[pairs[i].a], s->f->node_vertex[pairs[i].b]};
        for (int e = 0; e < 2; e++)
            if (s->hold_us[v[e]] < 0)
                s->hold_us[v[e]] = ts_rng_uniform(&s->rng) < p->hold_prob
                                       ? ts_rng_range(&s->rng, p->hold_min_us, p->hold_max_us)
                                       : 0;
    }
}

static int sim_run_round(ts_transport *t, const ts_pair *pairs, int npairs, const ts_stop_rule *rule,
                         double deadline_us, ts_pair_stats *out, ts_error *err)
{
    ts_sim *s = t->impl;
    const ts_fabric *f = s->f;
    int links[SIM_PATH_MAX];
    double cpu_start = thread_cpu_s();
    /* Count the pairs on each link first: they all run concurrently. */
    for (int i = 0; i < npairs; i++) {
        int va = f->node_vertex[pairs[i].a], vb = f->node_vertex[pairs[i].b];
        int n = ts_fabric_path_links(f, va, vb, links, SIM_PATH_MAX);
        for (int k = 0; k < n; k++)
            s->link_flows[links[k]]++;
    }
    int holds = s->m->p.hold_prob > 0;
    if (holds)
        draw_holds(s, pairs, npairs);
    double start = s->now_us, longest = 0;
    for (int i = 0; i < npairs; i++) {
        int va = f->node_vertex[pairs[i].a], vb = f->node_vertex[pairs[i].b];
        int n = ts_fabric_path_links(f, va, vb, links, SIM_PATH_MAX);
        int extra = 0;
        for (int k = 0; k < n; k++)
            extra += s->link_flows[links[k]] - 1;
        sim_probe_ctx pc = {s, va, vb, links, n, extra, holds ? s->hold_us[va] + s->hold_us[vb] : 0};
        ts_sample_pair(rule, sim_probe, &pc, s->m->p.timeout_us, deadline_us - start, pairs[i].a,
                       pairs[i].b, &out[i]);
        if (out[i].time_us > longest)
            longest = out[i].time_us;
    }
    for (int i = 0; i < npairs; i++) {
        int va = f->node_vertex[pairs[i].a], vb = f->node_vertex[pairs[i].b];
        int n = ts_fabric_path_links(f, va, vb, links, SIM_PATH_MAX);
        for (int k = 0; k < n; k++)
            s->link_flows[links[k]]--;
    }
    /* The round ends with its slowest pair (rounds are barrier-synchronised). */
    s->now_us = start + longest;
    s->cpu_s += thread_cpu_s() - cpu_start;
    (void)err;
    return TS_OK;
}

static int sim_control_step(ts_transport *t, double deadline_us, ts_error *err)
{
    ts_sim *s = t->impl;
    int steps = 0;
    while ((1 << steps) < t->nnodes)
        steps++;
    double cost = 2.0 * steps * s->control_rtt_us;
    if (s->now_us + cost > deadline_us) {
        s->now_us = fmax(s->now_us, deadline_us);
        return ts_fail(err, TS_ELIMIT, "the deadline passed during a control step");
    }
    s->now_us += cost;
    return TS_OK;
}

static double sim_cpu(ts_transport *t)
{
    return ((ts_sim *)t->impl)->cpu_s;
}

static const ts_transport_ops sim_ops = {
    .run_round = sim_run_round,
    .now_us = sim_now,
    .control_step = sim_control_step,
    .cpu_s = sim_cpu,
};

int ts_sim_create(ts_sim **out, const ts_fabric *truth, const ts_model *model, uint64_t run_seed,
                  ts_error *err)
{
    *out = NULL;
    if (truth->root == TS_NONE)
        return ts_fail(err, TS_EINPUT, "the fabric is not finalized");
    if (model->nvert != truth->nvert)
        return ts_fail(err, TS_EINPUT, "the model was realized for another fabric");
    if (2 * ts_fabric_max_depth(truth) > SIM_PATH_MAX)
        return ts_fail(err, TS_ELIMIT, "the fabric is deeper than the simulator supports (%d levels)",
                       SIM_PATH_MAX / 2);
    ts_sim *s = calloc(1, sizeof *s);
    if (!s)
        return ts_fail(err, TS_ENOMEM, "out of memory");
    s->link_flows = calloc((size_t)truth->nvert, sizeof(int));
    s->hold_us = calloc((size_t)truth->nvert, sizeof(double));
    if (!s->link_flows || !s->hold_us) {
        free(s->link_flows);
        free(s->hold_us);
        free(s);
        return ts_fail(err, TS_ENOMEM, "out of memory");
    }
    s->f = truth;
    s->m = model;
    ts_rng_seed_stream(&s->rng, run_seed, 0x51u);
    s->run_seed = run_seed;
    s->tp.ops = &sim_ops;
    s->tp.impl = s;
    s->tp.nnodes = truth->nnodes;
    /* A control message travels between the leader and agents anywhere in the fabric: charge
     * the longest round trip the model has (deepest node to deepest node through the root). */
    double deepest = 0;
    for (int i = 0; i < truth->nnodes; i++) {
        double d = 0;
        for (int x = truth->node_vertex[i]; x != truth->root; x = truth->v[x].parent)
            d += model->link_us[x];
        if (d > deepest)
            deepest = d;
    }
    s->control_rtt_us = 4.0 * deepest + model->p.host_overhead_us + ts_model_mean_jitter_us(&model->p);
    *out = s;
    return TS_OK;
}

void ts_sim_free(ts_sim *s)
{
    if (!s)
        return;
    free(s->link_flows);
    free(s->hold_us);
    free(s);
}

ts_transport *ts_sim_transport(ts_sim *s)
{
    return &s->tp;
}

double ts_sim_now_us(const ts_sim *s)
{
    return s->now_us;
}

double ts_sim_cpu_s(const ts_sim *s)
{
    return s->cpu_s;
}

double ts_sim_sample_once(ts_sim *s, int node_a, int node_b)
{
    int links[SIM_PATH_MAX];
    int va = s->f->node_vertex[node_a], vb = s->f->node_vertex[node_b];
    int n = ts_fabric_path_links(s->f, va, vb, links, SIM_PATH_MAX);
    return sample_rtt(s, va, vb, links, n, 0, 0);
}
