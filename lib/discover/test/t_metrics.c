/* Accuracy metrics: split comparison after reduction, leaf-group ARI, shared-link queries,
 * explanations. Trees are edited as edge lists so each test states the change it makes. */
#include <string.h>
#include <time.h>
#include "tap.h"
#include "toposcope/gen.h"
#include "toposcope/metrics.h"

typedef struct edge {
    char name[48];
    char parent[48];   /* "" for the root */
    ts_vertex_kind kind;
} edge;

typedef struct edges {
    edge e[9000];
    int n;
} edges;

static edges E1, E2;   /* large: kept off the stack */

static void edges_from(edges *es, const ts_fabric *f)
{
    es->n = 0;
    for (int i = 0; i < f->nvert; i++) {
        edge *e = &es->e[es->n++];
        snprintf(e->name, sizeof e->name, "%s", f->v[i].name);
        snprintf(e->parent, sizeof e->parent, "%s",
                 f->v[i].parent == TS_NONE ? "" : f->v[f->v[i].parent].name);
        e->kind = f->v[i].kind;
    }
}

static edge *edges_find(edges *es, const char *name)
{
    for (int i = 0; i < es->n; i++)
        if (strcmp(es->e[i].name, name) == 0)
            return &es->e[i];
    return NULL;
}

static void edges_add(edges *es, const char *name, const char *parent, ts_vertex_kind kind)
{
    edge *e = &es->e[es->n++];
    snprintf(e->name, sizeof e->name, "%s", name);
    snprintf(e->parent, sizeof e->parent, "%s", parent);
    e->kind = kind;
}

static void edges_move(edges *es, const char *name, const char *parent)
{
    edge *e = edges_find(es, name);
    if (e)
        snprintf(e->parent, sizeof e->parent, "%s", parent);
}

/* Remove switch `name`; its children move to `into`. */
static void edges_merge(edges *es, const char *name, const char *into)
{
    for (int i = 0; i < es->n; i++)
        if (strcmp(es->e[i].parent, name) == 0)
            snprintf(es->e[i].parent, sizeof es->e[i].parent, "%s", into);
    for (int i = 0; i < es->n; i++)
        if (strcmp(es->e[i].name, name) == 0) {
            es->e[i] = es->e[--es->n];
            break;
        }
}

static void edges_remove(edges *es, const char *name)
{
    for (int i = 0; i < es->n; i++)
        if (strcmp(es->e[i].name, name) == 0) {
            es->e[i] = es->e[--es->n];
            return;
        }
}

/* Make `name` the root: reverse the parent links on its path to the old root. */
static void edges_reroot(edges *es, const char *name)
{
    char prev[48] = "", cur[48];
    snprintf(cur, sizeof cur, "%s", name);
    while (cur[0]) {
        edge *e = edges_find(es, cur);
        char up[48];
        snprintf(up, sizeof up, "%s", e->parent);
        snprintf(e->parent, sizeof e->parent, "%s", prev);
        snprintf(prev, sizeof prev, "%s", cur);
        snprintf(cur, sizeof cur, "%s", up);
    }
}

static int edges_build(ts_fabric *f, const edges *es)
{
    ts_error err = {{0}};
    ts_fabric_init(f);
    for (int i = 0; i < es->n; i++)
        if (ts_fabric_add_vertex(f, es->e[i].name, es->e[i].kind, &err) < 0)
            goto fail;
    for (int i = 0; i < es->n; i++)
        if (es->e[i].parent[0] &&
            ts_fabric_attach(f, ts_fabric_find(f, es->e[i].parent), ts_fabric_find(f, es->e[i].name),
                             &err) != TS_OK)
            goto fail;
    if (ts_fabric_finalize(f, &err) != TS_OK)
        goto fail;
    return 0;
fail:
    diag("building a test tree failed: %s", err.text);
    return -1;
}

