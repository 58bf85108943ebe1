/* Link identity across trees, the baseline file and the detection rule. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "tap.h"
#include "hwdata.h"
#include "toposcope/anomaly.h"
#include "toposcope/treeyaml.h"

static int vertex(const ts_fabric *f, const char *name)
{
    int v = ts_fabric_find(f, name);
    if (v == TS_NONE) {
        printf("Bail out! no vertex %s\n", name);
        exit(1);
    }
    return v;
}

/* The same switch seen by two trees rooted differently, and through the admin's names. */
static void test_identity(void)
{
    ts_fabric a, b, admin;
    char id[TS_LINK_ID_MAX], id2[TS_LINK_ID_MAX];
    test_fabric(&a, "SwitchName=top Switches=x,y\nSwitchName=x Nodes=n[1-4]\nSwitchName=y Nodes=n[5-8]\n");
    /* the inference rooted the same fabric at a leaf: y hangs below x */
    test_fabric(&b, "SwitchName=s1 Nodes=n[1-4] Switches=s2\nSwitchName=s2 Nodes=n[5-8]\n");
    test_fabric(&admin, "SwitchName=spine Switches=leafA,leafB\nSwitchName=leafA Nodes=n[1-4]\nSwitchName=leafB Nodes=n[5-8]\n");
    ok(ts_link_id(&a, vertex(&a, "n3"), NULL, NULL, id, sizeof id) == TS_OK && !strcmp(id, "n3"),
       "an access link is its node's name (%s)", id);
    ok(ts_link_id(&a, vertex(&a, "x"), NULL, NULL, id, sizeof id) == TS_OK && !strcmp(id, "{n[5-8]}"),
       "a switch uplink is its smaller side's nodes, on a tie the side without the first name (%s)", id);
    ts_link_id(&b, vertex(&b, "s2"), NULL, NULL, id2, sizeof id2);
    ok(!strcmp(id2, "{n[5-8]}"), "the link between the halves has one name whatever the root (%s)", id2);
    int *jc = ts_link_admin_counts(&admin, &b);
    ok(ts_link_id(&b, vertex(&b, "s2"), &admin, jc, id, sizeof id) == TS_OK && !strcmp(id, "leafB"),
       "with topology.conf it takes the admin's switch name (%s)", id);
    free(jc);
    /* a job on part of the fabric: n1, n2 of leafA and n5..n7 of leafB */
    ts_fabric job;
    test_fabric(&job, "SwitchName=t Nodes=n[5-7] Switches=u\nSwitchName=u Nodes=n[1-2]\n");
    jc = ts_link_admin_counts(&admin, &job);
    ok(ts_link_id(&job, vertex(&job, "u"), &admin, jc, id, sizeof id) == TS_OK && !strcmp(id, "leafA"),
       "a job's partial leaf maps to the admin switch holding exactly its nodes (%s)", id);
    free(jc);
    /* the admin's tree disagrees (n2 cabled to leafB): no admin name fits, the set names it */
    ts_fabric wrong;
    test_fabric(&wrong, "SwitchName=spine Switches=leafA,leafB\nSwitchName=leafA Nodes=n1,n[3-4]\nSwitchName=leafB Nodes=n2,n[5-8]\n");
    jc = ts_link_admin_counts(&wrong, &job);
    ts_link_id(&job, vertex(&job, "u"), &wrong, jc, id, sizeof id);
    ok(!strcmp(id, "{n[1-2]}"), "a set that is no admin switch keeps its set name (%s)", id);
    free(jc);
    ts_fabric_free(&a);
    ts_fabric_free(&b);
    ts_fabric_free(&admin);
    ts_fabric_free(&job);
    ts_fabric_free(&wrong);
}

