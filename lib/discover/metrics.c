/* toposcope — accuracy of an inferred tree against the truth.
 *
 * Split comparison without building the reduced trees: restricted to the common nodes, every
 * edge (v, parent v) of a tree separates the common nodes below v from the others. Pruning
 * switches with no common node below removes edges with an empty side; contracting degree-2
 * switches merges edges that separate the same sets (a root with two children included), and
 * in a tree without degree-2 vertices distinct edges give distinct bipartitions. So the split
 * set of the reduced tree is exactly the set of distinct bipartitions with at least two nodes
 * on each side, which a single bottom-up pass yields, in O(N) for any rooting.
 *
 * A side is identified by the XOR of random 128-bit keys of its members: O(1) per edge
 * after summing children, and a collision between two different sets has probability 2^-128. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "toposcope/metrics.h"
#include "toposcope/rng.h"

/* Fixed, so that compare and explain (and any two runs) see the same keys. */
#define SPLIT_KEY_SEED 0x746f706f73636f70ULL
#define EXPLAIN_MAX_ITEMS 5
#define EXPLAIN_MAX_NAMES 4

typedef struct key128 {
    uint64_t a, b;
} key128;

typedef struct split {
    key128 key;      /* of the side without common node 0 */
    int size;        /* members on that side */
    int vertex;      /* lower end of the edge; the deepest one of a contracted chain */
    int depth;
} split;

typedef struct split_set {
    split *s;
    int n;
} split_set;

/* The nodes both trees have, numbered 0..m-1 in the truth's node order. */
typedef struct common_nodes {
    int m;
    int *tv, *iv;          /* common index -> vertex in truth / inferred */
    int *tc, *ic;          /* vertex -> common index or TS_NONE, per tree */
    key128 *key;           /* per common index */
    int truth_only, inferred_only;
} common_nodes;

static void common_free(common_nodes *c)
{
    free(c->tv);
    free(c->iv);
    free(c->tc);
    free(c->ic);
    free(c->key);
    memset(c, 0, sizeof *c);
}

static int common_build(const ts_fabric *t, const ts_fabric *inf, common_nodes *c, ts_error *err)
{
    memset(c, 0, sizeof *c);
    size_t nt = (size_t)t->nnodes;
    c->tv = malloc(sizeof(int) * (nt ? nt : 1));
    c->iv = malloc(sizeof(int) * (nt ? nt : 1));
    c->key = malloc(sizeof(key128) * (nt ? nt : 1));
    c->tc = malloc(sizeof(int) * (size_t)t->nvert);
    c->ic = malloc(sizeof(int) * (size_t)inf->nvert);
    if (!c->tv || !c->iv || !c->key || !c->tc || !c->ic) {
        common_free(c);
        return ts_fail(err, TS_ENOMEM, "out of memory");
    }
    for (int i = 0; i < t->nvert; i++)
        c->tc[i] = TS_NONE;
    for (int i = 0; i < inf->nvert; i++)
        c->ic[i] = TS_NONE;
    for (int k = 0; k < t->nnodes; k++) {
        int tvx = t->node_vertex[k];
        int ivx = ts_fabric_find(inf, t->v[tvx].name);
        if (ivx == TS_NONE || inf->v[ivx].kind != TS_NODE) {
            c->truth_only++;
            continue;
        }
        c->tv[c->m] = tvx;
        c->iv[c->m] = ivx;
        c->tc[tvx] = c->m;
        c->ic[ivx] = c->m;
        c->m++;
    }
    c->inferred_only = inf->nnodes - c->m;
    ts_rng r;
    ts_rng_seed(&r, SPLIT_KEY_SEED);
    for (int i = 0; i < c->m; i++) {
        c->key[i].a = ts_rng_u64(&r);
        c->key[i].b = ts_rng_u64(&r);
    }
    return TS_OK;
}

static int cmp_split(const void *pa, const void *pb)
{
    const split *x = pa, *y = pb;
    if (x->key.a != y->key.a)
        return x->key.a < y->key.a ? -1 : 1;
    if (x->key.b != y->key.b)
        return x->key.b < y->key.b ? -1 : 1;
    if (x->depth != y->depth)
        return x->depth > y->depth ? -1 : 1;   /* deepest first: it names the switch best */
    return (x->vertex > y->vertex) - (x->vertex < y->vertex);
}

