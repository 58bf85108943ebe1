/* Shirai insertion baseline: exact trees from exact distances, exact 128-node fat trees under
 * the ethernet profile, O(N d) probes, and a partial tree under a tiny budget. */
#include <string.h>
#include "tap.h"
#include "simrun.h"
#include "toposcope/discover.h"
#include "toposcope/gen.h"
#include "toposcope/metrics.h"
#include "toposcope/model.h"
#include "toposcope/sim.h"
#include "toposcope/shirai.h"

static run simulate(ts_fabric *truth, const char *profile, int exact, uint64_t seed, double budget_us)
{
    return simulate_method(ts_discover_shirai, "shirai", truth, profile, exact, seed, budget_us);
}

static void test_exact_fat_trees(void)
{
    static const int ps[] = {4, 8};
    for (int k = 0; k < 2; k++)
        for (uint64_t seed = 1; seed <= 3; seed++) {
            ts_fabric f;
            ts_error err = {{0}};
            ts_fabric_init(&f);
            ts_gen_fat_tree(&f, ps[k], seed, &err);
            run r = simulate(&f, "ethernet", 1, seed, 0);
            int depth = ts_fabric_max_depth(&f);
            ok(r.rc == TS_OK && r.acc.tree_exact && r.acc.nodes_missing == 0,
               "exact distances, fat tree p=%d seed %llu: tree exact", ps[k], (unsigned long long)seed);
            ok(r.count.probes <= 8L * f.nnodes * depth,
               "p=%d: %ld probes <= 8 N d = %d", ps[k], r.count.probes, 8 * f.nnodes * depth);
            ts_fabric_free(&f);
        }
}

static void test_exact_random(void)
{
    int exact = 0, total = 0;
    for (uint64_t seed = 1; seed <= 20; seed++) {
        ts_fabric f;
        ts_error err = {{0}};
        ts_fabric_init(&f);
        if (ts_gen_random_identifiable(&f, 60, 5, seed, &err) != TS_OK) {
            diag("gen: %s", err.text);
            continue;
        }
        if (f.nnodes >= 3) {
            run r = simulate(&f, seed % 2 ? "infiniband" : "ethernet", 1, seed, 0);
            total++;
            if (r.rc == TS_OK && r.acc.tree_exact)
                exact++;
            else
                diag("random seed %llu (%d nodes): missing %d extra %d", (unsigned long long)seed,
                     f.nnodes, r.acc.splits_missing, r.acc.splits_extra);
        }
        ts_fabric_free(&f);
    }
    ok(total >= 15 && exact == total, "exact distances: %d/%d random identifiable trees exact", exact,
       total);
}

static void test_ethernet_128(void)
{
    for (uint64_t seed = 1; seed <= 3; seed++) {
        ts_fabric f;
        ts_error err = {{0}};
        ts_fabric_init(&f);
        ts_gen_fat_tree(&f, 8, seed + 100, &err);
        run r = simulate(&f, "ethernet", 0, seed, 0);
        int depth = ts_fabric_max_depth(&f);
        ok(r.rc == TS_OK && r.acc.tree_exact && r.acc.nodes_missing == 0 && !r.partial,
           "ethernet, 128-node 3-level tree, seed %llu: exact", (unsigned long long)seed);
        if (!r.acc.tree_exact)
            diag("  missing %d extra %d", r.acc.splits_missing, r.acc.splits_extra);
        ok(r.count.probes <= 8L * f.nnodes * depth, "seed %llu: %ld probes <= 8 N d = %d",
           (unsigned long long)seed, r.count.probes, 8 * f.nnodes * depth);
        ok(r.count.rounds == r.count.probes && r.count.control_steps == r.count.rounds - 1,
           "seed %llu: sequential, one pair per round (%ld rounds, %ld control steps)",
           (unsigned long long)seed, r.count.rounds, r.count.control_steps);
        ok(r.tol_us > 0 && r.tol_us < 2.5, "seed %llu: tolerance %.3f us from the spread, below a hop",
           (unsigned long long)seed, r.tol_us);
        diag("128 nodes: %ld probes, %ld rounds, %.1f ms simulated", r.count.probes, r.count.rounds,
             r.budget_used_us / 1000);
        ts_fabric_free(&f);
    }
}

static void test_tiny_budget(void)
{
    ts_fabric f;
    ts_error err = {{0}};
    ts_fabric_init(&f);
    ts_gen_fat_tree(&f, 8, 5, &err);
    double budget = 20000;   /* 20 ms: enough for a few dozen insertions, not 128 */
    run r = simulate(&f, "ethernet", 0, 5, budget);
    ok(r.rc == TS_OK && r.partial, "tiny budget: returns a partial tree");
    ok(r.nodes_in_tree >= 2 && r.nodes_in_tree < f.nnodes, "tiny budget: %d of %d nodes inserted",
       r.nodes_in_tree, f.nnodes);
    is_int(r.nunmeasured + r.nodes_in_tree, f.nnodes, "every node is in the tree or unmeasured");
    /* a round started before the deadline may finish after it, by one pair's sampling */
    ok(r.budget_used_us <= budget + 5000, "deadline kept: %.0f us used of %.0f", r.budget_used_us,
       budget);
    ok(r.acc.splits_extra == 0, "the partial tree has no false switches (%d extra)", r.acc.splits_extra);
    ts_fabric_free(&f);
}

int main(void)
{
    test_exact_fat_trees();
    test_exact_random();
    test_ethernet_128();
    test_tiny_budget();
    return done_testing();
}