/* A tree from "root(sw1(a b) sw2(c d e))": a name followed by '(' is a switch. */
static int tree_from_text(ts_fabric *f, const char *text)
{
    char stack[64][48];
    int depth = 0;
    E2.n = 0;
    const char *p = text;
    while (*p) {
        if (*p == ' ' || *p == ',') {
            p++;
            continue;
        }
        if (*p == ')') {
            depth--;
            p++;
            continue;
        }
        char name[48];
        int len = 0;
        while (*p && *p != ' ' && *p != ',' && *p != '(' && *p != ')' && len < 47)
            name[len++] = *p++;
        name[len] = '\0';
        const char *parent = depth ? stack[depth - 1] : "";
        if (*p == '(') {
            edges_add(&E2, name, parent, TS_SWITCH);
            snprintf(stack[depth++], 48, "%s", name);
            p++;
        } else {
            edges_add(&E2, name, parent, TS_NODE);
        }
    }
    return edges_build(f, &E2);
}

static ts_accuracy compare(const ts_fabric *t, const ts_fabric *i, long queries)
{
    ts_accuracy acc;
    ts_error err = {{0}};
    if (ts_accuracy_compare(t, i, queries, 42, &acc, &err) != TS_OK)
        diag("compare failed: %s", err.text);
    return acc;
}

static void test_identical(void)
{
    ts_fabric t, i;
    ts_error err = {{0}};
    ts_fabric_init(&t);
    ts_gen_fat_tree(&t, 8, 5, &err);
    ts_fabric_copy(&i, &t, &err);
    ts_accuracy a = compare(&t, &i, 20000);
    ok(a.tree_exact && a.splits_missing == 0 && a.splits_extra == 0, "identical trees are exact");
    ok(a.leaf_groups_exact, "identical trees have the same leaf groups");
    is_num(a.leaf_ari, 1.0, 1e-12, "identical trees: ARI 1");
    ok(a.shared_link_fp == 0 && a.shared_link_fn == 0, "identical trees: no query errors");
    is_int(a.queries, 20000, "query count reported");
    is_int(a.nodes_missing, 0, "no node missing");
    char buf[256];
    ts_accuracy_explain(&t, &i, buf, sizeof buf);
    ok(strstr(buf, "identical") != NULL, "explain says identical: %s", buf);
    ts_fabric_free(&t);
    ts_fabric_free(&i);
}

/* regular 2x3x4: root - s1,s2 - s1-1..s2-3 - 4 nodes each (24 nodes) */
static void regular_234(ts_fabric *t)
{
    const int fan[] = {2, 3, 4};
    ts_error err = {{0}};
    ts_fabric_init(t);
    ts_gen_regular(t, fan, 3, 0, &err);
}

static void test_leaf_merged_into_parent(void)
{
    ts_fabric t, i;
    regular_234(&t);
    edges_from(&E1, &t);
    edges_merge(&E1, "s1-1", "s1");
    edges_build(&i, &E1);
    ts_accuracy a = compare(&t, &i, 100000);
    ok(!a.tree_exact, "leaf merged into its parent: not exact");
    is_int(a.splits_missing, 1, "leaf merged into its parent: one split missing");
    is_int(a.splits_extra, 0, "leaf merged into its parent: nothing extra");
    /* the four nodes still hang together, now from s1: only the switch vanished */
    ok(a.leaf_groups_exact && a.leaf_ari == 1.0, "leaf groups unchanged (ARI %.3f)", a.leaf_ari);
    ok(a.shared_link_fn > 0, "queries: truth shares a link the inferred tree lacks (fn %.4f)",
       a.shared_link_fn);
    is_num(a.shared_link_fp, 0, 0, "queries: removing a link adds no false sharing");
    char buf[512];
    ts_accuracy_explain(&t, &i, buf, sizeof buf);
    ok(strstr(buf, "missing split {n0001,n0002,n0003,n0004}") != NULL &&
       strstr(buf, "truth switch s1-1 merged into inferred switch s1") != NULL,
       "explain names the merged switch: %s", buf);
    ts_fabric_free(&t);
    ts_fabric_free(&i);
}

