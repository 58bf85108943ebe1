/* A guessed tree's splits tested on round trips (lib/discover/confirm.c), on the testbed's
 * 16-node fabric (tests/data/agents/fabric16.conf: a spine, two pods, four leaves of four):
 * the true tree stands whole; a guess with a node put across a split loses that split and
 * keeps only true ones (a coarser but true tree), at noise one-sided like a minimum's, weighed
 * by the pure error or by each split's own spread; a dry run changes nothing; without
 * measurements nothing is tested; and the noise itself is read off pairs measured twice. */
#include <math.h>
#include <stdlib.h>
#include "tap.h"
#include "discover/confirm.h"
#include "toposcope/rng.h"

#define NODES 16
#define LINK_RTT 24.0           /* a link's share of a round trip: 12 us each way */
#define SEEDS 200

/* node i (0-based) is node{i+1}: leaf (i % 4), pod (i % 4) / 2 */
enum { TRUE_TREE, LEAF_SPLIT_OFF, NODE_IN_WRONG_LEAF, LEAVES_OF_TWO_PODS, KINDS };

/* The tree: the fabric's, or a guess with node6 (index 5, leaf 2) misplaced: hung from pod1
 * itself, leaf 2 keeping the other three (LEAF_SPLIT_OFF), or in leaf 1 (NODE_IN_WRONG_LEAF);
 * or one with the nodes of leaf 1 (pod 1) and leaf 3 (pod 2) under one switch hung from the
 * spine, each pod keeping its other leaf (LEAVES_OF_TWO_PODS: every node is near a quarter of
 * its side, far from the rest). */
static void build(ts_utree *t, int kind)
{
    ts_utree_init(t);
    int spine = ts_utree_add(t, TS_NONE, 0, TS_NONE), pod[2], leaf[4];
    for (int p = 0; p < 2; p++)
        pod[p] = ts_utree_add(t, spine, LINK_RTT, TS_NONE);
    for (int l = 0; l < 4; l++)
        leaf[l] = ts_utree_add(t, pod[l / 2], LINK_RTT, TS_NONE);
    if (kind == LEAVES_OF_TWO_PODS) {
        int both = ts_utree_add(t, spine, 2 * LINK_RTT, TS_NONE);
        leaf[0] = leaf[2] = both;
    }
    for (int i = 0; i < NODES; i++) {
        int parent = leaf[i % 4];
        if (i == 5 && kind == LEAF_SPLIT_OFF)
            parent = pod[0];
        if (i == 5 && kind == NODE_IN_WRONG_LEAF)
            parent = leaf[0];
        ts_utree_add(t, parent, LINK_RTT, i);
    }
}

/* The true round trip between nodes a and b, links only. */
static double truth_rtt(int a, int b)
{
    int la = a % 4, lb = b % 4;
    int hops = la == lb ? 2 : la / 2 == lb / 2 ? 4 : 6;
    return hops * LINK_RTT;
}

/* Every pair twice (a tournament's second look) in set `set`, each round trip its truth, what
 * is left of its hosts' offsets after a fit (up to +-5 us) and noise of one side
 * (exponential, its standard deviation sigma, as a minimum's sits above the floor), all of it
 * `shift` higher (a minimum of fewer samples). Appends to m[n...]; returns the new count. */
static long measure(ts_confirm_meas *m, long n, ts_rng *r, int set, double sigma, double shift)
{
    double left[NODES];
    for (int i = 0; i < NODES; i++)
        left[i] = ts_rng_range(r, -5, 5);
    for (int a = 0; a < NODES; a++)
        for (int b = a + 1; b < NODES; b++)
            for (int rep = 0; rep < 2; rep++)
                m[n++] = (ts_confirm_meas){a, b, set, shift + truth_rtt(a, b) + left[a] + left[b] +
                                                          ts_rng_exponential(r, sigma)};
    return n;
}

