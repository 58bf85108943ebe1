/* Fabric generators: sizes, shapes, the ranges each promises, name shuffling. */
#include <string.h>
#include "tap.h"
#include "toposcope/gen.h"

static int count_switches(const ts_fabric *f)
{
    return f->nvert - f->nnodes;
}

/* Children of switch x that are nodes / switches. */
static void child_kinds(const ts_fabric *f, int x, int *nodes, int *switches)
{
    *nodes = *switches = 0;
    for (int c = f->v[x].first_child; c != TS_NONE; c = f->v[c].next_sibling) {
        if (f->v[c].kind == TS_NODE)
            (*nodes)++;
        else
            (*switches)++;
    }
}

static void test_fat_tree_sizes(void)
{
    static const int ps[] = {4, 8, 16, 32};
    static const int want[] = {16, 128, 1024, 8192};
    for (int k = 0; k < 4; k++) {
        ts_fabric f;
        ts_error err = {{0}};
        ts_fabric_init(&f);
        int p = ps[k];
        is_int(ts_gen_fat_tree(&f, p, 0, &err), TS_OK, "fat tree p=%d builds", p);
        is_int(f.nnodes, want[k], "fat tree p=%d has %d nodes", p, want[k]);
        is_int(count_switches(&f), 1 + p + p * p / 2, "fat tree p=%d switch count", p);
        is_int(ts_fabric_max_depth(&f), 3, "fat tree p=%d depth 3", p);
        int shape_ok = f.v[f.root].nchildren == p && strcmp(f.v[f.root].name, "core") == 0;
        for (int i = 0; i < f.nvert; i++) {
            const ts_vertex *v = &f.v[i];
            if (v->kind == TS_SWITCH && v->depth > 0)
                shape_ok &= v->nchildren == p / 2;
            if (v->kind == TS_NODE)
                shape_ok &= v->depth == 3;
        }
        ok(shape_ok, "fat tree p=%d: core has p pods, every pod and leaf p/2 children", p);
        ts_fabric_free(&f);
    }
}

static void test_fat_tree_names(void)
{
    ts_fabric f;
    ts_error err = {{0}};
    ts_fabric_init(&f);
    ts_gen_fat_tree(&f, 8, 0, &err);
    int leaf = ts_fabric_find(&f, "leaf03-2");
    ok(leaf != TS_NONE && f.v[leaf].parent == ts_fabric_find(&f, "pod03"),
       "switch names are descriptive: leaf03-2 under pod03");
    /* unshuffled: the nodes of leaf01-1 are n0001..n0004 */
    int n1 = ts_fabric_find(&f, "n0001"), n4 = ts_fabric_find(&f, "n0004");
    ok(n1 != TS_NONE && n4 != TS_NONE && f.v[n1].parent == ts_fabric_find(&f, "leaf01-1") &&
       f.v[n4].parent == f.v[n1].parent, "unshuffled nodes fill leaf01-1 first");
    ok(ts_fabric_find(&f, "n0128") != TS_NONE && ts_fabric_find(&f, "n0129") == TS_NONE,
       "names n0001..n0128");
    ts_fabric_free(&f);

    ts_fabric_init(&f);
    is_int(ts_gen_fat_tree(&f, 64, 0, &err), TS_OK, "fat tree p=64 builds");
    is_int(f.nnodes, 65536, "p=64: 65536 nodes");
    int width_ok = 1;
    for (int k = 0; k < f.nnodes; k++)
        width_ok &= strlen(f.v[f.node_vertex[k]].name) == 6;
    ok(width_ok && ts_fabric_find(&f, "n00001") != TS_NONE && ts_fabric_find(&f, "n65536") != TS_NONE,
       "p=64: one zero-padded width for every name (n00001..n65536)");
    ts_fabric_free(&f);
}

static void test_fat_tree_invalid(void)
{
    static const int bad[] = {0, 2, 3, 5, 66, -4};
    for (int k = 0; k < 6; k++) {
        ts_fabric f;
        ts_error err = {{0}};
        ts_fabric_init(&f);
        is_int(ts_gen_fat_tree(&f, bad[k], 0, &err), TS_EINPUT, "p=%d rejected", bad[k]);
        ok(strstr(err.text, "even") != NULL, "message explains p: %s", err.text);
        is_int(f.nvert, 0, "nothing built for p=%d", bad[k]);
        ts_fabric_free(&f);
    }
}