static void test_two_leaves_merged(void)
{
    ts_fabric t, i;
    regular_234(&t);
    edges_from(&E1, &t);
    edges_merge(&E1, "s1-2", "s1-1");
    edges_build(&i, &E1);
    ts_accuracy a = compare(&t, &i, 100000);
    ok(!a.tree_exact, "two leaves merged: not exact");
    is_int(a.splits_missing, 2, "two leaves merged: both leaf splits missing");
    is_int(a.splits_extra, 1, "two leaves merged: the merged leaf is a new split");
    ok(a.leaf_ari < 1.0 && a.leaf_ari > 0, "two leaves merged: 0 < ARI < 1 (%.3f)", a.leaf_ari);
    ok(a.shared_link_fn > 0, "two leaves merged: fn > 0 (%.4f)", a.shared_link_fn);
    ts_fabric_free(&t);
    ts_fabric_free(&i);
}

static void test_switch_split(void)
{
    ts_fabric t, i;
    regular_234(&t);
    edges_from(&E1, &t);
    edges_add(&E1, "x7", "s2-3", TS_SWITCH);
    edges_move(&E1, "n0021", "x7");
    edges_move(&E1, "n0022", "x7");
    edges_build(&i, &E1);
    ts_accuracy a = compare(&t, &i, 100000);
    ok(!a.tree_exact, "split switch: not exact");
    is_int(a.splits_extra, 1, "split switch: one extra split");
    is_int(a.splits_missing, 0, "split switch: nothing missing");
    ok(a.shared_link_fp > 0, "split switch: fp > 0 (%.4f)", a.shared_link_fp);
    is_num(a.shared_link_fn, 0, 0, "split switch: an added link hides no sharing");
    char buf[512];
    ts_accuracy_explain(&t, &i, buf, sizeof buf);
    ok(strstr(buf, "extra split {n0021,n0022} (inferred switch x7 splits truth switch s2-3)") != NULL,
       "explain names both switches: %s", buf);
    ts_fabric_free(&t);
    ts_fabric_free(&i);
}

static void test_invisible_differences(void)
{
    ts_fabric t, i;
    regular_234(&t);

    /* a degree-2 switch on an uplink */
    edges_from(&E1, &t);
    edges_add(&E1, "chain", "s1", TS_SWITCH);
    edges_move(&E1, "s1-2", "chain");
    edges_build(&i, &E1);
    ts_accuracy a = compare(&t, &i, 50000);
    ok(a.tree_exact && a.leaf_groups_exact, "degree-2 chain switch: still exact");
    ok(a.shared_link_fp == 0 && a.shared_link_fn == 0, "degree-2 chain switch: queries agree");
    ts_fabric_free(&i);

    /* a degree-2 switch above one node: same splits, but that node is now alone in its group */
    edges_from(&E1, &t);
    edges_add(&E1, "solo", "s1-1", TS_SWITCH);
    edges_move(&E1, "n0001", "solo");
    edges_build(&i, &E1);
    a = compare(&t, &i, 50000);
    ok(a.tree_exact, "degree-2 switch above a node: exact");
    ok(!a.leaf_groups_exact && a.leaf_ari < 1.0, "but the leaf groups differ (ARI %.3f)", a.leaf_ari);
    char buf[512];
    ts_accuracy_explain(&t, &i, buf, sizeof buf);
    ok(strstr(buf, "grouped differently") != NULL, "explain says only the grouping differs: %s", buf);
    ts_fabric_free(&i);

    /* the truth root has two children: drop it and hang s2 under s1 */
    edges_from(&E1, &t);
    edges_remove(&E1, "root");
    edges_move(&E1, "s1", "");
    edges_move(&E1, "s2", "s1");
    edges_build(&i, &E1);
    a = compare(&t, &i, 50000);
    ok(a.tree_exact && a.leaf_groups_exact, "2-child root: exact without it");
    ok(a.shared_link_fp == 0 && a.shared_link_fn == 0, "2-child root: queries agree");
    ts_fabric_free(&i);
    ts_fabric_free(&t);
}