/* Splits of got that the true tree does not have, and those it lacks. */
static void compare(const ts_utree *got, int *extra, int *missing)
{
    ts_utree truth;
    build(&truth, TRUE_TREE);
    ts_split_set g, t;
    *extra = *missing = -1;
    if (ts_split_set_of(got, &g) == TS_OK && ts_split_set_of(&truth, &t) == TS_OK) {
        *extra = (int)ts_split_set_missing(&g, &t);
        *missing = (int)ts_split_set_missing(&t, &g);
        ts_split_set_free(&t);
    }
    ts_split_set_free(&g);
    ts_utree_free(&truth);
}

/* Over SEEDS draws at the testbed's noise (one measurement's sd 6-10 us there at 48 samples
 * per pair; a second set as a stage of fewer samples leaves it: twice the noise, 20 us
 * higher): the true tree's 5 splits stand in every draw; a guess keeps no split that is not
 * in the fabric in any draw, and loses only the switch its misplaced node makes false. The
 * splits stand 5.3 standard errors out (1e-6 over the tree); the weakest true one is ~10 out
 * at sigma 6, so a lost true split would be a 1e-4-per-draw event at most. */
static void test_guesses(void)
{
    static const char *const name[] = {"the true tree", "node6 split off its leaf",
                                       "node6 in the wrong leaf", "leaves of two pods joined"};
    static const int lost_most[] = {0, 1, 2, 4};
    ts_confirm_meas *m = malloc(sizeof *m * 2 * NODES * NODES);
    ts_rng r;
    ts_rng_seed(&r, 2026);
    for (int run = 0; run < 2 * KINDS; run++) {
        /* the second half: no pure error given, each split's own spread instead */
        int kind = run % KINDS, own = run >= KINDS, wrong = 0, lost = 0, changed = 0;
        for (int s = 0; s < SEEDS; s++) {
            ts_utree t;
            build(&t, kind);
            long nm = measure(m, 0, &r, 0, 6.0, 0);
            nm = measure(m, nm, &r, 1, 12.0, 20);
            double sigma[2] = {NAN, NAN};
            for (int set = 0; set < 2 && !own; set++)
                sigma[set] = ts_confirm_noise(m, nm, set, 8);
            int contracted = 0, extra, missing;
            if (ts_confirm_splits(&t, NODES, m, nm, sigma, 2, 1e-6, 1, &contracted) != TS_OK)
                wrong++;
            compare(&t, &extra, &missing);
            wrong += extra != 0;
            lost += missing > lost_most[kind];
            changed += contracted > 0;
            ts_utree_free(&t);
        }
        const char *how = own ? "the splits' own spread" : "the pure error";
        is_int(wrong, 0, "%s, %s: no split that is not in the fabric left, %d draws", name[kind],
               how, SEEDS);
        is_int(lost, 0, "%s, %s: at most %d true splits lost in any draw", name[kind], how,
               lost_most[kind]);
        if (kind == TRUE_TREE)
            is_int(changed, 0, "%s, %s: stands whole in every draw", name[kind], how);
        else
            is_int(changed, SEEDS, "%s, %s: contracted in every draw", name[kind], how);
    }
    free(m);
}

static int same_tree(const ts_utree *a, int kind)
{
    ts_utree b;
    build(&b, kind);
    int same = a->nvert == b.nvert;
    for (int v = 0; same && v < a->nvert; v++)
        same = a->parent[v] == b.parent[v] && a->node[v] == b.node[v] && a->len[v] == b.len[v];
    ts_utree_free(&b);
    return same;
}