/* The generators initialise the fabric themselves: callers may hand over uninitialised
 * memory (as `toposcope gen` once did), and a failed generation leaves it freeable. */
static void test_output_initialised_here(void)
{
    ts_fabric f;
    ts_error err = {{0}};
    const int fan[] = {2, 3};
    memset(&f, 0xA5, sizeof f);
    is_int(ts_gen_fat_tree(&f, 4, 0, &err), TS_OK, "fat tree builds into garbage memory");
    ok(f.nnodes == 16 && f.nvert == 16 + 1 + 4 + 8, "fat tree from garbage: the right shape");
    ts_fabric_free(&f);
    memset(&f, 0xA5, sizeof f);
    is_int(ts_gen_regular(&f, fan, 2, 3, &err), TS_OK, "regular tree builds into garbage memory");
    is_int(f.nnodes, 6, "regular tree from garbage: 6 nodes");
    ts_fabric_free(&f);
    memset(&f, 0xA5, sizeof f);
    is_int(ts_gen_irregular(&f, 5, &err), TS_OK, "irregular tree builds into garbage memory");
    ok(f.nnodes > 0 && f.root != TS_NONE, "irregular tree from garbage: finalized");
    ts_fabric_free(&f);
    memset(&f, 0xA5, sizeof f);
    is_int(ts_gen_random_identifiable(&f, 20, 3, 5, &err), TS_OK,
           "random identifiable tree builds into garbage memory");
    ok(f.nnodes >= 4 && f.root != TS_NONE, "random identifiable tree from garbage: finalized");
    ts_fabric_free(&f);

    memset(&f, 0xA5, sizeof f);
    is_int(ts_gen_fat_tree(&f, 3, 0, &err), TS_EINPUT, "bad p into garbage memory fails");
    ok(f.nvert == 0 && f.v == NULL && f.root == TS_NONE, "after a failed generation the fabric is empty");
    ts_fabric_free(&f);
    ok(f.nvert == 0, "and ts_fabric_free on it is safe");
    memset(&f, 0xA5, sizeof f);
    is_int(ts_gen_regular(&f, fan, 0, 0, &err), TS_EINPUT, "0 levels into garbage memory fails");
    is_int(f.nvert, 0, "empty after a failed regular tree");
    ts_fabric_free(&f);
    memset(&f, 0xA5, sizeof f);
    is_int(ts_gen_random_identifiable(&f, 3, 4, 1, &err), TS_EINPUT,
           "max_nodes 3 into garbage memory fails");
    is_int(f.nvert, 0, "empty after a failed random identifiable tree");
    ts_fabric_free(&f);
}

/* Vertex-by-vertex name equality: the generators create vertices in a fixed order. */
static int same_names(const ts_fabric *a, const ts_fabric *b)
{
    if (a->nvert != b->nvert)
        return 0;
    for (int i = 0; i < a->nvert; i++)
        if (strcmp(a->v[i].name, b->v[i].name) != 0)
            return 0;
    return 1;
}

static int moved_names(const ts_fabric *a, const ts_fabric *b)
{
    int moved = 0;
    for (int i = 0; i < a->nvert && i < b->nvert; i++)
        moved += strcmp(a->v[i].name, b->v[i].name) != 0;
    return moved;
}

