/* toposcope — one measurement, transport-independent: discovery → tree → link plan → link
 * measure and solve → result files. */
#include <errno.h>
#include <math.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "toposcope/measure.h"
#include "toposcope/pmm.h"
#include "toposcope/links.h"
#include "toposcope/linkreport.h"
#include "toposcope/topoconf.h"
#include "toposcope/textout.h"
#include "toposcope/linksolve.h"

void ts_measure_options_default(ts_measure_options *o)
{
    memset(o, 0, sizeof *o);
    o->method = TS_METHOD_FAST;
    o->links = 1;
    o->link_extra_rounds = TS_LINK_EXTRA_ROUNDS_DEFAULT;
}

static double process_cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* CPU the transport spent itself (the simulator drawing samples): reports of planning cost
 * leave it out. */
static double transport_cpu_s(ts_transport *t)
{
    return t->ops->cpu_s ? t->ops->cpu_s(t) : 0.0;
}

static int link_stage(ts_probe_engine *e, const ts_measure_options *o, ts_measure *m,
                      ts_error *err)
{
    const ts_fabric *tree = &m->tree;
    if (tree->nnodes < 2)
        return TS_OK;              /* nothing to measure between */
    /* the tree's node indices -> the transport's (a node discovery never reached is absent) */
    int *node_map = malloc(sizeof(int) * (size_t)tree->nnodes);
    if (!node_map)
        return ts_fail(err, TS_ENOMEM, "out of memory");
    for (int i = 0; i < tree->nnodes; i++) {
        const char *name = tree->v[tree->node_vertex[i]].name;
        node_map[i] = TS_NONE;
        for (int j = 0; j < e->tp->nnodes; j++)
            if (strcmp(o->names[j], name) == 0) {
                node_map[i] = j;
                break;
            }
    }
    double cpu0 = process_cpu_s(), tcpu0 = transport_cpu_s(e->tp), t0 = ts_probe_now(e);
    ts_link_plan_options po;
    ts_link_plan_options_default(&po);
    po.extra_rounds = o->link_extra_rounds;
    ts_error perr;
    int rc = o->known_tree ? ts_link_plan_pmm(tree, &m->plan, &perr)
                           : ts_link_plan_tree_opts(tree, &po, &m->plan, &perr);
    if (rc != TS_OK) {
        free(node_map);
        return ts_fail(err, rc, "link plan: %s", perr.text);
    }
    m->link_plan_us = ts_probe_now(e) - t0;
    ts_link_measure_options mo;
    ts_link_measure_options_default(&mo);
    mo.node_map = node_map;
    rc = ts_link_measure_opts(e, tree, &m->plan, &mo, &m->links, &perr);
    free(node_map);
    if (rc != TS_OK)
        return ts_fail(err, rc, "link measurement: %s", perr.text);
    m->link_cpu_s = process_cpu_s() - cpu0 - (transport_cpu_s(e->tp) - tcpu0);
    m->link_time_us = ts_probe_now(e) - t0;
    m->links_ran = 1;
    return TS_OK;
}

/* The switches discovery left unresolved, each named by a node hanging from it, marked in the
 * tree (tree.yaml says so): the links at them may span hidden switches, so the anomaly detector
 * does not hold them against a baseline of single links. */
static int node_vertex(const ts_fabric *tree, char *const *names, int nnodes, int node)
{
    return node >= 0 && node < nnodes ? ts_fabric_find(tree, names[node]) : TS_NONE;
}

static void mark_below(ts_fabric *tree, int v)
{
    if (tree->v[v].kind != TS_SWITCH)
        return;
    tree->v[v].unresolved = 1;
    for (int c = tree->v[v].first_child; c != TS_NONE; c = tree->v[c].next_sibling)
        mark_below(tree, c);
}

