/* Tree inference: exact recovery from exact additive distances on >= 1000 random trees, and
 * from noisy distances with tolerances taken from the measured spread. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "tap.h"
#include "toposcope/gen.h"
#include "toposcope/infer.h"
#include "toposcope/metrics.h"
#include "toposcope/model.h"
#include "toposcope/rng.h"

/* Distances of a realized model: 2 * links + host part, plus optional Gaussian noise. */
static void fill_matrix(const ts_fabric *f, const ts_model *m, ts_distmat *dm, double noise_sd,
                        ts_rng *rng)
{
    int n = f->nnodes;
    dm->n = n;
    dm->d = malloc(sizeof(double) * (size_t)n * n);
    dm->ci = malloc(sizeof(double) * (size_t)n * n);
    for (int a = 0; a < n; a++) {
        dm->d[(size_t)a * n + a] = 0;
        dm->ci[(size_t)a * n + a] = 0;
        for (int b = a + 1; b < n; b++) {
            double d = ts_model_base_rtt(m, f, a, b);
            if (noise_sd > 0)
                d += noise_sd * ts_rng_normal(rng);
            dm->d[(size_t)a * n + b] = dm->d[(size_t)b * n + a] = d;
            dm->ci[(size_t)a * n + b] = dm->ci[(size_t)b * n + a] = noise_sd > 0 ? 1.7 * noise_sd : 1e-6;
        }
    }
}

static int infer_and_compare(const ts_fabric *truth, const ts_distmat *dm, double tol,
                             ts_accuracy *acc, ts_error *err)
{
    ts_utree t;
    ts_infer_report rep;
    ts_fabric inferred;
    int rc = ts_infer_matrix(dm, tol, &t, &rep, err);
    if (rc != TS_OK)
        return rc;
    char **names = malloc(sizeof(char *) * (size_t)truth->nnodes);
    for (int i = 0; i < truth->nnodes; i++)
        names[i] = truth->v[truth->node_vertex[i]].name;
    rc = ts_utree_to_fabric(&t, names, truth->nnodes, &inferred, err);
    free(names);
    if (rc == TS_OK) {
        rc = ts_accuracy_compare(truth, &inferred, 2000, 1, acc, err);
        ts_fabric_free(&inferred);
    }
    ts_utree_free(&t);
    ts_infer_report_free(&rep);
    return rc;
}

static void property_exact(int ntrees)
{
    ts_model_params p;
    ts_error err;
    memset(&p, 0, sizeof p);
    ts_model_params_profile(&p, "ethernet", &err);
    p.link_variation = 0.5;   /* links from 1.25 to 3.75 µs one way: unequal on purpose */
    p.host_variation = 0.5;
    int exact = 0, failures_shown = 0;
    long total_nodes = 0;
    for (int seed = 1; seed <= ntrees; seed++) {
        ts_fabric f;
        ts_model m;
        ts_fabric_init(&f);
        if (ts_gen_random_identifiable(&f, 40, 5, (uint64_t)seed, &err) != TS_OK) {
            diag("generator failed: %s", err.text);
            continue;
        }
        ts_model_realize(&m, &f, &p, (uint64_t)seed, NULL, 0, &err);
        ts_distmat dm;
        fill_matrix(&f, &m, &dm, 0, NULL);
        ts_accuracy acc;
        /* exact distances: any tolerance below the shortest link (2.5 µs of RTT) recovers */
        if (infer_and_compare(&f, &dm, 0.5, &acc, &err) == TS_OK && acc.tree_exact)
            exact++;
        else if (failures_shown++ < 3)
            diag("tree %d (%d nodes) not recovered: missing %d extra %d", seed, f.nnodes,
                 acc.splits_missing, acc.splits_extra);
        total_nodes += f.nnodes;
        free(dm.d);
        free(dm.ci);
        ts_model_free(&m);
        ts_fabric_free(&f);
    }
    is_int(exact, ntrees, "exact recovery of %d random trees from exact distances (%ld nodes)", ntrees,
           total_nodes);
    ts_model_params_free(&p);
}

