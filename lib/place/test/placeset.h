/* Test helpers: a fabric, one hwloc XML for every node, the merged hierarchy, a placement under
 * a policy and its groups, built in one call (t_place, t_hints). */
#ifndef TOPOSCOPE_TEST_PLACESET_H
#define TOPOSCOPE_TEST_PLACESET_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "hwdata.h"
#include "toposcope/groups.h"
#include "toposcope/hier.h"
#include "toposcope/hwtree.h"
#include "toposcope/place.h"
#include "toposcope/policy.h"

typedef struct setup {
    ts_fabric f;
    ts_hwtree hw;
    const ts_hwtree **of_node;
    ts_hierarchy h;
    ts_placement pl;
    ts_groups g;
    int rc;
    ts_error err;
} setup;

static inline ts_policy policy(ts_placement_kind kind, int block, int cpus, int per_core, int per_node)
{
    ts_policy p;
    ts_policy_default(&p);
    p.kind = kind;
    p.block_size = block;
    p.cpus_per_rank = cpus;
    p.ranks_per_core = per_core;
    p.ranks_per_node = per_node;
    return p;
}

/* Fabric (conf text) x one XML for every node; place nranks under p; groups. */
static inline void run(setup *s, const char *conf, const char *xml, const ts_policy *p, int nranks)
{
    memset(s, 0, sizeof *s);
    test_fabric(&s->f, conf);
    if (ts_hwtree_load_xml(&s->hw, test_data("hwloc", xml), NULL, &s->err) != TS_OK) {
        printf("Bail out! %s\n", s->err.text);
        exit(1);
    }
    s->of_node = malloc(sizeof *s->of_node * (size_t)s->f.nnodes);
    for (int i = 0; i < s->f.nnodes; i++)
        s->of_node[i] = &s->hw;
    s->rc = ts_hierarchy_build(&s->h, &s->f, s->of_node, &s->err);
    ts_place_options o = { nranks, 0 };
    if (s->rc == TS_OK)
        s->rc = ts_place(&s->h, p, &o, &s->pl, &s->err);
    if (s->rc == TS_OK)
        s->rc = ts_groups_compute(&s->g, &s->h, &s->pl, &s->err);
}

static inline void done(setup *s)
{
    ts_groups_free(&s->g);
    ts_placement_free(&s->pl);
    ts_hierarchy_free(&s->h);
    ts_hwtree_free(&s->hw);
    free(s->of_node);
    ts_fabric_free(&s->f);
}

/* What an emitter of a placement writes, as a malloc'd string. */
static inline char *emit_to_string(int (*emit)(const ts_placement *, FILE *), const ts_placement *pl)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    emit(pl, f);
    fclose(f);
    return buf;
}

/* The node rank r was placed on. */
static inline const char *host(const setup *s, int r)
{
    return s->f.v[s->f.node_vertex[s->pl.rank[r].node]].name;
}

#endif
