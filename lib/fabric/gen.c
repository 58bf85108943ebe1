/* toposcope — fabric generators for tests and benchmarks.
 *
 * Every generator first lays out a shape (switches with their parents, node slots with their
 * switch) and only then builds the fabric, because node names depend on the total node count
 * (one zero-padded width for all) and, when shuffled, on a permutation of all of them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "toposcope/gen.h"
#include "toposcope/rng.h"

#define SW_NAME_MAX 48
/* Far above any benchmark, low enough that vertex counts and name widths stay small. */
#define GEN_MAX_NODES (1 << 20)
#define IRREGULAR_MAX_NODES 4000

/* Separate rng streams so that the layout of a tree and the naming of its nodes never share draws. */
enum { STREAM_SHAPE = 1, STREAM_NAMES = 2 };

typedef struct shape {
    int nsw, swcap;
    int *sw_parent;                /* switch slot of the parent, TS_NONE for the root */
    int *sw_tag;                   /* generator's own per-switch value */
    char (*sw_name)[SW_NAME_MAX];
    int nnode, nodecap;
    int *node_parent;              /* switch slot each node hangs from */
} shape;

static void shape_free(shape *s)
{
    free(s->sw_parent);
    free(s->sw_tag);
    free(s->sw_name);
    free(s->node_parent);
    memset(s, 0, sizeof *s);
}

static int shape_add_switch(shape *s, int parent, const char *name, int tag, ts_error *err)
{
    if (s->nsw == s->swcap) {
        int cap = s->swcap ? s->swcap * 2 : 64;
        int *p = realloc(s->sw_parent, sizeof *p * (size_t)cap);
        if (!p)
            return ts_fail(err, TS_ENOMEM, "out of memory");
        s->sw_parent = p;
        p = realloc(s->sw_tag, sizeof *p * (size_t)cap);
        if (!p)
            return ts_fail(err, TS_ENOMEM, "out of memory");
        s->sw_tag = p;
        char (*n)[SW_NAME_MAX] = realloc(s->sw_name, sizeof *n * (size_t)cap);
        if (!n)
            return ts_fail(err, TS_ENOMEM, "out of memory");
        s->sw_name = n;
        s->swcap = cap;
    }
    s->sw_parent[s->nsw] = parent;
    s->sw_tag[s->nsw] = tag;
    snprintf(s->sw_name[s->nsw], SW_NAME_MAX, "%s", name);
    return s->nsw++;
}

static int shape_add_nodes(shape *s, int parent, int count, ts_error *err)
{
    if (count > GEN_MAX_NODES - s->nnode)
        return ts_fail(err, TS_ELIMIT, "more than %d nodes", GEN_MAX_NODES);
    if (s->nnode + count > s->nodecap) {
        int cap = s->nodecap ? s->nodecap : 256;
        while (cap < s->nnode + count)
            cap *= 2;
        int *p = realloc(s->node_parent, sizeof *p * (size_t)cap);
        if (!p)
            return ts_fail(err, TS_ENOMEM, "out of memory");
        s->node_parent = p;
        s->nodecap = cap;
    }
    for (int i = 0; i < count; i++)
        s->node_parent[s->nnode++] = parent;
    return TS_OK;
}

/* Every generator starts here, before any check that can fail: the caller may hand over
 * uninitialised memory, and whatever happens f is then safe to ts_fabric_free. */
static int start_fabric(ts_fabric *f, ts_error *err)
{
    if (!f)
        return ts_fail(err, TS_EINPUT, "no fabric given");
    ts_fabric_init(f);
    return TS_OK;
}

/* Build f from the shape. Slot k gets name k+1 unless names are shuffled, so an unshuffled
 * tree lists the nodes of one leaf switch consecutively. */