static void mark_unresolved(ts_fabric *tree, const ts_infer_report *rep, char *const *names, int nnodes)
{
    for (int i = 0; i < rep->nambiguous; i++) {
        int alone = rep->grouping_only && rep->grouping_only[i];
        int v = node_vertex(tree, names, nnodes, rep->ambiguous[i]);
        if (!alone && v != TS_NONE && tree->v[v].parent != TS_NONE)
            tree->v[tree->v[v].parent].unresolved = 1;
        if (!rep->unresolved_of)
            continue;
        /* the region's whole subtree: the common ancestor of its nodes and every switch below;
         * where only its children's grouping is in doubt, that ancestor alone */
        int top = TS_NONE;
        for (int x = 0; x < nnodes; x++)
            if (rep->unresolved_of[x] == i && (v = node_vertex(tree, names, nnodes, x)) != TS_NONE)
                top = top == TS_NONE ? tree->v[v].parent : ts_fabric_lca(tree, top, v);
        if (top != TS_NONE && alone)
            tree->v[top].unresolved = 1;
        else if (top != TS_NONE)
            mark_below(tree, top);
    }
}

int ts_measure_run(ts_probe_engine *e, const ts_measure_options *o, ts_measure *m, ts_error *err)
{
    memset(m, 0, sizeof *m);
    ts_fabric_init(&m->tree);
    m->rep.reference = TS_NONE;
    m->disc_start_us = ts_probe_now(e);
    double cpu0 = process_cpu_s(), tcpu0 = transport_cpu_s(e->tp);
    int rc;
    if (o->known_tree) {
        rc = ts_fabric_copy(&m->tree, o->known_tree, err);
    } else {
        ts_utree ut;
        ts_utree_init(&ut);
        rc = ts_discover(o->method, e, &ut, &m->rep, err);
        if (rc == TS_OK)
            rc = ts_utree_to_fabric(&ut, o->names, e->tp->nnodes, &m->tree, err);
        ts_utree_free(&ut);
        if (rc == TS_OK)
            mark_unresolved(&m->tree, &m->rep, o->names, e->tp->nnodes);
    }
    if (rc != TS_OK)
        return rc;
    m->disc_cpu_s = process_cpu_s() - cpu0 - (transport_cpu_s(e->tp) - tcpu0);
    m->discovered = *e;
    m->disc_end_us = ts_probe_now(e);
    if (o->links)
        return link_stage(e, o, m, err);
    return TS_OK;
}

/* A link whose estimate lies TS_IMPLAUSIBLE_SE standard errors below zero: its name (the first
 * tree link it stands for) and estimate into why. The count. */
static int implausible_links(const ts_measure *m, char *why, size_t max)
{
    int n = 0;
    for (int k = 0; m->links_ran && k < m->links.nlinks; k++) {
        const ts_link_estimate *l = &m->links.link[k];
        if (isnan(l->est_us) || isnan(l->se_us) || l->est_us + TS_IMPLAUSIBLE_SE * l->se_us >= 0)
            continue;
        if (n++ == 0)
            snprintf(why, max, "link %s solves to %.1f us (%.1f..%.1f): the split above it is "
                     "not supported by the measurements",
                     m->tree.v[m->links.members[l->first]].name, l->est_us, l->lo_us, l->hi_us);
    }
    return n;
}

