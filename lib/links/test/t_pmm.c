/* PMM link plan: the paper's Figure 2 network, rank against the links a tree can identify,
 * and rounds without shared links or nodes. */
#include <string.h>
#include <time.h>
#include "tap.h"
#include "figure2.h"
#include "toposcope/discover.h"
#include "toposcope/gen.h"
#include "toposcope/pmm.h"
#include "toposcope/links.h"


/* Independent check: rank of a set of 0/1 rows over m columns (plain elimination). */
static int rank_of(double *rows, int nrows, int m)
{
    int rank = 0;
    for (int c = 0; c < m && rank < nrows; c++) {
        int p = -1;
        for (int r = rank; r < nrows; r++)
            if (fabs(rows[r * m + c]) > 1e-9 && (p < 0 || fabs(rows[r * m + c]) > fabs(rows[p * m + c])))
                p = r;
        if (p < 0)
            continue;
        for (int j = 0; j < m; j++) {
            double t = rows[rank * m + j];
            rows[rank * m + j] = rows[p * m + j];
            rows[p * m + j] = t;
        }
        for (int r = 0; r < nrows; r++) {
            if (r == rank || rows[r * m + c] == 0)
                continue;
            double fct = rows[r * m + c] / rows[rank * m + c];
            for (int j = 0; j < m; j++)
                rows[r * m + j] -= fct * rows[rank * m + j];
        }
        rank++;
    }
    return rank;
}

/* Rows of the plan's paths (columns = vertex indices), plus one spare row at the end. */
static double *plan_rows(const ts_fabric *f, const ts_link_plan *p)
{
    int m = f->nvert;
    double *rows = calloc((size_t)(p->npairs + 1) * m, sizeof(double));
    int *links = malloc(sizeof(int) * (size_t)m);
    for (int i = 0; i < p->npairs; i++) {
        int len = ts_fabric_path_links(f, f->node_vertex[p->pairs[i].a], f->node_vertex[p->pairs[i].b],
                                       links, m);
        for (int x = 0; x < len; x++)
            rows[(size_t)i * m + links[x]] = 1;
    }
    free(links);
    return rows;
}

/* Is the combination of links `want` (0/1 over vertices) determined by the plan's paths? */
static int in_span(const ts_fabric *f, const ts_link_plan *p, const int *want, int nwant)
{
    int m = f->nvert;
    double *a = plan_rows(f, p), *b = plan_rows(f, p);
    for (int i = 0; i < nwant; i++)
        b[(size_t)p->npairs * m + want[i]] = 1;
    int r1 = rank_of(a, p->npairs, m), r2 = rank_of(b, p->npairs + 1, m);
    free(a);
    free(b);
    return r1 == r2;
}

/* No round holds two pairs that share a node or a link; every pair is listed once. */
static int rounds_disjoint(const ts_fabric *f, const ts_link_plan *p)
{
    int *mark = calloc((size_t)f->nvert, sizeof(int)), *links = malloc(sizeof(int) * (size_t)f->nvert);
    int good = p->round_start[0] == 0 && p->round_start[p->nrounds] == p->npairs;
    for (int r = 0; r < p->nrounds && good; r++) {
        good &= p->round_start[r + 1] > p->round_start[r];
        for (int i = p->round_start[r]; i < p->round_start[r + 1]; i++) {
            int va = f->node_vertex[p->pairs[i].a], vb = f->node_vertex[p->pairs[i].b];
            int len = ts_fabric_path_links(f, va, vb, links, f->nvert);
            /* a node's access link is named by the node: its mark covers the node too */
            for (int x = 0; x < len; x++) {
                good &= mark[links[x]] != r + 1;
                mark[links[x]] = r + 1;
            }
        }
    }
    for (int i = 0; i < p->npairs && good; i++)
        for (int j = i + 1; j < p->npairs; j++) {
            int a1 = p->pairs[i].a, b1 = p->pairs[i].b, a2 = p->pairs[j].a, b2 = p->pairs[j].b;
            good &= !((a1 == a2 && b1 == b2) || (a1 == b2 && b1 == a2));
        }
    free(mark);
    free(links);
    return good;
}

/* Links a tree's paths cannot tell apart: a switch with one child and a parent, or a root with
 * two children, joins its two links into one aggregated link. */
static int aggregated_losses(const ts_fabric *f)
{
    int lost = 0;
    for (int i = 0; i < f->nvert; i++)
        if (f->v[i].kind == TS_SWITCH && f->v[i].nchildren + (f->v[i].parent != TS_NONE) == 2)
            lost++;
    return lost;
}