/* Breadth-first order of the vertices from the root; children come after their parent. */
static int *bfs_order(const ts_fabric *f)
{
    int *order = malloc(sizeof(int) * (size_t)f->nvert);
    if (!order)
        return NULL;
    int head = 0, tail = 0;
    order[tail++] = f->root;
    while (head < tail) {
        int x = order[head++];
        for (int ch = f->v[x].first_child; ch != TS_NONE; ch = f->v[ch].next_sibling)
            order[tail++] = ch;
    }
    return order;
}

/* The sorted, duplicate-free split set of f restricted to the common nodes. vc maps a vertex
 * of f to its common index. */
static int split_set_build(const ts_fabric *f, const int *vc, const common_nodes *c,
                           split_set *out, ts_error *err)
{
    out->s = NULL;
    out->n = 0;
    int n = f->nvert, m = c->m, rc = TS_OK;
    int *order = bfs_order(f);
    int *cnt = calloc((size_t)n, sizeof(int));
    unsigned char *has0 = calloc((size_t)n, 1);
    key128 *k = calloc((size_t)n, sizeof(key128));
    out->s = malloc(sizeof(split) * (size_t)n);
    if (!order || !cnt || !has0 || !k || !out->s) {
        rc = ts_fail(err, TS_ENOMEM, "out of memory");
        goto done;
    }
    for (int i = n - 1; i >= 0; i--) {
        int v = order[i];
        if (vc[v] != TS_NONE) {
            cnt[v] = 1;
            k[v] = c->key[vc[v]];
            has0[v] = vc[v] == 0;
        }
        int p = f->v[v].parent;
        if (p == TS_NONE)
            continue;
        cnt[p] += cnt[v];
        k[p].a ^= k[v].a;
        k[p].b ^= k[v].b;
        has0[p] |= has0[v];
        if (cnt[v] < 2 || cnt[v] > m - 2)
            continue;
        split *s = &out->s[out->n++];
        s->vertex = v;
        s->depth = f->v[v].depth;
        s->key = k[v];
        s->size = cnt[v];
        if (has0[v]) {
            /* children precede parents here, so the root's sum is not ready: fix up below */
            s->size = -cnt[v];
        }
    }
    key128 total = k[f->root];
    for (int i = 0; i < out->n; i++) {
        split *s = &out->s[i];
        if (s->size < 0) {
            s->size = m + s->size;
            s->key.a ^= total.a;
            s->key.b ^= total.b;
        }
    }
    qsort(out->s, (size_t)out->n, sizeof(split), cmp_split);
    int w = 0;
    for (int i = 0; i < out->n; i++)
        if (w == 0 || out->s[w - 1].key.a != out->s[i].key.a || out->s[w - 1].key.b != out->s[i].key.b)
            out->s[w++] = out->s[i];
    out->n = w;
done:
    free(order);
    free(cnt);
    free(has0);
    free(k);
    if (rc != TS_OK) {
        free(out->s);
        out->s = NULL;
        out->n = 0;
    }
    return rc;
}

static int key_cmp(key128 x, key128 y)
{
    if (x.a != y.a)
        return x.a < y.a ? -1 : 1;
    if (x.b != y.b)
        return x.b < y.b ? -1 : 1;
    return 0;
}

/* Marks, in `in_truth` and `in_inferred`, which splits of each set the other set has. */
static void split_match(const split_set *t, const split_set *inf, unsigned char *in_inferred,
                        unsigned char *in_truth)
{
    int i = 0, j = 0;
    while (i < t->n && j < inf->n) {
        int c = key_cmp(t->s[i].key, inf->s[j].key);
        if (c == 0) {
            in_inferred[i++] = 1;
            in_truth[j++] = 1;
        } else if (c < 0) {
            i++;
        } else {
            j++;
        }
    }
}

typedef struct group_pair {
    int t, i;   /* parent switch in truth, in inferred */
} group_pair;

static int cmp_group_pair(const void *pa, const void *pb)
{
    const group_pair *x = pa, *y = pb;
    if (x->t != y->t)
        return x->t < y->t ? -1 : 1;
    return (x->i > y->i) - (x->i < y->i);
}

static double pairs_of(double n)
{
    return n * (n - 1) / 2;
}

/* Adjusted Rand index (Hubert & Arabie 1985) of the partitions of the common nodes by parent
 * switch, and whether they are identical. */