const char *ts_measure_verdict(const ts_measure *m, char *why, size_t max)
{
    why[0] = '\0';
    if (m->discovered.partial || (m->links_ran && m->links.partial)) {
        snprintf(why, max, "the budget ran out before the plan was complete");
        return "partial";
    }
    if (m->rep.nambiguous > 0) {
        /* a level showed there but its split was not significant: the tree keeps the switch
         * over all its nodes (coarser, not guessed). Counted in the tree: regions that ended
         * in one switch are one. */
        int n = 0;
        for (int v = 0; v < m->tree.nvert; v++)
            n += m->tree.v[v].unresolved;
        n = n > 0 ? n : m->rep.nambiguous;
        snprintf(why, max, "the tree is uncertain: %d of its %d switches unresolved or inside a region "
                 "left unresolved (a level seen but not significant, or discovery's two methods "
                 "disagreeing there)", n, m->tree.nvert - m->tree.nnodes);
        return "partial";
    }
    if (m->rep.nunpowered > 0) {
        /* no level showed there, but the data could not have shown the one that matters: the
         * switch stays one (coarser, not proven); a job of 3 nodes cannot show any */
        if (m->rep.unpowered_us > 0 && isfinite(m->rep.unpowered_us))
            snprintf(why, max, "the tree is uncertain: %d switch%s without children where no level "
                     "was seen; a step below %.1f us cannot be excluded at 90 %%", m->rep.nunpowered,
                     m->rep.nunpowered == 1 ? "" : "es", m->rep.unpowered_us);
        else
            snprintf(why, max, "the tree is uncertain: %d switch%s without children where no level "
                     "was seen, too few nodes below %s to tell a level from the hosts' own delays",
                     m->rep.nunpowered, m->rep.nunpowered == 1 ? "" : "es",
                     m->rep.nunpowered == 1 ? "it" : "them");
        return "partial";
    }
    char first[256];
    int n = implausible_links(m, first, sizeof first);
    if (n == 0)
        return "measured";
    snprintf(why, max, "the tree is uncertain: %d link%s below zero latency; %s", n,
             n == 1 ? "" : "s", first);
    return "partial";
}

void ts_measure_free(ts_measure *m)
{
    ts_link_plan_free(&m->plan);
    ts_link_result_free(&m->links);
    ts_infer_report_free(&m->rep);
    ts_fabric_free(&m->tree);
}

/* ---- result files ---- */

void ts_measure_text_free(ts_measure_text *t)
{
    free(t->topology_conf);
    free(t->tree_yaml);
    free(t->links_yaml);
    free(t->pairs_yaml);
    memset(t, 0, sizeof *t);
}

int ts_measure_render(const ts_measure *m, const ts_fabric *truth, const ts_link_truth *lt,
                      ts_measure_text *out, ts_error *err)
{
    memset(out, 0, sizeof *out);
    char **slot[4] = {&out->topology_conf, &out->tree_yaml, &out->links_yaml, &out->pairs_yaml};
    for (int k = 0; k < 4; k++) {
        if (k >= 2 && !m->links_ran)
            break;
        size_t len;
        FILE *f = open_memstream(slot[k], &len);
        if (!f) {
            ts_measure_text_free(out);
            return ts_fail(err, TS_ENOMEM, "out of memory");
        }
        if (k == 0)
            ts_fabric_write_topology_conf(&m->tree, f);
        else if (k == 1)
            ts_fabric_write_yaml(&m->tree, f);
        else if (k == 2)
            ts_links_write_yaml(&m->tree, &m->links, lt, truth, f);
        else
            ts_link_pairs_write_yaml(&m->tree, &m->links, f);
        if (ferror(f) | fclose(f)) {
            ts_measure_text_free(out);
            return ts_fail(err, TS_ENOMEM, "out of memory");
        }
    }
    return TS_OK;
}

int ts_measure_write(const ts_measure *m, int dirfd, int mode, const ts_fabric *truth,
                     const ts_link_truth *lt, ts_error *err)
{
    ts_measure_text t;
    int rc = ts_measure_render(m, truth, lt, &t, err);
    if (rc != TS_OK)
        return rc;
    const char *names[4] = {"topology.conf", "tree.yaml", "links.yaml", "pairs.yaml"};
    const char *data[4] = {t.topology_conf, t.tree_yaml, t.links_yaml, t.pairs_yaml};
    for (int k = 0; k < 4 && rc == TS_OK; k++)
        if (data[k])
            rc = ts_write_file_at(dirfd, names[k], data[k], strlen(data[k]), mode, err);
    ts_measure_text_free(&t);
    return rc;
}