static void test_rooting(void)
{
    ts_fabric t, i;
    ts_error err = {{0}};
    const int fan[] = {3, 3, 4};
    ts_fabric_init(&t);
    ts_gen_regular(&t, fan, 3, 9, &err);
    edges_from(&E1, &t);
    edges_reroot(&E1, "s2-1");
    edges_build(&i, &E1);
    ok(i.root == ts_fabric_find(&i, "s2-1"), "rerooted at a leaf switch");
    ts_accuracy a = compare(&t, &i, 50000);
    ok(a.tree_exact, "same unrooted tree rooted elsewhere: exact");
    ok(a.shared_link_fp == 0 && a.shared_link_fn == 0, "rerooted: queries agree");
    ts_fabric_free(&i);

    /* random identifiable trees against themselves rerooted at a random switch, and against
     * a star (one switch, every node): the star lacks every split, one per non-root switch */
    int exact = 1, star_ok = 1;
    for (uint64_t seed = 1; seed <= 100; seed++) {
        ts_fabric r, rr, star;
        ts_fabric_init(&r);
        ts_gen_random_identifiable(&r, 120, 6, seed, &err);
        edges_from(&E1, &r);
        int sw = (int)(seed * 7919 % (uint64_t)r.nvert);
        while (r.v[sw].kind != TS_SWITCH)
            sw = (sw + 1) % r.nvert;
        edges_reroot(&E1, r.v[sw].name);
        edges_build(&rr, &E1);
        ts_accuracy x = compare(&r, &rr, 2000);
        exact &= x.tree_exact && x.leaf_groups_exact && x.shared_link_fp == 0 && x.shared_link_fn == 0;

        E1.n = 0;
        edges_add(&E1, "hub", "", TS_SWITCH);
        for (int k = 0; k < r.nnodes; k++)
            edges_add(&E1, r.v[r.node_vertex[k]].name, "hub", TS_NODE);
        edges_build(&star, &E1);
        ts_accuracy y = compare(&r, &star, 0);
        ts_accuracy z = compare(&star, &r, 0);
        int nsw = r.nvert - r.nnodes;
        star_ok &= y.splits_missing == nsw - 1 && y.splits_extra == 0 && z.splits_extra == nsw - 1 &&
                   z.splits_missing == 0 && y.tree_exact == (nsw == 1);
        ts_fabric_free(&r);
        ts_fabric_free(&rr);
        ts_fabric_free(&star);
    }
    ok(exact, "100 random identifiable trees: exact against themselves rerooted");
    ok(star_ok, "100 random identifiable trees: a star misses one split per non-root switch");
    ts_fabric_free(&t);
}

static void test_ari_by_hand(void)
{
    ts_fabric t, i;
    /* truth {a1 a2 a3}{a4 a5 a6}, inferred {a1 a2}{a3 a4 a5 a6}:
     * n_ij pairs 1+0+0+3 = 4, truth groups 3+3 = 6, inferred 1+6 = 7, all pairs 15,
     * expected 6*7/15 = 2.8, ARI = (4 - 2.8) / (6.5 - 2.8) = 12/37 */
    tree_from_text(&t, "r(t1(a1 a2 a3) t2(a4 a5 a6))");
    tree_from_text(&i, "r(u1(a1 a2) u2(a3 a4 a5 a6))");
    ts_accuracy a = compare(&t, &i, 1000);
    is_num(a.leaf_ari, 12.0 / 37.0, 1e-12, "ARI of a hand-computed example = 12/37");
    ok(!a.leaf_groups_exact, "hand example: groups differ");
    ok(a.splits_missing == 1 && a.splits_extra == 1, "hand example: one split swapped for another");
    ts_fabric_free(&t);
    ts_fabric_free(&i);

    /* all singletons vs one block: no agreement beyond chance */
    tree_from_text(&t, "r(s1(a) s2(b) s3(c) s4(d))");
    tree_from_text(&i, "r(s(a b c d))");
    a = compare(&t, &i, 100);
    is_num(a.leaf_ari, 0.0, 1e-12, "singletons vs one block: ARI 0");
    ok(a.tree_exact, "singletons vs one block: same reduced tree (a star)");
    /* both all singletons: the 0/0 case */
    ts_fabric_free(&i);
    tree_from_text(&i, "q(x1(a) x2(b) x3(c) x4(d))");
    a = compare(&t, &i, 100);
    ok(a.leaf_groups_exact, "both all singletons: groups identical");
    is_num(a.leaf_ari, 1.0, 0, "both all singletons: ARI defined as 1");
    ts_fabric_free(&t);
    ts_fabric_free(&i);
}