static int leaf_groups(const ts_fabric *t, const ts_fabric *inf, const common_nodes *c,
                       double *ari, int *exact, ts_error *err)
{
    int m = c->m;
    group_pair *gp = malloc(sizeof *gp * (size_t)(m ? m : 1));
    int *tcount = calloc((size_t)t->nvert, sizeof(int));
    int *icount = calloc((size_t)inf->nvert, sizeof(int));
    if (!gp || !tcount || !icount) {
        free(gp);
        free(tcount);
        free(icount);
        return ts_fail(err, TS_ENOMEM, "out of memory");
    }
    for (int k = 0; k < m; k++) {
        gp[k].t = t->v[c->tv[k]].parent;
        gp[k].i = inf->v[c->iv[k]].parent;
        tcount[gp[k].t]++;
        icount[gp[k].i]++;
    }
    qsort(gp, (size_t)m, sizeof *gp, cmp_group_pair);
    double sum_ij = 0, sum_a = 0, sum_b = 0;
    int ncells = 0, nt = 0, ni = 0;
    for (int k = 0; k < m;) {
        int e = k;
        while (e < m && gp[e].t == gp[k].t && gp[e].i == gp[k].i)
            e++;
        sum_ij += pairs_of(e - k);
        ncells++;
        k = e;
    }
    for (int v = 0; v < t->nvert; v++)
        if (tcount[v]) {
            sum_a += pairs_of(tcount[v]);
            nt++;
        }
    for (int v = 0; v < inf->nvert; v++)
        if (icount[v]) {
            sum_b += pairs_of(icount[v]);
            ni++;
        }
    free(gp);
    free(tcount);
    free(icount);
    /* Identical iff every truth group meets exactly one inferred group and vice versa. */
    *exact = ncells == nt && ncells == ni;
    double total = pairs_of(m);
    double expected = total > 0 ? sum_a * sum_b / total : 0;
    double denom = 0.5 * (sum_a + sum_b) - expected;
    /* The denominator vanishes only when both partitions are all singletons or both one
     * block, i.e. equal and trivial. */
    *ari = denom == 0 ? 1.0 : (sum_ij - expected) / denom;
    return TS_OK;
}

/* Shirai et al. (HPDC'07, 5.1): paths A-B and C-D share a link iff the four-point sums
 * d(A,C)+d(B,D) and d(A,D)+d(B,C) differ (their difference is twice the overlap). */
static int shares_link(const ts_fabric *f, int a, int b, int cc, int d)
{
    int s2 = ts_fabric_hops(f, a, cc) + ts_fabric_hops(f, b, d);
    int s3 = ts_fabric_hops(f, a, d) + ts_fabric_hops(f, b, cc);
    return s2 != s3;
}

static void shared_link_queries(const ts_fabric *t, const ts_fabric *inf, const common_nodes *c,
                                long queries, uint64_t seed, ts_accuracy *out)
{
    if (queries <= 0 || c->m < 4)
        return;
    ts_rng r;
    ts_rng_seed(&r, seed);
    long fp = 0, fn = 0;
    uint64_t m = (uint64_t)c->m;
    for (long q = 0; q < queries; q++) {
        int x[4];
        for (int k = 0; k < 4; k++) {
            int dup;
            do {
                x[k] = (int)ts_rng_below(&r, m);
                dup = 0;
                for (int j = 0; j < k; j++)
                    dup |= x[j] == x[k];
            } while (dup);
        }
        int ts = shares_link(t, c->tv[x[0]], c->tv[x[1]], c->tv[x[2]], c->tv[x[3]]);
        int is = shares_link(inf, c->iv[x[0]], c->iv[x[1]], c->iv[x[2]], c->iv[x[3]]);
        fp += is && !ts;
        fn += ts && !is;
    }
    out->shared_link_fp = (double)fp / (double)queries;
    out->shared_link_fn = (double)fn / (double)queries;
}

static int check_fabrics(const ts_fabric *t, const ts_fabric *inf, ts_error *err)
{
    if (!t || !inf)
        return ts_fail(err, TS_EINPUT, "accuracy: both trees are needed");
    if (t->root == TS_NONE || inf->root == TS_NONE)
        return ts_fail(err, TS_EINPUT, "accuracy: the %s tree is not finalized",
                       t->root == TS_NONE ? "truth" : "inferred");
    return TS_OK;
}