static void property_noisy(int ntrees)
{
    ts_model_params p;
    ts_error err;
    memset(&p, 0, sizeof p);
    ts_model_params_profile(&p, "ethernet", &err);
    ts_rng rng;
    ts_rng_seed(&rng, 99);
    int exact = 0;
    for (int seed = 1; seed <= ntrees; seed++) {
        ts_fabric f;
        ts_model m;
        ts_fabric_init(&f);
        if (ts_gen_random_identifiable(&f, 60, 4, (uint64_t)seed + 5000, &err) != TS_OK) {
            diag("generator failed: %s", err.text);
            continue;
        }
        ts_model_realize(&m, &f, &p, (uint64_t)seed, NULL, 0, &err);
        ts_distmat dm;
        /* noise of a well-measured pair: 0.5 µs against 5 µs per switch level */
        fill_matrix(&f, &m, &dm, 0.5, &rng);
        ts_accuracy acc;
        if (infer_and_compare(&f, &dm, 0, &acc, &err) == TS_OK && acc.tree_exact)
            exact++;
        free(dm.d);
        free(dm.ci);
        ts_model_free(&m);
        ts_fabric_free(&f);
    }
    ok(exact >= ntrees * 98 / 100, "noisy distances, tolerance from the spread: %d of %d exact", exact,
       ntrees);
    ts_model_params_free(&p);
}

static void test_incomplete(void)
{
    ts_fabric f;
    ts_model m;
    ts_model_params p;
    ts_error err;
    memset(&p, 0, sizeof p);
    ts_model_params_profile(&p, "ethernet", &err);
    ts_fabric_init(&f);
    ts_gen_fat_tree(&f, 4, 3, &err);
    ts_model_realize(&m, &f, &p, 1, NULL, 0, &err);
    ts_distmat dm;
    fill_matrix(&f, &m, &dm, 0, NULL);
    /* node 5 never answered: its row is unknown */
    int n = dm.n;
    for (int b = 0; b < n; b++)
        if (b != 5)
            dm.d[(size_t)5 * n + b] = dm.d[(size_t)b * n + 5] = NAN;
    ts_utree t;
    ts_infer_report rep;
    ok(ts_infer_matrix(&dm, 0.5, &t, &rep, &err) == TS_OK, "inference with a silent node");
    ok(rep.nunmeasured == 1 && rep.unmeasured[0] == 5, "the silent node is reported unmeasured");
    int in_tree = 0;
    for (int v = 0; v < t.nvert; v++)
        in_tree |= t.node[v] == 5;
    ok(!in_tree, "and left out of the tree");
    ts_utree_free(&t);
    ts_infer_report_free(&rep);
    free(dm.d);
    free(dm.ci);
    ts_model_free(&m);
    ts_model_params_free(&p);
    ts_fabric_free(&f);
}

static void test_utree(void)
{
    ts_utree t;
    ts_utree_init(&t);
    int root = ts_utree_add(&t, TS_NONE, 0, TS_NONE);
    int a = ts_utree_add(&t, root, 10, 0);
    ts_utree_add(&t, root, 10, 1);
    int w = ts_utree_split_edge(&t, a, 4);
    ok(w >= 0 && t.parent[a] == w && t.parent[w] == root, "splitting an edge inserts a switch");
    is_num(t.len[a], 4, 1e-12, "the lower part keeps the given length");
    is_num(t.len[w], 6, 1e-12, "the upper part keeps the rest");
    ts_utree_add(&t, w, 3, 2);
    char *names[] = {"x", "y", "z"};
    ts_fabric f;
    ts_error err;
    ok(ts_utree_to_fabric(&t, names, 3, &f, &err) == TS_OK, "converts to a fabric");
    /* root has two neighbours (x's switch and y): it is spliced out, one switch remains */
    is_int(f.nvert - f.nnodes, 1, "degree-2 switches are contracted");
    int y = ts_fabric_find(&f, "y");
    ok(y >= 0 && fabs(f.v[y].link_us - 8.0) < 1e-9, "lengths add up across a contracted switch (%g)",
       y >= 0 ? f.v[y].link_us : -1.0);
    ts_fabric_free(&f);
    ts_utree_free(&t);
}

int main(void)
{
    test_utree();
    property_exact(1000);
    property_noisy(200);
    test_incomplete();
    return done_testing();
}