static int shape_emit(const shape *s, ts_fabric *f, int shuffle, uint64_t shuffle_seed,
                      ts_error *err)
{
    int n = s->nnode, width = 4, rc = TS_OK;
    for (int t = 10000; t <= n && width < 10; t *= 10)
        width++;
    int *perm = malloc(sizeof *perm * (size_t)(n > 0 ? n : 1));
    int *sw_vertex = malloc(sizeof *sw_vertex * (size_t)(s->nsw > 0 ? s->nsw : 1));
    if (!perm || !sw_vertex) {
        rc = ts_fail(err, TS_ENOMEM, "out of memory");
        goto out;
    }
    for (int i = 0; i < n; i++)
        perm[i] = i;
    if (shuffle) {
        ts_rng r;
        ts_rng_seed_stream(&r, shuffle_seed, STREAM_NAMES);
        ts_rng_shuffle_int(&r, perm, n);
    }
    for (int i = 0; i < s->nsw && rc >= 0; i++) {
        rc = ts_fabric_add_vertex(f, s->sw_name[i], TS_SWITCH, err);
        sw_vertex[i] = rc;
        if (rc >= 0 && s->sw_parent[i] != TS_NONE)
            rc = ts_fabric_attach(f, sw_vertex[s->sw_parent[i]], rc, err);
    }
    for (int i = 0; i < n && rc >= 0; i++) {
        char name[32];
        snprintf(name, sizeof name, "n%0*d", width, perm[i] + 1);
        rc = ts_fabric_add_vertex(f, name, TS_NODE, err);
        if (rc >= 0)
            rc = ts_fabric_attach(f, sw_vertex[s->node_parent[i]], rc, err);
    }
    if (rc >= 0)
        rc = ts_fabric_finalize(f, err);
out:
    free(perm);
    free(sw_vertex);
    if (rc < 0) {
        ts_fabric_free(f);
        return rc;
    }
    return TS_OK;
}

int ts_gen_fat_tree(ts_fabric *f, int p, uint64_t shuffle_seed, ts_error *err)
{
    int rc = start_fabric(f, err);
    if (rc != TS_OK)
        return rc;
    if (p < 4 || p > 64 || p % 2 != 0)
        return ts_fail(err, TS_EINPUT, "fat tree: p must be even and within 4..64 (got %d)", p);
    shape s = {0};
    char name[SW_NAME_MAX];
    int core = rc = shape_add_switch(&s, TS_NONE, "core", 0, err);
    for (int pod = 1; pod <= p && rc >= 0; pod++) {
        snprintf(name, sizeof name, "pod%02d", pod);
        int ps = rc = shape_add_switch(&s, core, name, 0, err);
        for (int leaf = 1; leaf <= p / 2 && rc >= 0; leaf++) {
            snprintf(name, sizeof name, "leaf%02d-%d", pod, leaf);
            rc = shape_add_switch(&s, ps, name, 0, err);
            if (rc >= 0)
                rc = shape_add_nodes(&s, rc, p / 2, err);
        }
    }
    if (rc >= 0)
        rc = shape_emit(&s, f, shuffle_seed != 0, shuffle_seed, err);
    shape_free(&s);
    return rc < 0 ? rc : TS_OK;
}