static void test_queries_by_hand(void)
{
    ts_fabric t, i;
    /* four nodes: truth pairs (a,b)|(c,d), inferred (a,c)|(b,d). A query draws 4 distinct
     * nodes in some order; paths share a link exactly when the pairs they form straddle the
     * internal edge, so truth shares in 2 of 3 pairings and so does the inferred tree, but
     * not the same two: fp = fn = 1/3. */
    tree_from_text(&t, "r(x(a b) y(c d))");
    tree_from_text(&i, "r(x(a c) y(b d))");
    ts_accuracy a = compare(&t, &i, 60000);
    is_num(a.shared_link_fp, 1.0 / 3, 0.01, "quartet swap: fp = 1/3 (%.4f)", a.shared_link_fp);
    is_num(a.shared_link_fn, 1.0 / 3, 0.01, "quartet swap: fn = 1/3 (%.4f)", a.shared_link_fn);
    ts_accuracy b = compare(&t, &i, 60000);
    ok(a.shared_link_fp == b.shared_link_fp && a.shared_link_fn == b.shared_link_fn,
       "same seed, same answers");
    a = compare(&t, &i, 0);
    ok(a.queries == 0 && a.shared_link_fp == 0 && a.shared_link_fn == 0, "no queries: fp = fn = 0");
    ts_fabric_free(&i);
    /* three common nodes: no query possible */
    tree_from_text(&i, "r(x(a b) y(c e))");
    a = compare(&t, &i, 1000);
    ok(a.shared_link_fp == 0 && a.shared_link_fn == 0 && a.nodes_missing == 1,
       "fewer than 4 common nodes: no queries");
    ts_fabric_free(&t);
    ts_fabric_free(&i);
}

static void test_missing_nodes(void)
{
    ts_fabric t, i;
    regular_234(&t);
    edges_from(&E1, &t);
    edges_remove(&E1, "n0005");
    edges_remove(&E1, "n0017");
    edges_add(&E1, "stranger", "s1-1", TS_NODE);
    edges_build(&i, &E1);
    ts_accuracy a = compare(&t, &i, 20000);
    is_int(a.nodes_missing, 2, "two truth nodes missing");
    ok(a.tree_exact && a.leaf_groups_exact, "the common nodes are placed identically");
    ok(a.shared_link_fp == 0 && a.shared_link_fn == 0, "queries only use common nodes");
    char buf[512];
    ts_accuracy_explain(&t, &i, buf, sizeof buf);
    ok(strstr(buf, "2 truth nodes missing from the inferred tree: {n0005,n0017}") != NULL &&
       strstr(buf, "1 inferred nodes not in the truth: {stranger}") != NULL,
       "explain lists the missing and unknown nodes: %s", buf);
    ts_fabric_free(&i);

    /* a node that is a switch in the inferred tree does not match */
    edges_from(&E1, &t);
    edges_remove(&E1, "n0024");
    edges_add(&E1, "n0024", "s2-3", TS_SWITCH);
    edges_build(&i, &E1);
    a = compare(&t, &i, 100);
    is_int(a.nodes_missing, 1, "a node name used by a switch counts as missing");
    ts_fabric_free(&i);
    ts_fabric_free(&t);
}