static void test_baseline_file(void)
{
    ts_baseline_builder *bb = ts_baseline_builder_new();
    double est[5] = { 8.0, 8.2, 7.9, 8.1, 30.0 };   /* one wild run: the median ignores it */
    for (int i = 0; i < 5; i++) {
        ts_baseline_builder_add(bb, "n1", 1, est[i], 0.05);
        ts_baseline_builder_add(bb, "{n[1-4]}", 0, 2.5, 0.1);
    }
    ts_baseline b, c;
    ts_error err = {{0}};
    ok(ts_baseline_builder_finish(bb, &b, &err) == TS_OK, "baseline built");
    ts_baseline_builder_free(bb);
    const ts_baseline_link *l = ts_baseline_find(&b, "n1");
    ok(l && fabs(l->median_us - 8.1) < 1e-9 && fabs(l->mad_us - 0.1) < 1e-9 && l->count == 5 && l->access,
       "median 8.1, MAD 0.1, count 5 (%g %g %d)", l ? l->median_us : NAN, l ? l->mad_us : NAN, l ? l->count : 0);
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    ts_baseline_write(&b, out);
    fclose(out);
    ok(ts_baseline_parse(&c, buf, len, "baseline.yaml", &err) == TS_OK, "the written file reads back %s", err.text);
    ok(c.n == 2 && ts_baseline_find(&c, "{n[1-4]}") && fabs(ts_baseline_find(&c, "n1")->median_us - 8.1) < 1e-4,
       "same links and values");
    free(buf);
    ts_baseline_free(&c);
    static const struct { const char *text, *want; } bad[] = {
        { "links: []\n", "toposcope_baseline: 1' missing" },
        { "toposcope_baseline: 2\nlinks: []\n", "baseline.yaml:1:21" },
        { "toposcope_baseline: 1\nlinks:\n  - {link: x, kind: access, median_us: 1, mad_us: 0, se_us: 0}\n", "needs 'count'" },
        { "toposcope_baseline: 1\nlinks:\n  - {link: x, kind: cable, median_us: 1, mad_us: 0, se_us: 0, count: 1}\n", "baseline.yaml:3:21" },
        { "toposcope_baseline: 1\nlinks:\n  - {link: x, kind: access, median_us: -1, mad_us: 0, se_us: 0, count: 1}\n", "median_us" },
        { "toposcope_baseline: 1\nlinks:\n  - {link: x, kind: access, median_us: 1, mad_us: 0, se_us: 0, count: 1, extra: 1}\n", "unknown key" },
        { "toposcope_baseline: 1\nlinks: {}\n", "must be a list" },
        { "toposcope_baseline: 1\nlinks: [\n", "baseline.yaml:" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err.text[0] = '\0';
        int rc = ts_baseline_parse(&c, bad[i].text, strlen(bad[i].text), "baseline.yaml", &err);
        ok(rc != TS_OK && strstr(err.text, bad[i].want) != NULL, "refused: %s", err.text);
    }
    ts_baseline_free(&b);
}

static ts_link_obs obs(const char *id, int access, double est, double se)
{
    ts_link_obs o;
    memset(&o, 0, sizeof o);
    snprintf(o.id, sizeof o.id, "%s", id);
    o.access = access;
    o.est_us = est;
    o.se_us = se;
    return o;
}

static void test_detection(void)
{
    ts_baseline_builder *bb = ts_baseline_builder_new();
    const char *ids[6] = { "a", "b", "c", "d", "e", "f" };
    for (int k = 0; k < 6; k++)
        for (int r = 0; r < 5; r++)
            ts_baseline_builder_add(bb, ids[k], 0, 10.0 + 0.1 * ((r + k) % 3 - 1), 0.1);
    ts_baseline b;
    ts_error err = {{0}};
    ts_baseline_builder_finish(bb, &b, &err);
    ts_baseline_builder_free(bb);
    ts_link_obs o[6] = {
        obs("a", 0, 13.0, 0.1),    /* +30%, 3 us, ~25 sd: anomalous */
        obs("b", 0, 10.4, 0.1),    /* +4%: significant but under 5% */
        obs("c", 0, 12.0, 2.0),    /* +20% but this run's own spread is wide: not significant */
        obs("d", 0, 9.0, 0.1),     /* faster: never an anomaly */
        obs("e", 0, 11.0, 0.1),    /* +10%, ~8 sd: anomalous, less than a */
        obs("zz", 0, 99.0, 0.1),   /* no baseline: not compared */
    };
    ts_link_obs_set set = { 6, o };
    ts_detect_options d;
    ts_detect_options_default(&d);
    d.threshold_pct = 5;
    d.threshold_us = 0.3;
    ts_anomaly_list l = { 0 };
    ok(ts_anomaly_detect(&set, &b, &d, &l, &err) == TS_OK, "detect");
    ts_anomaly_add_unreachable(&l, "f", &b, &err);
    ts_anomaly_sort(&l);
    ok(l.n == 3, "three anomalies (%d)", l.n);
    ok(l.n == 3 && !strcmp(l.a[0].id, "f") && l.a[0].kind == TS_ANOMALY_UNREACHABLE, "the silent node first");
    ok(l.n == 3 && !strcmp(l.a[1].id, "a") && !strcmp(l.a[2].id, "e"), "then the larger excess");
    ok(l.n == 3 && fabs(l.a[1].excess_pct - 30) < 1e-6 && fabs(l.a[1].expected_us - 10) < 1e-9,
       "excess 30%% over 10 us");
    ok(l.checked == 5, "five links compared (%d)", l.checked);
    ts_anomaly_list_free(&l);
    d.threshold_us = 5;
    ts_anomaly_detect(&set, &b, &d, &l, &err);
    ok(l.n == 0, "an absolute threshold of 5 us lets a 3 us excess pass");
    ts_anomaly_list_free(&l);
    ts_baseline_free(&b);
}

/* A run whose discovery left switch s2 unresolved: it may stand for a pod over hidden leaves, so
 * n1's access link may span a leaf's uplink too. The links at s2 (n1's, s2's own) are read and
 * kept, marked uncertain, and neither compared with the baseline (n1, twice its baseline, is not
 * flagged) nor learned into one; n3, at the resolved root, still is; in a resolved tree all are. */
static void test_uncertain_extent(void)
{
    static const char tree_fmt[] =
        "nodes: 4\nswitches: 2\nvertices:\n"
        "  - {name: \"s1\", kind: switch, parent: null}\n"
        "  - {name: \"s2\", kind: switch, parent: \"s1\", link_us: 1%s}\n"
        "  - {name: \"n1\", kind: node, parent: \"s2\", link_us: 10}\n"
        "  - {name: \"n2\", kind: node, parent: \"s2\", link_us: 10}\n"
        "  - {name: \"n3\", kind: node, parent: \"s1\", link_us: 10}\n"
        "  - {name: \"n4\", kind: node, parent: \"s1\", link_us: 10}\n";
    static const char links[] =
        "confidence: 0.90\nlinks:\n"
        "  - {link: \"n1\", kind: access, est_us: 20.0, lo_us: 19.8, hi_us: 20.2, samples: 96, pairs: 3}\n"
        "  - {link: \"n3\", kind: access, est_us: 10.0, lo_us: 9.8, hi_us: 10.2, se_us: 0.05, samples: 96, pairs: 3}\n"
        "  - {link: \"s2\", kind: uplink, est_us: 1.0, lo_us: 0.8, hi_us: 1.2, samples: 128, pairs: 4}\n";
    ts_baseline_builder *bb = ts_baseline_builder_new();
    for (int r = 0; r < 5; r++) {
        ts_baseline_builder_add(bb, "n1", 1, 10.0 + 0.05 * (r - 2), 0.1);
        ts_baseline_builder_add(bb, "n3", 1, 10.0 + 0.05 * (r - 2), 0.1);
    }
    ts_baseline b;
    ts_error err = {{0}};
    ts_baseline_builder_finish(bb, &b, &err);
    ts_baseline_builder_free(bb);
    for (int unresolved = 0; unresolved <= 1; unresolved++) {
        char text[1024];
        snprintf(text, sizeof text, tree_fmt, unresolved ? ", unresolved: true" : "");
        ts_fabric tree;
        ts_link_obs_set set = { 0 };
        ok(ts_fabric_parse_tree_yaml(&tree, text, strlen(text), "tree.yaml", &err) == TS_OK &&
           ts_link_obs_parse_links_yaml(&tree, links, strlen(links), "links.yaml", NULL, &set, &err) == TS_OK,
           "%s tree: links.yaml read %s", unresolved ? "unresolved" : "resolved", err.text);
        int marked = 0;
        for (int i = 0; i < set.n; i++)
            marked += set.o[i].uncertain;
        ok(set.n == 3 && marked == (unresolved ? 2 : 0) && !set.o[1].uncertain, "%s tree: %d of %d links uncertain",
           unresolved ? "unresolved" : "resolved", marked, set.n);
        /* se_us as written (the intervals may stand on a wider scale than the estimate's);
         * without it, read off the interval as files before it were */
        ok(set.n == 3 && fabs(set.o[1].se_us - 0.05) < 1e-12 && fabs(set.o[0].se_us - 0.4 / (2 * 1.6448536)) < 1e-6,
           "%s tree: se_us read as written (%g), else off the interval (%g)", unresolved ? "unresolved" : "resolved",
           set.n == 3 ? set.o[1].se_us : NAN, set.n == 3 ? set.o[0].se_us : NAN);
        ts_detect_options d;
        ts_detect_options_default(&d);
        ts_anomaly_list l = { 0 };
        ts_anomaly_detect(&set, &b, &d, &l, &err);
        ok(unresolved ? l.n == 0 && l.checked == 1 : l.n == 1 && !strcmp(l.a[0].id, "n1") && l.checked == 2,
           "%s tree: %d anomalies, %d links compared", unresolved ? "unresolved (n3 alone compared)"
                                                      : "resolved (the slow node flagged)", l.n, l.checked);
        ts_anomaly_list_free(&l);
        ts_baseline_builder *bb2 = ts_baseline_builder_new();
        ts_baseline b2;
        ts_baseline_builder_add_set(bb2, &set);
        ts_baseline_builder_finish(bb2, &b2, &err);
        ts_baseline_builder_free(bb2);
        ok(b2.n == (unresolved ? 1 : 3), "%s tree: %d links learned into a baseline",
           unresolved ? "unresolved" : "resolved", b2.n);
        ts_baseline_free(&b2);
        ts_link_obs_set_free(&set);
        ts_fabric_free(&tree);
    }
    ts_baseline_free(&b);
}

/* Lossy links: of two that lost the same share of their probes, the one with more probes
 * behind it ranks first (a leaf uplink whose loss every pair of a node below it shares, and
 * that node's access link); a clear rate difference still ranks by the rate; a link losing
 * less than the threshold is not flagged. */
static void test_loss_ranking(void)
{
    ts_baseline b;
    ts_baseline_init(&b);
    enum { NLINKS = 8 };
    ts_link_obs o[NLINKS] = {
        obs("uplink", 0, 2.6, 0.1), obs("node", 1, 8.0, 0.1), obs("worse", 1, 8.0, 0.1),
        obs("ok1", 1, 8.0, 0.1), obs("ok2", 1, 8.0, 0.1), obs("ok3", 0, 2.6, 0.1),
        obs("ok4", 1, 8.0, 0.1), obs("ok5", 1, 8.0, 0.1),
    };
    /* 32 probes per pair (the healthy links', the median); 37.1 %, 37.5 % and 75 % lost */
    long samples[NLINKS] = { 161, 100, 40, 160, 160, 256, 160, 160 };
    int pairs[NLINKS] = { 8, 5, 5, 5, 5, 8, 5, 5 };
    for (int i = 0; i < NLINKS; i++)
        o[i].samples = samples[i], o[i].pairs = pairs[i];
    ts_link_obs_set set = { NLINKS, o };
    ts_detect_options d;
    ts_detect_options_default(&d);
    ts_anomaly_list l = { 0 };
    ts_error err = {{0}};
    ok(ts_anomaly_detect(&set, &b, &d, &l, &err) == TS_OK, "loss: detect");
    ts_anomaly_sort(&l);
    ok(l.n == 3, "loss: three lossy links (%d)", l.n);
    ok(l.n == 3 && !strcmp(l.a[0].id, "worse") && !strcmp(l.a[1].id, "uplink") && !strcmp(l.a[2].id, "node"),
       "loss: 75%% first, then 37.1%% of 256 probes above 37.5%% of 160 (%s, %s, %s)",
       l.n > 0 ? l.a[0].id : "-", l.n > 1 ? l.a[1].id : "-", l.n > 2 ? l.a[2].id : "-");
    ok(l.n == 3 && fabs(l.a[2].loss_pct - 37.5) < 1e-9 && l.a[2].score > TS_ANOMALY_SCORE_LOSS &&
       l.a[2].score < TS_ANOMALY_SCORE_LOSS + 37.5, "loss: loss_pct is the rate, the score its lower bound");
    ts_anomaly_list_free(&l);
    ts_baseline_free(&b);
}

/* A record's ids read back against topology.conf: exact, from the other side, within, none,
 * hashed; one matcher reused for a second job. */
static void test_match(void)
{
    ts_fabric admin;
    ts_link_matcher *m;
    ts_error err;
    char text[128];
    test_fabric(&admin, "SwitchName=spine Switches=podA,podB\nSwitchName=podA Switches=leafA,leafB\n"
                        "SwitchName=podB Switches=leafC\nSwitchName=leafA Nodes=n[1-4]\n"
                        "SwitchName=leafB Nodes=n[5-8]\nSwitchName=leafC Nodes=n[9-12]\n");
    ok(ts_link_matcher_new(&admin, &m, &err) == TS_OK, "a matcher");
    /* a job on n1-n3 (of leafA), n5-n8 (leafB), n9 (leafC, alone under podB) */
    char *groups[] = { "n[1-3]", "n[5-8]", "n9" };
    ok(ts_link_matcher_set_job(m, groups, 3, &err) == TS_OK, "the job's measured nodes");
    ts_link_match mt = ts_link_match_id(m, "{n[1-3]}");
    ok(mt.kind == TS_MATCH_EXACT && mt.vertex == vertex(&admin, "leafA"),
       "the job's 3 nodes of leafA name leafA's uplink (a subset of its subtree)");
    mt = ts_link_match_id(m, "{n[1-3],n[5-8]}");
    ok(mt.kind == TS_MATCH_EXACT && mt.vertex == vertex(&admin, "podA"), "a set that is podA's job nodes is podA");
    mt = ts_link_match_id(m, "{n9}");
    ok(mt.kind == TS_MATCH_EXACT && mt.vertex == vertex(&admin, "leafC"),
       "leafC and podB hold the same job node: the deeper switch names it");
    mt = ts_link_match_id(m, "{n[1-3],n9}");
    ok(mt.kind == TS_MATCH_EXACT && mt.vertex == vertex(&admin, "leafB"),
       "a set whose other side is leafB's job nodes is leafB's uplink");
    mt = ts_link_match_id(m, "{n[1-2],n5}");
    ts_link_match_describe(&admin, mt, text, sizeof text);
    ok(mt.kind == TS_MATCH_WITHIN && !strcmp(text, "within podA"),
       "a set no switch holds exactly is within the smallest one holding it (%s)", text);
    mt = ts_link_match_id(m, "{n1,n9}");
    ok(mt.kind == TS_MATCH_NONE, "a set only the root holds matches nothing");
    mt = ts_link_match_id(m, "{n[1-2],x7}");
    ts_link_match_describe(&admin, mt, text, sizeof text);
    ok(mt.kind == TS_MATCH_NONE && strstr(text, "no switch"), "a node topology.conf lacks: no match (%s)", text);
    mt = ts_link_match_id(m, "n7");
    ok(mt.kind == TS_MATCH_EXACT && mt.vertex == vertex(&admin, "n7"), "an access link is its node");
    mt = ts_link_match_id(m, "leafB");
    ok(mt.kind == TS_MATCH_EXACT && mt.vertex == vertex(&admin, "leafB"), "an admin name is itself");
    ok(ts_link_match_id(m, "spine").kind == TS_MATCH_NONE && ts_link_match_id(m, "{n[1-").kind == TS_MATCH_NONE,
       "the root and a broken set name no link");
    /* the long form of a set id: count and hash of leafB's 4 job nodes, as ts_link_id writes it */
    ts_fabric big;
    char id[TS_LINK_ID_MAX];
    char *buf = malloc(1 << 16);
    size_t at = (size_t)snprintf(buf, 1 << 16, "SwitchName=top Switches=s1,s2\nSwitchName=s1 Nodes=");
    for (int i = 0; i < 120; i++)
        at += (size_t)snprintf(buf + at, (1 << 16) - at, "%shost%d-x", i ? "," : "", i * 7);
    snprintf(buf + at, (1 << 16) - at, "\nSwitchName=s2 Nodes=other[1-200]\n");
    test_fabric(&big, buf);
    ts_link_id(&big, vertex(&big, "s1"), NULL, NULL, id, sizeof id);
    ts_link_matcher *mb;
    char *bg[] = { "other[1-200]", buf + strlen("SwitchName=top Switches=s1,s2\nSwitchName=s1 Nodes=") };
    char *nl = strchr(bg[1], '\n');
    *nl = '\0';
    ok(ts_link_matcher_new(&big, &mb, &err) == TS_OK && ts_link_matcher_set_job(mb, bg, 2, &err) == TS_OK,
       "a matcher for a job of 320 nodes");
    mt = ts_link_match_id(mb, id);
    ok(id[0] == '{' && strstr(id, " nodes ") && mt.kind == TS_MATCH_EXACT && mt.vertex == vertex(&big, "s1"),
       "a hashed set id matches by count and hash (%s)", id);
    /* the same matcher on another job: leafA's nodes are now n1-n4 */
    char *groups2[] = { "n[1-4]", "n[9-10]" };
    ok(ts_link_matcher_set_job(m, groups2, 2, &err) == TS_OK, "the matcher takes the next job");
    ok(ts_link_match_id(m, "{n[1-3]}").kind == TS_MATCH_WITHIN && ts_link_match_id(m, "{n[1-4]}").vertex == vertex(&admin, "leafA"),
       "and forgets the last one's nodes");
    ts_link_matcher_free(mb);
    ts_link_matcher_free(m);
    ts_fabric_free(&big);
    ts_fabric_free(&admin);
    free(buf);
}

int main(void)
{
    test_identity();
    test_match();
    test_baseline_file();
    test_detection();
    test_loss_ranking();
    test_uncertain_extent();
    return done_testing();
}