int ts_gen_regular(ts_fabric *f, const int *fanout, int levels, uint64_t shuffle_seed,
                   ts_error *err)
{
    int rc = start_fabric(f, err);
    if (rc != TS_OK)
        return rc;
    if (!fanout || levels < 1)
        return ts_fail(err, TS_EINPUT, "regular tree: need at least one fan-out level");
    if (levels > 32)
        return ts_fail(err, TS_EINPUT, "regular tree: %d levels, at most 32", levels);
    long long total = 1;
    for (int i = 0; i < levels; i++) {
        if (fanout[i] < 1)
            return ts_fail(err, TS_EINPUT, "regular tree: fan-out %d at level %d, must be >= 1",
                           fanout[i], i);
        total *= fanout[i];
        if (total > GEN_MAX_NODES)
            return ts_fail(err, TS_EINPUT, "regular tree: more than %d nodes", GEN_MAX_NODES);
    }
    shape s = {0};
    rc = shape_add_switch(&s, TS_NONE, "root", 0, err);
    /* Breadth-first over switch slots: slots of one level are contiguous, so each level is
     * the range [begin, end) of the previous one's children. */
    int begin = 0, end = s.nsw;
    for (int lv = 0; lv < levels - 1 && rc >= 0; lv++) {
        for (int x = begin; x < end && rc >= 0; x++)
            for (int c = 1; c <= fanout[lv] && rc >= 0; c++) {
                char name[SW_NAME_MAX];
                if (x == 0)
                    snprintf(name, sizeof name, "s%d", c);
                else
                    snprintf(name, sizeof name, "%s-%d", s.sw_name[x], c);
                rc = shape_add_switch(&s, x, name, 0, err);
            }
        begin = end;
        end = s.nsw;
    }
    for (int x = begin; x < end && rc >= 0; x++)
        rc = shape_add_nodes(&s, x, fanout[levels - 1], err);
    if (rc >= 0)
        rc = shape_emit(&s, f, shuffle_seed != 0, shuffle_seed, err);
    shape_free(&s);
    return rc < 0 ? rc : TS_OK;
}

static int draw_int(ts_rng *r, int lo, int hi)
{
    return lo + (int)ts_rng_below(r, (uint64_t)(hi - lo + 1));
}

int ts_gen_irregular(ts_fabric *f, uint64_t seed, ts_error *err)
{
    int rc = start_fabric(f, err);
    if (rc != TS_OK)
        return rc;
    ts_rng r;
    ts_rng_seed_stream(&r, seed, STREAM_SHAPE);
    shape s = {0};
    /* A switch's tag is the number of switch levels still below it (0 = leaf switch). A
     * subtree with t levels needs at least 2^t nodes (fan-out 2, one node per leaf);
     * reserving that for every switch still to be expanded lets the node cap shrink fan-outs
     * without ever leaving the 2..9 and 1..24 ranges. */
    long used = 0, reserved = 0;
    rc = shape_add_switch(&s, TS_NONE, "core", 0, err);
    /* Each branch under the core picks its own depth: 2..4 switch levels in all. */
    int nbranch = draw_int(&r, 2, 9);
    for (int c = 1; c <= nbranch && rc >= 0; c++) {
        char name[SW_NAME_MAX];
        int below = draw_int(&r, 0, 2);
        snprintf(name, sizeof name, "%s%d", below == 0 ? "leaf" : "sw", c);
        rc = shape_add_switch(&s, 0, name, below, err);
        reserved += 1L << below;
    }
    /* Slots are appended in breadth-first order, so walking them expands every switch once. */
    for (int x = 1; x < s.nsw && rc >= 0; x++) {
        int below = s.sw_tag[x];
        reserved -= 1L << below;
        long room = IRREGULAR_MAX_NODES - used - reserved;
        if (below == 0) {
            int n = draw_int(&r, 1, 24);
            if (n > room)
                n = (int)room;
            rc = shape_add_nodes(&s, x, n, err);
            used += n;
            continue;
        }
        long need = 1L << (below - 1);
        int k = draw_int(&r, 2, 9);
        if (k * need > room)
            k = (int)(room / need);
        /* "sw3-1" under "sw3", "leaf3-1-2" under "sw3-1": the path stays readable. Copied,
         * because adding switches may move the name array. */
        char path[SW_NAME_MAX];
        snprintf(path, sizeof path, "%s", s.sw_name[x] + 2);
        for (int c = 1; c <= k && rc >= 0; c++) {
            char name[2 * SW_NAME_MAX];   /* depth <= 4 keeps it far shorter than SW_NAME_MAX */
            snprintf(name, sizeof name, "%s%s-%d", below == 1 ? "leaf" : "sw", path, c);
            rc = shape_add_switch(&s, x, name, below - 1, err);
            reserved += need;
        }
    }
    if (rc >= 0)
        rc = shape_emit(&s, f, seed != 0, seed, err);
    shape_free(&s);
    return rc < 0 ? rc : TS_OK;
}