int ts_accuracy_compare(const ts_fabric *truth, const ts_fabric *inferred, long queries,
                        uint64_t seed, ts_accuracy *out, ts_error *err)
{
    if (!out)
        return ts_fail(err, TS_EINPUT, "accuracy: no result given");
    memset(out, 0, sizeof *out);
    int rc = check_fabrics(truth, inferred, err);
    if (rc != TS_OK)
        return rc;
    if (queries < 0)
        return ts_fail(err, TS_EINPUT, "accuracy: negative query count %ld", queries);
    common_nodes c;
    rc = common_build(truth, inferred, &c, err);
    if (rc != TS_OK)
        return rc;
    split_set st = {0}, si = {0};
    unsigned char *t_found = NULL, *i_found = NULL;
    rc = split_set_build(truth, c.tc, &c, &st, err);
    if (rc == TS_OK)
        rc = split_set_build(inferred, c.ic, &c, &si, err);
    if (rc == TS_OK) {
        t_found = calloc((size_t)st.n + 1, 1);
        i_found = calloc((size_t)si.n + 1, 1);
        if (!t_found || !i_found)
            rc = ts_fail(err, TS_ENOMEM, "out of memory");
    }
    if (rc == TS_OK) {
        split_match(&st, &si, t_found, i_found);
        for (int k = 0; k < st.n; k++)
            out->splits_missing += !t_found[k];
        for (int k = 0; k < si.n; k++)
            out->splits_extra += !i_found[k];
        out->tree_exact = out->splits_missing == 0 && out->splits_extra == 0;
        rc = leaf_groups(truth, inferred, &c, &out->leaf_ari, &out->leaf_groups_exact, err);
    }
    if (rc == TS_OK) {
        out->queries = queries;
        out->nodes_missing = c.truth_only;
        shared_link_queries(truth, inferred, &c, queries, seed, out);
    }
    free(t_found);
    free(i_found);
    free(st.s);
    free(si.s);
    common_free(&c);
    if (rc != TS_OK)
        memset(out, 0, sizeof *out);
    return rc;
}

/* Text output bounded by max bytes, always NUL-terminated when max > 0. */
typedef struct textbuf {
    char *buf;
    size_t max, len;
} textbuf;

static void tb_printf(textbuf *tb, const char *fmt, ...) TS_PRINTF(2, 3);
static void tb_printf(textbuf *tb, const char *fmt, ...)
{
    if (tb->max == 0 || tb->len + 1 >= tb->max)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tb->buf + tb->len, tb->max - tb->len, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    tb->len += (size_t)n;
    if (tb->len >= tb->max)
        tb->len = tb->max - 1;
}

static int cmp_int(const void *pa, const void *pb)
{
    int x = *(const int *)pa, y = *(const int *)pb;
    return (x > y) - (x < y);
}

/* Common indices of the nodes below vertex v of f, sorted; walks the subtree with parent
 * links instead of a stack, so depth costs nothing. Returns the count. */
static int subtree_members(const ts_fabric *f, const int *vc, int v, int *members)
{
    int n = 0, x = v;
    for (;;) {
        if (vc[x] != TS_NONE)
            members[n++] = vc[x];
        if (f->v[x].first_child != TS_NONE) {
            x = f->v[x].first_child;
            continue;
        }
        while (x != v && f->v[x].next_sibling == TS_NONE)
            x = f->v[x].parent;
        if (x == v)
            break;
        x = f->v[x].next_sibling;
    }
    qsort(members, (size_t)n, sizeof(int), cmp_int);
    return n;
}

static int lca_of(const ts_fabric *f, const int *vertex_of, const int *members, int n)
{
    int l = vertex_of[members[0]];
    for (int k = 1; k < n; k++)
        l = ts_fabric_lca(f, l, vertex_of[members[k]]);
    return l;
}

static void tb_node_set(textbuf *tb, const ts_fabric *f, const int *vertex_of, const int *members,
                        int n)
{
    tb_printf(tb, "{");
    for (int k = 0; k < n && k < EXPLAIN_MAX_NAMES; k++)
        tb_printf(tb, "%s%s", k ? "," : "", f->v[vertex_of[members[k]]].name);
    if (n > EXPLAIN_MAX_NAMES)
        tb_printf(tb, ",...(%d nodes)", n);
    tb_printf(tb, "}");
}

/* Names of nodes of f that the other tree lacks (vc[v] == TS_NONE), in f's node order. */
static void tb_lonely_nodes(textbuf *tb, const ts_fabric *f, const int *vc, int count,
                            const char *what)
{
    if (count == 0)
        return;
    tb_printf(tb, "%s%d %s: {", tb->len ? "\n" : "", count, what);
    int shown = 0;
    for (int k = 0; k < f->nnodes && shown < EXPLAIN_MAX_NAMES; k++) {
        int v = f->node_vertex[k];
        if (vc[v] == TS_NONE)
            tb_printf(tb, "%s%s", shown++ ? "," : "", f->v[v].name);
    }
    if (count > EXPLAIN_MAX_NAMES)
        tb_printf(tb, ",...");
    tb_printf(tb, "}");
}

typedef struct explain_item {
    int extra;    /* 0: a truth split the inferred tree lacks; 1: the converse */
    int depth, vertex;
} explain_item;