static void test_dry_run_and_untested(void)
{
    ts_confirm_meas *m = malloc(sizeof *m * NODES * NODES);
    ts_rng r;
    ts_rng_seed(&r, 7);
    long nm = measure(m, 0, &r, 0, 6.0, 0);
    double sigma[1] = {ts_confirm_noise(m, nm, 0, 8)};
    ts_utree t;
    int fails = -1, rc;
    build(&t, LEAF_SPLIT_OFF);
    rc = ts_confirm_splits(&t, NODES, m, nm, sigma, 1, 1e-6, 0, &fails);
    ok(rc == TS_OK && fails == 1, "dry run: a split fails (%d)", fails);
    ok(same_tree(&t, LEAF_SPLIT_OFF), "dry run: the tree is left as it was");

    /* the spine has two neighbours: pod to pod is one split */
    ts_split_set splits, after;
    rc = ts_split_set_of(&t, &splits);
    ok(rc == TS_OK && splits.n == 5, "the guess has 5 splits (%ld)", splits.n);

    /* no measurement between two of the sets a branch is tested against: not tested */
    rc = ts_confirm_splits(&t, NODES, m, 0, sigma, 1, 1e-6, 1, &fails);
    ok(rc == TS_OK && fails == 0 && same_tree(&t, LEAF_SPLIT_OFF),
       "without measurements nothing is tested (%d contracted)", fails);
    rc = ts_confirm_splits(&t, NODES, m, nm, sigma, 1, 1e-6, 1, &fails);
    ok(rc == TS_OK && fails == 1, "with them the split off the leaf goes (%d contracted)", fails);
    /* what fast.c asks of a contraction: which of the splits it had are gone */
    rc = ts_split_set_of(&t, &after);
    ok(rc == TS_OK && ts_split_set_missing(&splits, &after) == 1 &&
       ts_split_set_missing(&after, &splits) == 0 && ts_split_set_missing(&splits, &splits) == 0,
       "the contracted split is the one missing afterwards, and nothing new appeared (%ld, %ld)",
       ts_split_set_missing(&splits, &after), ts_split_set_missing(&after, &splits));
    ts_split_set_free(&splits);
    ts_split_set_free(&after);
    int extra, missing;
    compare(&t, &extra, &missing);
    ok(extra == 0 && missing == 1, "... and leaf 2 with it: a coarser but true tree (extra %d, "
       "missing %d)", extra, missing);
    ts_utree_free(&t);
    free(m);
}

/* One measurement's noise from pairs measured twice: normal noise of sd 5 on 2000 pairs. */
static void test_noise(void)
{
    enum { PAIRS = 2000 };
    ts_confirm_meas *m = malloc(sizeof *m * 2 * PAIRS);
    ts_rng r;
    ts_rng_seed(&r, 11);
    for (int p = 0; p < PAIRS; p++)
        for (int rep = 0; rep < 2; rep++)
            m[2 * p + rep] = (ts_confirm_meas){p, p + 1, 0, 100 + 5 * ts_rng_normal(&r)};
    double s = ts_confirm_noise(m, 2 * PAIRS, 0, 8);
    ok(fabs(s - 5) < 0.4, "noise from 2000 pairs measured twice: %.2f us (sd 5)", s);
    ok(isnan(ts_confirm_noise(m, 2 * 7, 0, 8)), "7 pairs measured twice, 8 wanted: no noise");
    ok(isnan(ts_confirm_noise(m, 2 * PAIRS, 1, 8)), "none in another set: no noise there");
    /* a pair measured once gives nothing */
    for (int p = 0; p < 20; p++)
        m[p] = (ts_confirm_meas){p, p + 1, 0, 100};
    ok(isnan(ts_confirm_noise(m, 20, 0, 8)), "pairs measured once: no noise");
    free(m);
}

/* ---- where a guess disagrees with a flat tree ---- */

#define FLAT_LEAVES 4
#define FLAT_NODES (4 * FLAT_LEAVES)

/* The switches and nodes of spec under parent: "(0-3)" a switch holding nodes 0 to 3, "5" a
 * node, groups nested and side by side ("((0-1) (2-3)) 4"). Returns where spec stopped. */
static const char *grow(ts_utree *t, int parent, const char *spec)
{
    while (*spec && *spec != ')') {
        if (*spec == '(') {
            spec = grow(t, ts_utree_add(t, parent, 1, TS_NONE), spec + 1);
            spec += *spec == ')';
        } else if (*spec >= '0' && *spec <= '9') {
            char *end;
            long lo = strtol(spec, &end, 10), hi = *end == '-' ? strtol(end + 1, &end, 10) : lo;
            for (long i = lo; i <= hi; i++)
                ts_utree_add(t, parent, 1, (int)i);
            spec = end;
        } else {
            spec++;
        }
    }
    return spec;
}