static void test_shuffle(void)
{
    ts_fabric plain, s7, s7b, s8;
    ts_error err = {{0}};
    ts_fabric_init(&plain);
    ts_fabric_init(&s7);
    ts_fabric_init(&s7b);
    ts_fabric_init(&s8);
    ts_gen_fat_tree(&plain, 8, 0, &err);
    ts_gen_fat_tree(&s7, 8, 7, &err);
    ts_gen_fat_tree(&s7b, 8, 7, &err);
    ts_gen_fat_tree(&s8, 8, 8, &err);
    ok(same_names(&s7, &s7b), "same shuffle seed, same names in the same places");
    int moved = moved_names(&plain, &s7);
    ok(moved > 100, "shuffle moves most of the 128 names (%d moved)", moved);
    ok(moved_names(&s7, &s8) > 100, "another seed gives another permutation");
    int all_present = 1;
    for (int k = 1; k <= 128; k++) {
        char name[16];
        snprintf(name, sizeof name, "n%04d", k);
        int v = ts_fabric_find(&s7, name);
        all_present &= v != TS_NONE && s7.v[v].kind == TS_NODE;
    }
    ok(all_present && s7.nnodes == 128, "shuffled names are a permutation of n0001..n0128");
    /* switch names do not move */
    int switches_fixed = 1;
    for (int i = 0; i < plain.nvert; i++)
        if (plain.v[i].kind == TS_SWITCH)
            switches_fixed &= strcmp(plain.v[i].name, s7.v[i].name) == 0;
    ok(switches_fixed, "switch names are not shuffled");
    /* hostname order no longer follows the tree: consecutive names share a leaf less often */
    int same_leaf = 0;
    for (int k = 0; k + 1 < s7.nnodes; k++)
        same_leaf += s7.v[s7.node_vertex[k]].parent == s7.v[s7.node_vertex[k + 1]].parent;
    ok(same_leaf < 40, "shuffled: few consecutive names share a leaf (%d of 127)", same_leaf);
    ts_fabric_free(&plain);
    ts_fabric_free(&s7);
    ts_fabric_free(&s7b);
    ts_fabric_free(&s8);
}

static void test_regular(void)
{
    ts_fabric f;
    ts_error err = {{0}};
    const int fan[] = {2, 3, 4};
    ts_fabric_init(&f);
    is_int(ts_gen_regular(&f, fan, 3, 0, &err), TS_OK, "regular 2x3x4 builds");
    is_int(f.nnodes, 24, "regular 2x3x4: 24 nodes");
    is_int(count_switches(&f), 1 + 2 + 6, "regular 2x3x4: 9 switches");
    is_int(ts_fabric_max_depth(&f), 3, "regular 2x3x4: depth 3");
    int s12 = ts_fabric_find(&f, "s1-2");
    ok(s12 != TS_NONE && f.v[s12].nchildren == 4 && f.v[s12].parent == ts_fabric_find(&f, "s1"),
       "switch s1-2 under s1 with 4 nodes");
    ts_fabric_free(&f);

    const int one[] = {5};
    ts_fabric_init(&f);
    is_int(ts_gen_regular(&f, one, 1, 3, &err), TS_OK, "one level builds");
    ok(f.nnodes == 5 && f.nvert == 6 && ts_fabric_max_depth(&f) == 1, "one level: 5 nodes on the root");
    ts_fabric_free(&f);

    const int zero[] = {2, 0};
    const int huge[] = {1024, 1024, 1024};
    ts_fabric_init(&f);
    is_int(ts_gen_regular(&f, zero, 2, 0, &err), TS_EINPUT, "fan-out 0 rejected");
    ok(strstr(err.text, "level 1") != NULL, "message names the level: %s", err.text);
    is_int(ts_gen_regular(&f, fan, 0, 0, &err), TS_EINPUT, "0 levels rejected");
    is_int(ts_gen_regular(&f, NULL, 2, 0, &err), TS_EINPUT, "no fan-out rejected");
    is_int(ts_gen_regular(&f, huge, 3, 0, &err), TS_EINPUT, "2^30 nodes rejected");
    is_int(f.nvert, 0, "nothing built on errors");
    ts_fabric_free(&f);
}