static void test_figure2(void)
{
    ts_fabric f;
    int l3, l4;
    ts_error err = {{0}};
    if (build_figure2(&f, &l3, &l4) != TS_OK) {
        ok(0, "figure 2 tree builds");
        return;
    }
    ts_link_plan p;
    is_int(ts_link_plan_pmm(&f, &p, &err), TS_OK, "figure 2: plan");
    is_int(f.nvert - 1, 8, "figure 2: 8 links");
    is_int(p.rank, 7, "figure 2: rank 7 (the paper's 7 measurements instead of 15)");
    is_int(p.npairs, 7, "figure 2: 7 pairs");
    is_int(p.paths_examined, 15, "figure 2: rank stays below the links, all 15 paths examined");
    int both[] = {l3, l4};
    ok(in_span(&f, &p, both, 2), "figure 2: l3 + l4 is determined");
    ok(!in_span(&f, &p, &l3, 1) && !in_span(&f, &p, &l4, 1), "figure 2: l3 and l4 alone are not");
    int singles_ok = 1;
    for (int v = 0; v < f.nvert; v++)
        if (v != f.root && v != l3 && v != l4)
            singles_ok &= in_span(&f, &p, &v, 1);
    ok(singles_ok, "figure 2: every other link is determined on its own");
    ok(rounds_disjoint(&f, &p), "figure 2: no round shares a link or a node");
    /* the four paths through k1's switch r1 all need one of 4 node links: at least 7/2 rounds */
    ok(p.nrounds >= 4 && p.nrounds <= 7, "figure 2: %d rounds (paper: 5)", p.nrounds);
    ts_link_plan_free(&p);
    ts_fabric_free(&f);
}

static void check_tree(ts_fabric *f, const char *what)
{
    ts_link_plan p;
    ts_error err = {{0}};
    int rc = ts_link_plan_pmm(f, &p, &err);
    is_int(rc, TS_OK, "%s: plan", what);
    if (rc != TS_OK) {
        diag("%s", err.text);
        return;
    }
    int want = f->nvert - 1 - aggregated_losses(f);
    is_int(p.rank, want, "%s: rank = links - aggregated = %d", what, want);
    is_int(p.npairs, p.rank, "%s: one pair per independent path", what);
    double *rows = plan_rows(f, &p);
    is_int(rank_of(rows, p.npairs, f->nvert), p.rank, "%s: the chosen paths are independent", what);
    free(rows);
    ok(rounds_disjoint(f, &p), "%s: %d rounds, none shares a link or a node", what, p.nrounds);
    ts_link_plan_free(&p);
}

static void test_trees(void)
{
    static const int fan_a[] = {4, 4, 4};      /* 64 nodes, no aggregation */
    static const int fan_b[] = {2, 3, 5};      /* root of degree 2: its two links merge */
    static const int fan_c[] = {3, 1, 1, 4};   /* chains of two degree-2 switches */
    static const int fan_d[] = {3, 2, 1};      /* one node per leaf switch: leaf's uplink and the node's link merge */
    struct { const int *fan; int levels; const char *name; } cases[] = {
        {fan_a, 3, "regular 4x4x4"},
        {fan_b, 3, "regular 2x3x5"},
        {fan_c, 4, "regular 3x1x1x4"},
        {fan_d, 3, "regular 3x2x1"},
    };
    for (int i = 0; i < 4; i++) {
        ts_fabric f;
        ts_error err = {{0}};
        ts_fabric_init(&f);
        if (ts_gen_regular(&f, cases[i].fan, cases[i].levels, 7, &err) != TS_OK) {
            ok(0, "%s builds: %s", cases[i].name, err.text);
            continue;
        }
        check_tree(&f, cases[i].name);
        ts_fabric_free(&f);
    }
    ts_fabric f;
    ts_error err = {{0}};
    ts_fabric_init(&f);
    ts_gen_fat_tree(&f, 4, 3, &err);
    check_tree(&f, "fat tree p=4");
    ts_fabric_free(&f);
    for (uint64_t seed = 1; seed <= 5; seed++) {
        ts_fabric_init(&f);
        if (ts_gen_random_identifiable(&f, 40, 4, seed, &err) == TS_OK) {
            char name[64];
            snprintf(name, sizeof name, "random identifiable seed %llu", (unsigned long long)seed);
            check_tree(&f, name);
        }
        ts_fabric_free(&f);
    }
}

static void test_errors(void)
{
    ts_fabric f;
    ts_link_plan p;
    ts_error err = {{0}};
    ts_fabric_init(&f);
    is_int(ts_link_plan_pmm(&f, &p, &err), TS_EINPUT, "an unfinalized tree is refused");
    ok(p.pairs == NULL && p.npairs == 0, "and the plan is left empty");
    ts_link_plan_free(&p);
}

int main(void)
{
    clock_t t0 = clock();
    test_figure2();
    test_trees();
    test_errors();
    diag("CPU %.3f s", (double)(clock() - t0) / CLOCKS_PER_SEC);
    return done_testing();
}