static int cmp_explain_item(const void *pa, const void *pb)
{
    const explain_item *x = pa, *y = pb;
    if (x->extra != y->extra)
        return x->extra - y->extra;
    if (x->depth != y->depth)
        return x->depth - y->depth;
    return (x->vertex > y->vertex) - (x->vertex < y->vertex);
}

/* Returns the length of the text written (at most max - 1), or a negative ts error code
 * with an empty text. */
int ts_accuracy_explain(const ts_fabric *truth, const ts_fabric *inferred, char *buf, size_t max)
{
    textbuf tb = {buf, max, 0};
    if (max > 0)
        buf[0] = '\0';
    int rc = check_fabrics(truth, inferred, NULL);
    if (rc != TS_OK)
        return rc;
    common_nodes c;
    rc = common_build(truth, inferred, &c, NULL);
    if (rc != TS_OK)
        return rc;
    split_set st = {0}, si = {0};
    unsigned char *t_found = NULL, *i_found = NULL;
    int *members = NULL;
    explain_item *items = NULL;
    rc = split_set_build(truth, c.tc, &c, &st, NULL);
    if (rc == TS_OK)
        rc = split_set_build(inferred, c.ic, &c, &si, NULL);
    if (rc == TS_OK) {
        t_found = calloc((size_t)st.n + 1, 1);
        i_found = calloc((size_t)si.n + 1, 1);
        members = malloc(sizeof(int) * (size_t)(c.m + 1));
        items = malloc(sizeof *items * (size_t)(st.n + si.n + 1));
        if (!t_found || !i_found || !members || !items)
            rc = TS_ENOMEM;
    }
    if (rc != TS_OK)
        goto done;
    split_match(&st, &si, t_found, i_found);
    tb_lonely_nodes(&tb, truth, c.tc, c.truth_only, "truth nodes missing from the inferred tree");
    tb_lonely_nodes(&tb, inferred, c.ic, c.inferred_only, "inferred nodes not in the truth");
    /* Missing splits first, then extra ones; within each, the highest switches first, since
     * one wrong switch near the root usually explains the differences below it. */
    int nitems = 0, differences = 0;
    for (int k = 0; k < st.n; k++)
        if (!t_found[k])
            items[nitems++] = (explain_item){0, st.s[k].depth, st.s[k].vertex};
    for (int k = 0; k < si.n; k++)
        if (!i_found[k])
            items[nitems++] = (explain_item){1, si.s[k].depth, si.s[k].vertex};
    qsort(items, (size_t)nitems, sizeof *items, cmp_explain_item);
    for (int k = 0; k < nitems && k < EXPLAIN_MAX_ITEMS; k++) {
        int v = items[k].vertex;
        if (!items[k].extra) {
            int n = subtree_members(truth, c.tc, v, members);
            tb_printf(&tb, "%smissing split ", tb.len ? "\n" : "");
            tb_node_set(&tb, truth, c.tv, members, n);
            int into = lca_of(inferred, c.iv, members, n);
            tb_printf(&tb, " (truth switch %s merged into inferred switch %s)", truth->v[v].name,
                      inferred->v[into].name);
        } else {
            int n = subtree_members(inferred, c.ic, v, members);
            tb_printf(&tb, "%sextra split ", tb.len ? "\n" : "");
            tb_node_set(&tb, truth, c.tv, members, n);
            int split_of = lca_of(truth, c.tv, members, n);
            tb_printf(&tb, " (inferred switch %s splits truth switch %s)", inferred->v[v].name,
                      truth->v[split_of].name);
        }
    }
    if (nitems > EXPLAIN_MAX_ITEMS)
        tb_printf(&tb, "\n... and %d more", nitems - EXPLAIN_MAX_ITEMS);
    differences = nitems + (c.truth_only > 0) + (c.inferred_only > 0);
    if (differences == 0) {
        double ari;
        int exact;
        rc = leaf_groups(truth, inferred, &c, &ari, &exact, NULL);
        if (rc != TS_OK)
            goto done;
        if (exact)
            tb_printf(&tb, "trees identical (%d nodes)", c.m);
        else
            tb_printf(&tb, "same tree up to degree-2 switches, but the nodes are grouped "
                           "differently under their switches (adjusted Rand index %.3f)", ari);
    }
done:
    free(items);
    free(members);
    free(t_found);
    free(i_found);
    free(st.s);
    free(si.s);
    common_free(&c);
    if (rc != TS_OK) {
        if (max > 0)
            buf[0] = '\0';
        return rc;
    }
    return (int)tb.len;
}