static void test_irregular(void)
{
    int ranges_ok = 1, only_one_kind = 1, cap_ok = 1, leaf_depth_seen[5] = {0}, deterministic = 1;
    int min_nodes = 1 << 30, max_nodes = 0, varied = 0, prev_nodes = -1;
    for (uint64_t seed = 1; seed <= 300; seed++) {
        ts_fabric f, g;
        ts_error err = {{0}};
        ts_fabric_init(&f);
        ts_fabric_init(&g);
        if (ts_gen_irregular(&f, seed, &err) != TS_OK || ts_gen_irregular(&g, seed, &err) != TS_OK) {
            ok(0, "irregular seed %llu builds: %s", (unsigned long long)seed, err.text);
            ts_fabric_free(&f);
            ts_fabric_free(&g);
            return;
        }
        deterministic &= same_names(&f, &g);
        for (int i = 0; i < f.nvert; i++) {
            const ts_vertex *v = &f.v[i];
            if (v->kind != TS_SWITCH)
                continue;
            int nn, ns;
            child_kinds(&f, i, &nn, &ns);
            if (nn && ns)
                only_one_kind = 0;
            if (nn) {
                ranges_ok &= nn >= 1 && nn <= 24 && v->depth >= 1 && v->depth <= 3;
                leaf_depth_seen[v->depth] = 1;
            } else {
                ranges_ok &= ns >= 2 && ns <= 9;
            }
        }
        cap_ok &= f.nnodes <= 4000;
        if (f.nnodes < min_nodes)
            min_nodes = f.nnodes;
        if (f.nnodes > max_nodes)
            max_nodes = f.nnodes;
        varied += prev_nodes >= 0 && prev_nodes != f.nnodes;
        prev_nodes = f.nnodes;
        ts_fabric_free(&f);
        ts_fabric_free(&g);
    }
    ok(ranges_ok, "irregular: fan-out 2..9, leaves of 1..24 nodes, 2..4 switch levels");
    ok(only_one_kind, "irregular: switches hold either nodes or switches");
    ok(leaf_depth_seen[1] && leaf_depth_seen[2] && leaf_depth_seen[3],
       "irregular: branches of every depth occur");
    ok(cap_ok, "irregular: at most 4000 nodes (sizes %d..%d)", min_nodes, max_nodes);
    ok(deterministic, "irregular: same seed, same tree");
    ok(varied > 250, "irregular: different seeds give different trees (%d of 299 changes)", varied);
}

static void test_random_identifiable(void)
{
    int degree_ok = 1, size_ok = 1, depth_ok = 1, deterministic = 1, built = 1;
    int mixed = 0, deep = 0;
    for (uint64_t seed = 1; seed <= 1000; seed++) {
        int max_nodes = 4 + (int)(seed * 37 % 300);
        int max_depth = 1 + (int)(seed % 8);
        ts_fabric f, g;
        ts_error err = {{0}};
        ts_fabric_init(&f);
        ts_fabric_init(&g);
        if (ts_gen_random_identifiable(&f, max_nodes, max_depth, seed, &err) != TS_OK ||
            ts_gen_random_identifiable(&g, max_nodes, max_depth, seed, &err) != TS_OK) {
            built = 0;
            diag("seed %llu: %s", (unsigned long long)seed, err.text);
            ts_fabric_free(&f);
            ts_fabric_free(&g);
            continue;
        }
        deterministic &= same_names(&f, &g);
        size_ok &= f.nnodes >= 4 && f.nnodes <= max_nodes;
        depth_ok &= ts_fabric_max_depth(&f) <= max_depth;
        deep += ts_fabric_max_depth(&f) >= 4;
        for (int i = 0; i < f.nvert; i++) {
            if (f.v[i].kind != TS_SWITCH)
                continue;
            int nn, ns;
            child_kinds(&f, i, &nn, &ns);
            degree_ok &= f.v[i].nchildren >= (i == f.root ? 3 : 2);
            mixed += nn > 0 && ns > 0;
        }
        ts_fabric_free(&f);
        ts_fabric_free(&g);
    }
    ok(built, "random identifiable: 1000 seeds build");
    ok(degree_ok, "random identifiable: every switch >= 2 children, root >= 3");
    ok(size_ok, "random identifiable: 4..max_nodes nodes");
    ok(depth_ok, "random identifiable: depth within max_depth");
    ok(deterministic, "random identifiable: same seed, same tree");
    ok(mixed > 1000, "random identifiable: switches mix node and switch children (%d)", mixed);
    ok(deep > 100, "random identifiable: deep trees occur (%d of 1000 with depth >= 4)", deep);

    ts_fabric f;
    ts_error err = {{0}};
    ts_fabric_init(&f);
    is_int(ts_gen_random_identifiable(&f, 3, 4, 1, &err), TS_EINPUT, "max_nodes 3 rejected");
    is_int(ts_gen_random_identifiable(&f, 100, 0, 1, &err), TS_EINPUT, "max_depth 0 rejected");
    is_int(ts_gen_random_identifiable(&f, 4, 1, 9, &err), TS_OK, "smallest tree builds");
    ok(f.nnodes == 4 && f.nvert == 5, "4 nodes on the root when max_depth is 1");
    ts_fabric_free(&f);
}

int main(void)
{
    test_fat_tree_sizes();
    test_fat_tree_names();
    test_fat_tree_invalid();
    test_output_initialised_here();
    test_shuffle();
    test_regular();
    test_irregular();
    test_random_identifiable();
    return done_testing();
}
