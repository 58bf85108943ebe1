/* One tree refined by another's splits (ts_utree_refine): the splits fast resolved stand, and
 * a guess adds only what fits them. A spine over two pods of 8 nodes: in tree a (fast's) pod 1
 * is one unresolved switch over its 8 nodes and pod 2 has its two leaves; in tree b (a guess)
 * pod 1 has its two leaves and pod 2 none, or two that cut across a's. */
#include <stdlib.h>
#include <string.h>
#include "tap.h"
#include "toposcope/utree.h"

#define NODES 16

/* Tree a: pod 1 a star over nodes 0-7, pod 2 leaves {8-11} {12-15}. */
static void fast_tree(ts_utree *t)
{
    ts_utree_init(t);
    int spine = ts_utree_add(t, TS_NONE, 0, TS_NONE);
    int pod1 = ts_utree_add(t, spine, 4, TS_NONE), pod2 = ts_utree_add(t, spine, 4, TS_NONE);
    int leaf3 = ts_utree_add(t, pod2, 2, TS_NONE), leaf4 = ts_utree_add(t, pod2, 2, TS_NONE);
    for (int i = 0; i < NODES; i++)
        ts_utree_add(t, i < 8 ? pod1 : i < 12 ? leaf3 : leaf4, 10, i);
}

/* Tree b: pod 1 leaves {0-3} {4-7}; pod 2 flat, or with `across` leaves {8,9,12,13} and
 * {10,11,14,15}, which cut across a's and must not enter it. */
static void guess_tree(ts_utree *t, int across)
{
    ts_utree_init(t);
    int spine = ts_utree_add(t, TS_NONE, 0, TS_NONE);
    int pod1 = ts_utree_add(t, spine, 4, TS_NONE), pod2 = ts_utree_add(t, spine, 4, TS_NONE);
    int leaf1 = ts_utree_add(t, pod1, 2, TS_NONE), leaf2 = ts_utree_add(t, pod1, 2, TS_NONE);
    int cut1 = across ? ts_utree_add(t, pod2, 2, TS_NONE) : pod2;
    int cut2 = across ? ts_utree_add(t, pod2, 2, TS_NONE) : pod2;
    for (int i = 0; i < NODES; i++)
        ts_utree_add(t, i < 4 ? leaf1 : i < 8 ? leaf2 : (i & 2) ? cut2 : cut1, 10, i);
}

static char *names[NODES];

/* The switch node i hangs from, by name, in the fabric t converts to. */
static int parent_of(const ts_fabric *f, int i)
{
    return f->v[ts_fabric_find(f, names[i])].parent;
}

static void test_refine(int across)
{
    ts_utree a, b;
    fast_tree(&a);
    guess_tree(&b, across);
    int added = -1;
    ok(ts_utree_refine(&a, &b, NODES, &added) == TS_OK, "%s: refined", across ? "with leaves across" : "plain");
    is_int(added, 2, "pod 1's two leaves added, nothing else");
    ts_fabric f;
    ts_error err = {{0}};
    ok(ts_utree_to_fabric(&a, names, NODES, &f, &err) == TS_OK, "converts %s", err.text);
    int leaf1 = parent_of(&f, 0), leaf2 = parent_of(&f, 4), leaf3 = parent_of(&f, 8), leaf4 = parent_of(&f, 12);
    int same = 1;
    for (int i = 0; i < NODES; i++)
        same &= parent_of(&f, i) == (i < 4 ? leaf1 : i < 8 ? leaf2 : i < 12 ? leaf3 : leaf4);
    ok(same && leaf1 != leaf2 && leaf3 != leaf4 && leaf1 != leaf3,
       "four leaves of four: the guess's in pod 1, fast's in pod 2");
    ok(f.v[leaf1].parent == f.v[leaf2].parent && f.v[leaf3].parent == f.v[leaf4].parent &&
       f.v[leaf1].parent != f.v[leaf3].parent, "two pods of two leaves");
    is_int(f.nvert - f.nnodes, 6, "6 switches: 2 pods, 4 leaves (a spine over two is no switch a round "
                                  "trip tells apart)");
    ts_fabric_free(&f);
    ts_utree_free(&a);
    ts_utree_free(&b);
}

static void test_other_nodes(void)
{
    ts_utree a, b;
    fast_tree(&a);
    ts_utree_init(&b);
    int s = ts_utree_add(&b, TS_NONE, 0, TS_NONE), g = ts_utree_add(&b, s, 1, TS_NONE);
    for (int i = 0; i < NODES - 1; i++)
        ts_utree_add(&b, i < 4 ? g : s, 10, i);
    int nvert = a.nvert, added = -1;
    int root = -1;
    for (int v = 0; v < a.nvert; v++)
        if (a.parent[v] == TS_NONE)
            root = v;
    ok(ts_utree_refine(&a, &b, NODES, &added) == TS_EINPUT && added == 0 && a.nvert == nvert &&
       a.parent[root] == TS_NONE, "a guess without node 15: refused, a as it was");
    ts_utree_free(&a);
    ts_utree_free(&b);
}

int main(void)
{
    char buf[NODES][16];       /* room for any int: -O1 checks the format against it */
    for (int i = 0; i < NODES; i++) {
        snprintf(buf[i], sizeof buf[i], "n%02d", i);
        names[i] = buf[i];
    }
    test_refine(0);
    test_refine(1);
    test_other_nodes();
    return done_testing();
}