/* A pending switch of ts_gen_random_identifiable: its slot, how many nodes its subtree gets,
 * and its depth. */
typedef struct budget_item {
    int slot, nodes, depth;
} budget_item;

/* Split total into k >= 1 positive parts uniformly among compositions: k-1 distinct cut
 * points in 1..total-1 (k <= total, k small). */
static void random_composition(ts_rng *r, int total, int k, int *parts)
{
    int cuts[16];
    int ncut = 0;
    while (ncut < k - 1) {
        int c = draw_int(r, 1, total - 1), dup = 0;
        for (int i = 0; i < ncut && !dup; i++)
            dup = cuts[i] == c;
        if (!dup)
            cuts[ncut++] = c;
    }
    for (int i = 1; i < ncut; i++)          /* insertion sort: at most 15 entries */
        for (int j = i; j > 0 && cuts[j - 1] > cuts[j]; j--) {
            int t = cuts[j];
            cuts[j] = cuts[j - 1];
            cuts[j - 1] = t;
        }
    int prev = 0;
    for (int i = 0; i < ncut; i++) {
        parts[i] = cuts[i] - prev;
        prev = cuts[i];
    }
    parts[ncut] = total - prev;
}

int ts_gen_random_identifiable(ts_fabric *f, int max_nodes, int max_depth, uint64_t seed,
                               ts_error *err)
{
    int rc = start_fabric(f, err);
    if (rc != TS_OK)
        return rc;
    if (max_nodes < 4 || max_nodes > GEN_MAX_NODES)
        return ts_fail(err, TS_EINPUT, "random tree: max_nodes must be within 4..%d (got %d)",
                       GEN_MAX_NODES, max_nodes);
    if (max_depth < 1)
        return ts_fail(err, TS_EINPUT, "random tree: max_depth must be >= 1 (got %d)", max_depth);
    ts_rng r;
    ts_rng_seed_stream(&r, seed, STREAM_SHAPE);
    int total = draw_int(&r, 4, max_nodes);
    shape s = {0};
    /* Every switch gets at least two nodes' worth of budget, so there are fewer switches
     * than nodes and the work list never holds more than total entries. */
    budget_item *pending = malloc(sizeof *pending * (size_t)total);
    if (!pending)
        return ts_fail(err, TS_ENOMEM, "out of memory");
    int npending = 0;
    rc = shape_add_switch(&s, TS_NONE, "root", 0, err);
    if (rc >= 0)
        pending[npending++] = (budget_item){rc, total, 0};
    while (npending > 0 && rc >= 0) {
        budget_item it = pending[--npending];
        int min_k = it.slot == 0 ? 3 : 2;
        if (it.depth + 1 >= max_depth) {
            /* children would be at the depth limit: only nodes fit */
            rc = shape_add_nodes(&s, it.slot, it.nodes, err);
            continue;
        }
        int max_k = it.nodes < 8 ? it.nodes : 8;
        int k = draw_int(&r, min_k, max_k);
        int parts[8];
        random_composition(&r, it.nodes, k, parts);
        for (int i = 0; i < k && rc >= 0; i++) {
            if (parts[i] == 1) {
                rc = shape_add_nodes(&s, it.slot, 1, err);
                continue;
            }
            char name[SW_NAME_MAX];
            snprintf(name, sizeof name, "s%d", s.nsw);
            rc = shape_add_switch(&s, it.slot, name, 0, err);
            if (rc >= 0)
                pending[npending++] = (budget_item){rc, parts[i], it.depth + 1};
        }
    }
    free(pending);
    if (rc >= 0)
        rc = shape_emit(&s, f, seed != 0, seed, err);
    shape_free(&s);
    return rc < 0 ? rc : TS_OK;
}