/* The doubts ts_flat_doubts reads from the guess spec (under a top switch) against the flat
 * tree of four leaves of four nodes (leaf k: vertex 1 + 5k): "whole", or "top" and the
 * leaves in doubt as digits ("top 1": the top and leaf 1), "-" for none. */
static const char *read_doubts(const char *spec, const unsigned char *live, char *out)
{
    ts_utree flat, guess;
    ts_utree_init(&flat);
    ts_utree_init(&guess);
    grow(&flat, ts_utree_add(&flat, TS_NONE, 0, TS_NONE), "(0-3) (4-7) (8-11) (12-15)");
    grow(&guess, ts_utree_add(&guess, TS_NONE, 0, TS_NONE), spec);
    int leaf[FLAT_NODES];
    unsigned char doubt[5 * FLAT_LEAVES + 1];
    ts_flat_doubt d = {-1, -1};
    int rc = ts_flat_doubts(&flat, &guess, live, FLAT_NODES, leaf, doubt, &d);
    char *o = out;
    if (rc != TS_OK)
        o += sprintf(o, "error ");
    if (d.whole)
        o += sprintf(o, "whole ");
    else if (d.top)
        o += sprintf(o, "top ");
    for (int k = 0; k < FLAT_LEAVES && !d.whole; k++)
        if (doubt[1 + 5 * k])
            o += sprintf(o, "%d", k);
    if (o == out)
        sprintf(o, "-");
    else if (o[-1] == ' ')
        o[-1] = '\0';
    ts_utree_free(&flat);
    ts_utree_free(&guess);
    return out;
}

static void test_flat_doubts(void)
{
    unsigned char all[FLAT_NODES], some[FLAT_NODES];
    memset(all, 1, sizeof all);
    memset(some, 1, sizeof some);
    some[3] = some[7] = 0;
    char b[64];
    is_str(read_doubts("(0-3) (4-7) (8-11) (12-15)", all, b), "-", "the same leaves: no doubt");
    is_str(read_doubts("(0-3) ((4-5) (6-7)) (8-11) (12-15)", all, b), "1",
           "a level inside leaf 1: that leaf in doubt, nothing else");
    is_str(read_doubts("((0-3) (4-7)) (8-11) (12-15)", all, b), "top",
           "two leaves grouped: the top's grouping in doubt, no leaf");
    is_str(read_doubts("(0-3) (4-7) 8-11 (12-15)", all, b), "top",
           "a leaf left out, its nodes under the top: the top's grouping in doubt");
    is_str(read_doubts("0-3 ((4-7) (8-11) (12-15))", all, b), "-",
           "the guess rooted inside leaf 0, the same leaves: no doubt");
    is_str(read_doubts("(0-1) (2-5) (6-7) (8-11) (12-15)", all, b), "whole",
           "a group cutting leaves 0 and 1: the whole tree in doubt");
    is_str(read_doubts("(0-1) (2-3) (4-5) (6-7) (8-9) (10-11) 12-15", all, b), "whole",
           "levels inside leaves 0 to 2, leaf 3 left out: no two leaves whole, the whole tree");
    is_str(read_doubts("(0-2) (4-6) (8-11) (12-15) 3 7", some, b), "-",
           "nodes 3 and 7 not live and elsewhere in the guess: no doubt");
    is_str(read_doubts("(0-2) (4-6) (8-11) (12-15) 3 7", all, b), "top 01",
           "the same guess with them live: levels inside leaves 0 and 1, the top's grouping");
    is_str(read_doubts("(0-3) (4-7) (8-11) (12-14)", all, b), "whole",
           "a live node missing from the guess: the whole tree");
}

int main(void)
{
    test_guesses();
    test_dry_run_and_untested();
    test_noise();
    test_flat_doubts();
    return done_testing();
}