static void test_explain_limits(void)
{
    ts_fabric t, i;
    ts_error err = {{0}};
    ts_fabric_init(&t);
    ts_gen_fat_tree(&t, 8, 0, &err);
    E1.n = 0;
    edges_add(&E1, "hub", "", TS_SWITCH);
    for (int k = 0; k < t.nnodes; k++)
        edges_add(&E1, t.v[t.node_vertex[k]].name, "hub", TS_NODE);
    edges_build(&i, &E1);
    ts_accuracy a = compare(&t, &i, 1000);
    is_int(a.splits_missing, 8 + 32, "star vs fat tree p=8: every pod and leaf split missing");
    char buf[4096];
    int len = ts_accuracy_explain(&t, &i, buf, sizeof buf);
    ok(len == (int)strlen(buf), "explain returns the length written");
    ok(strstr(buf, "\n... and 35 more") != NULL, "five items named, then a count: %s", buf);
    ok(strncmp(buf, "missing split {n0001,n0002,n0003,n0004,...(16 nodes)} (truth switch pod01 "
                    "merged into inferred switch hub)", 80) == 0,
       "the highest switches come first, with the size of their node set");
    char small[40];
    len = ts_accuracy_explain(&t, &i, small, sizeof small);
    ok(len <= 39 && strlen(small) == (size_t)len, "explain stays within max bytes (%d)", len);
    ok(strncmp(small, buf, (size_t)len) == 0, "truncated text is a prefix of the full text");
    ok(ts_accuracy_explain(&t, &i, small, 0) == 0, "max 0 writes nothing");
    ts_fabric_free(&t);
    ts_fabric_free(&i);
}

static void test_errors(void)
{
    ts_fabric t, u;
    ts_error err = {{0}};
    ts_accuracy a;
    regular_234(&t);
    ts_fabric_init(&u);
    ts_fabric_add_vertex(&u, "lonely", TS_SWITCH, &err);
    is_int(ts_accuracy_compare(&t, &u, 10, 1, &a, &err), TS_EINPUT, "unfinalized fabric rejected");
    ok(strstr(err.text, "inferred") != NULL, "message says which tree: %s", err.text);
    is_int(ts_accuracy_compare(&t, &t, -1, 1, &a, &err), TS_EINPUT, "negative query count rejected");
    is_int(ts_accuracy_compare(&t, &t, 1, 1, NULL, &err), TS_EINPUT, "no result struct rejected");
    char buf[64];
    ok(ts_accuracy_explain(&t, &u, buf, sizeof buf) == TS_EINPUT && buf[0] == '\0',
       "explain rejects an unfinalized fabric");
    ts_fabric_free(&t);
    ts_fabric_free(&u);
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void test_speed(void)
{
    ts_fabric t, i;
    ts_error err = {{0}};
    ts_fabric_init(&t);
    ts_gen_fat_tree(&t, 32, 3, &err);
    edges_from(&E1, &t);
    edges_merge(&E1, "pod05", "core");
    edges_build(&i, &E1);
    double t0 = now();
    ts_accuracy a = compare(&t, &i, 100000);
    double dt = now() - t0;
    diag("ts_accuracy_compare, 8192-node fat tree, 100000 queries: %.3f s", dt);
    ok(a.splits_missing == 1 && a.splits_extra == 0 && a.shared_link_fn > 0,
       "8192 nodes: the pod merged into the core is found (fn %.5f)", a.shared_link_fn);
    /* generous bound: sanitizer builds run the same test */
    ok(dt < 3.0, "8192 nodes, 100000 queries in %.3f s", dt);
    ts_fabric_free(&t);
    ts_fabric_free(&i);
}

int main(void)
{
    test_identical();
    test_leaf_merged_into_parent();
    test_two_leaves_merged();
    test_switch_split();
    test_invisible_differences();
    test_rooting();
    test_ari_by_hand();
    test_queries_by_hand();
    test_missing_nodes();
    test_explain_limits();
    test_errors();
    test_speed();
    return done_testing();
}
