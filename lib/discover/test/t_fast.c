/* The fast method: exact trees on shuffled fat trees (128 and 1024 nodes, both profiles, with
 * the simulator's jitter, outliers and interference), every node placed, and a flagged partial
 * tree within a 5 ms budget, also over varied plans. Small irregular trees are reported with diag: the threshold cut
 * does not hold when branches differ in depth (see lib/discover/fast.c).
 * TS_FAST_SWEEP=N additionally prints one line per seed for N seeds of the 1024-node tree. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tap.h"
#include "simrun.h"
#include "toposcope/discover.h"
#include "toposcope/gen.h"
#include "toposcope/metrics.h"
#include "toposcope/model.h"
#include "toposcope/sim.h"
#include "toposcope/fast.h"

static run simulate(ts_fabric *truth, const char *profile, int exact, uint64_t seed, double budget_us)
{
    return simulate_method(ts_discover_fast, "fast", truth, profile, exact, seed, budget_us);
}

static void test_fat_trees(const char *profile)
{
    int exact = 0;
    for (uint64_t seed = 1; seed <= 4; seed++) {
        ts_fabric f;
        ts_error err = {{0}};
        ts_fabric_init(&f);
        ts_gen_fat_tree(&f, 8, seed + 100, &err);
        run r = simulate(&f, profile, 0, seed, 0);
        if (r.rc == TS_OK && r.acc.tree_exact && r.acc.nodes_missing == 0 && !r.partial)
            exact++;
        ok(r.rc == TS_OK && r.acc.tree_exact, "%s p=8 seed %llu: exact tree (missing %d extra %d)",
           profile, (unsigned long long)seed, r.acc.splits_missing, r.acc.splits_extra);
        ok(r.rc == TS_OK && r.nodes_in_tree == f.nnodes && r.nunmeasured == 0 && !r.partial,
           "%s p=8 seed %llu: all %d nodes placed", profile, (unsigned long long)seed, r.nodes_in_tree);
        /* the cost guard: every leaf proven a star by a tournament and a half, fragments
         * joined and kept apart by two measurements each */
        ok(r.count.rounds <= f.nnodes && r.count.probes <= 40L * f.nnodes,
           "%s p=8 seed %llu: %ld probes <= 40 N, %ld rounds <= N, %.2f ms", profile,
           (unsigned long long)seed, r.count.probes, r.count.rounds, r.budget_used_us / 1000);
        ts_fabric_free(&f);
    }
    diag("%s: %d/4 128-node fat trees exact", profile, exact);
}

/* Leaves of four nodes: a leaf region has six pairs, too few to measure its own noise, so a
 * pair that happens to come out low must not make a cut there (it did in 7 of 100 seeds). */
static void test_small_leaves(void)
{
    int exact = 0, seeds = 40;
    ts_fabric f;
    ts_error err = {{0}};
    ts_fabric_init(&f);
    ts_gen_fat_tree(&f, 8, 7, &err);
    for (uint64_t seed = 1; seed <= (uint64_t)seeds; seed++) {
        run r = simulate(&f, "ethernet", 0, seed, 0);
        if (r.rc == TS_OK && r.acc.tree_exact)
            exact++;
        else
            diag("p=8 seed %llu: missing %d extra %d", (unsigned long long)seed,
                 r.acc.splits_missing, r.acc.splits_extra);
    }
    ts_fabric_free(&f);
    ok(exact == seeds, "ethernet p=8 (leaves of 4 nodes): %d/%d seeds exact", exact, seeds);
}

/* f: shape[0] leaf switches of shape[1] nodes below one (shuffled, seed 7); 0 (and a failed
 * check) when it cannot be built. */
static int two_level_fabric(ts_fabric *f, const int shape[2])
{
    ts_error err = {{0}};
    ts_fabric_init(f);
    if (ts_gen_regular(f, shape, 2, 7, &err) == TS_OK)
        return 1;
    ok(0, "setup: %s", err.text);
    return 0;
}

/* Leaves of two nodes under one switch (testbed-probe.t's 8-node step): a leaf has one near
 * pair, so a near pair measured again and fitted as far (the region's class) pulled both its
 * nodes' offsets down by a level, and the children's pairs then grouped into a switch the
 * fabric does not have, reported measured (RDMA: 10 of 300 seeds before classify_batch put a
 * batch's new pairs into the last cut's classes). Never a wrong tree reported measured. And
 * seldom partial: the tournament measures each pair many times, so the far class's means lie
 * close together and half of a far pair's measurements fall below the lowest; taken for near
 * readings, they made their pairs no far opinion, and the top was left unresolved (exact and
 * measured in 272 and 235 of 300 seeds over RDMA and kernel UDP; 300 and 294 since a
 * measurement is near only on the near side of the cut). */
static void test_leaves_of_two(void)
{
    static const int shape[] = {4, 2};
    static const char *const profiles[] = {"rdma", "ethernet-udp"};
    ts_fabric f;
    if (!two_level_fabric(&f, shape))
        return;
    for (size_t i = 0; i < sizeof profiles / sizeof profiles[0]; i++) {
        int seeds = 300, exact = 0, wrong_measured = 0, exact_measured = 0;
        for (uint64_t seed = 1; seed <= (uint64_t)seeds; seed++) {
            run r = simulate(&f, profiles[i], 0, seed, 0);
            exact += r.rc == TS_OK && r.acc.tree_exact;
            exact_measured += r.rc == TS_OK && r.acc.tree_exact && !r.partial && r.nambiguous == 0;
            if (r.rc == TS_OK && !r.acc.tree_exact && !r.partial && r.nambiguous == 0) {
                wrong_measured++;
                diag("%s seed %llu: missing %d extra %d, measured", profiles[i],
                     (unsigned long long)seed, r.acc.splits_missing, r.acc.splits_extra);
            }
        }
        ok(wrong_measured == 0, "4 leaves of 2 nodes, %s: %d of %d seeds a wrong tree reported "
           "measured (%d exact)", profiles[i], wrong_measured, seeds, exact);
        ok(exact_measured >= seeds * 97 / 100, "4 leaves of 2 nodes, %s: exact and measured in %d "
           "of %d seeds (>= 97 %%)", profiles[i], exact_measured, seeds);
    }
    ts_fabric_free(&f);
}

/* The star test's false alarms. 64 leaf switches of 8 nodes below one: every leaf is a star,
 * tested first at 3 samples per pair, and one leaf's false lack of fit doubles the samples of
 * every leaf still open. On medians' scales the test's z scores spread 1.5-1.6 times too wide
 * (2-6 % false alarms per leaf where 0.1 % was meant): 5 of 30 runs over RDMA settled every
 * leaf without a doubling (toposcope sim, seeds 1-30); on trimmed mean squares, 22. */
static void test_star_false_alarms(void)
{
    static const int shape[] = {64, 8};
    ts_fabric f;
    if (!two_level_fabric(&f, shape))
        return;
    int runs = 20, undoubled = 0, exact = 0;
    /* (3 samples per pair chosen: the top's single-sample stage left out, every probe of a run
     * without a doubling takes 3) */
    simrun_samples_first = 3;
    for (uint64_t seed = 1; seed <= (uint64_t)runs; seed++) {
        run r = simulate(&f, "rdma", 0, seed, 0);
        exact += r.rc == TS_OK && r.acc.tree_exact && !r.partial;
        undoubled += r.rc == TS_OK && r.count.samples + r.count.lost == 3 * r.count.probes;
    }
    simrun_samples_first = 0;
    ok(exact == runs && undoubled >= runs / 2,
       "64 leaves of 8 over RDMA: %d/%d exact and measured, %d settled at 3 samples per pair "
       "(>= %d)", exact, runs, undoubled, runs / 2);
    ts_fabric_free(&f);
}

/* The smallest jobs: two nodes (one pair, nothing to split) and three. */
static void test_tiny_jobs(void)
{
    for (int nodes = 2; nodes <= 3; nodes++) {
        ts_fabric f;
        ts_error err = {{0}};
        const int fanout[] = {1, nodes};
        ts_gen_regular(&f, fanout, 2, 0, &err);
        run r = simulate(&f, "ethernet", 0, 1, 0);
        ok(r.rc == TS_OK && r.acc.tree_exact && r.nodes_in_tree == nodes,
           "%d nodes under one switch: exact (rc %d, %d nodes in the tree)", nodes, r.rc,
           r.nodes_in_tree);
        ts_fabric_free(&f);
    }
}

/* The 1024-node fat tree, names shuffled: exact, and far below all-pairs' cost (1023 rounds,
 * 523776 probes, ~1.6 s of virtual time on this tree). */
static void test_fat_tree_1024(const char *profile, double max_ms)
{
    ts_fabric f;
    ts_error err = {{0}};
    ts_fabric_init(&f);
    ts_gen_fat_tree(&f, 16, 11, &err);
    run r = simulate(&f, profile, 0, 3, 0);
    ok(r.rc == TS_OK && r.acc.tree_exact && r.nodes_in_tree == f.nnodes,
       "%s 1024 nodes: exact tree, all placed (missing %d extra %d)", profile, r.acc.splits_missing,
       r.acc.splits_extra);
    /* every leaf is proven a star by a tournament and a half (1.5 x 7 pairs per node of a leaf
     * of 8), the rest costs about as much again */
    ok(r.count.rounds <= 128 && r.count.probes <= 56L * f.nnodes,
       "%s 1024 nodes: %ld rounds, %ld probes (%.1f N)", profile, r.count.rounds, r.count.probes,
       (double)r.count.probes / f.nnodes);
    ok(r.budget_used_us / 1000 <= max_ms, "%s 1024 nodes: %.2f ms of virtual time <= %.0f", profile,
       r.budget_used_us / 1000, max_ms);
    ts_fabric_free(&f);
}

/* A region left unresolved hangs its nodes from one switch, a level above the others: the tree
 * is still one of levels, fast's own splits stand and the additive method fills only that
 * region. Pods of 16 nodes in leaves of 2 over IPoIB under a 3 s budget leave the pods'
 * leaves unresolved (a child of 2 is below both the gap test's floor and the partition
 * look's); taken for a fabric not of levels, the additive method's guess replaced fast's
 * whole tree and its test contracted the pods as well (leaf ARI 0.01-0.06 in 3 of 3 runs of
 * the 128-node fat tree, whose leaves of 4 the partition look now resolves). So the splits
 * missing are the 64 leaves' at most, none extra. */
static void test_unresolved_keeps_splits(void)
{
    static const int shape[] = {8, 8, 2};
    ts_fabric f;
    ts_error err = {{0}};
    ts_fabric_init(&f);
    if (ts_gen_regular(&f, shape, 3, 7, &err) != TS_OK) {
        ok(0, "setup: %s", err.text);
        ts_fabric_free(&f);
        return;
    }
    int kept = 0, runs = 3, most = 0;
    for (uint64_t seed = 1; seed <= (uint64_t)runs; seed++) {
        run r = simulate(&f, "ipoib-udp", 0, seed, 3e6);
        kept += r.rc == TS_OK && (r.partial || r.nambiguous > 0) && r.acc.splits_extra == 0 &&
                r.acc.splits_missing <= 64;
        most = r.acc.splits_missing > most ? r.acc.splits_missing : most;
    }
    ok(kept == runs, "pods of 16 in leaves of 2 over IPoIB, 3 s budget: %d/%d partial with "
       "fast's pods kept (at most the 64 leaves missing; the most %d)", kept, runs, most);
    ts_fabric_free(&f);
}

static void test_irregular(void)
{
    int exact = 0, total = 0;
    for (uint64_t seed = 1; seed <= 12; seed++) {
        ts_fabric f;
        ts_error err = {{0}};
        ts_fabric_init(&f);
        if (ts_gen_random_identifiable(&f, 80, 4, seed, &err) != TS_OK || f.nnodes < 3) {
            ts_fabric_free(&f);
            continue;
        }
        run r = simulate(&f, "ethernet", 0, seed, 0);
        total++;
        ok(r.rc == TS_OK && r.nodes_in_tree == f.nnodes, "irregular seed %llu: all %d nodes placed",
           (unsigned long long)seed, f.nnodes);
        if (r.rc == TS_OK && r.acc.tree_exact)
            exact++;
        else
            diag("irregular seed %llu (%d nodes): missing %d extra %d", (unsigned long long)seed,
                 f.nnodes, r.acc.splits_missing, r.acc.splits_extra);
        ts_fabric_free(&f);
    }
    ok(total >= 8, "ethernet: %d small irregular trees ran", total);
    diag("ethernet: %d/%d small irregular trees exact", exact, total);
}

static void test_small_budget(void)
{
    ts_fabric f;
    ts_error err = {{0}};
    ts_fabric_init(&f);
    ts_gen_fat_tree(&f, 16, 5, &err);
    double budget = 5000;
    run r = simulate(&f, "ethernet", 0, 5, budget);
    ok(r.rc == TS_OK && r.partial, "5 ms budget on 1024 nodes: a partial tree");
    is_int(r.nunmeasured + r.nodes_in_tree, f.nnodes, "every node is in the tree or unmeasured");
    /* the engine abandons a probe that would end after the deadline: no overrun at all */
    ok(r.budget_used_us <= budget + 1e-6, "deadline kept: %.0f us used of %.0f", r.budget_used_us,
       budget);
    ts_fabric_free(&f);
}

/* Budgets that end before the first rounds are done: the depths reached are emitted with
 * nodes that were never measured (reported, not placed), and a region never cut must not be
 * read as one (its nodes' fragments were once left unset: a crash, or garbage under valgrind). */
static void test_budget_below_a_round(void)
{
    ts_fabric f;
    ts_error err = {{0}};
    ts_fabric_init(&f);
    ts_gen_fat_tree(&f, 4, 3, &err);
    double budgets[] = {20, 100, 300, 1000};
    for (size_t b = 0; b < sizeof budgets / sizeof *budgets; b++) {
        run r = simulate(&f, "ethernet-udp", 0, 7, budgets[b]);
        /* (r.partial is only set when discovery returned TS_OK; a tree of no node is then
         * refused by the comparison with the truth, as by every writer) */
        ok(r.partial, "%.0f us budget on %d nodes: discovery ends, its tree partial", budgets[b],
           f.nnodes);
        is_int(r.nunmeasured + r.nodes_in_tree, f.nnodes,
               "%.0f us budget: every node is in the tree or unmeasured", budgets[b]);
        ok(r.budget_used_us <= budgets[b] + 1e-6, "%.0f us budget kept: %.0f us used", budgets[b],
           r.budget_used_us);
    }
    ts_fabric_free(&f);
}

/* 8 leaf switches of 8 nodes whose uplinks cost nothing and carry load for free: no round trip
 * can tell a node's leaf mates from the others, so the 64 nodes stay below one switch and that
 * switch is reported as ambiguous instead of split by guesswork. With real uplinks the same
 * fabric is exact and nothing is ambiguous. */
static void test_ambiguous(void)
{
    static const int fan[] = {8, 8};
    for (int hidden = 0; hidden < 2; hidden++) {
        ts_fabric f;
        ts_error err = {{0}};
        ts_model_params p;
        ts_fabric_init(&f);
        if (ts_gen_regular(&f, fan, 2, 3, &err) != TS_OK ||
            ts_model_params_profile(&p, "ethernet", &err) != TS_OK) {
            ok(0, "setup: %s", err.text);
            ts_fabric_free(&f);
            continue;
        }
        if (hidden) {
            p.level[1].latency_us = 0;
            p.flow_penalty_us = 0;
        }
        run r = simulate_method_params(ts_discover_fast, "fast", &f, &p, 3, 0);
        ok(r.rc == TS_OK, "%s uplinks: discovery runs", hidden ? "invisible" : "real");
        if (hidden) {
            /* a level that adds nothing cannot be seen: the honest tree is the coarser one, all
             * 64 nodes on one switch, with no split guessed (a star proven within the noise,
             * or unresolved: either way not a wrong tree) */
            is_int(r.acc.splits_extra, 0, "invisible uplinks: no split guessed");
            is_int(r.acc.splits_missing, 8, "invisible uplinks: all 64 nodes hang from one switch");
        } else {
            is_int(r.nambiguous, 0, "real uplinks: nothing ambiguous");
            ok(r.acc.tree_exact, "real uplinks: the tree is exact");
        }
        ts_model_params_free(&p);
        ts_fabric_free(&f);
    }
}

/* Light rounds and the end of a region: the 1024-node tree and a 512-node tree of 16 pods
 * with 4 leaves each (where light rounds alone once put a pod's leaves apart), exact over
 * several seeds. Every run has to end, too: a cut that joined all of a region's nodes once
 * made the same region again, forever. */
static void test_light_rounds(void)
{
    static const int shape[] = {16, 4, 8};
    struct { const char *what; int regular; int seeds; } cases[] = {
        {"1024-node fat tree", 0, 8},
        {"16x4x8 tree", 1, 12},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        ts_fabric f;
        ts_error err = {{0}};
        ts_fabric_init(&f);
        if (cases[c].regular)
            ts_gen_regular(&f, shape, 3, 7, &err);
        else
            ts_gen_fat_tree(&f, 16, 7, &err);
        int exact = 0;
        for (uint64_t seed = 1; seed <= (uint64_t)cases[c].seeds; seed++) {
            run r = simulate(&f, "ethernet", 0, 100 + seed, 0);
            if (r.rc == TS_OK && r.acc.tree_exact && r.nodes_in_tree == f.nnodes)
                exact++;
            else
                diag("%s seed %llu: missing %d extra %d", cases[c].what,
                     (unsigned long long)(100 + seed), r.acc.splits_missing, r.acc.splits_extra);
        }
        ok(exact == cases[c].seeds, "ethernet %s: %d/%d seeds exact", cases[c].what, exact,
           cases[c].seeds);
        ts_fabric_free(&f);
    }
}

/* Small 3-level trees whose top cut lands on the leaves (same-leaf, same-pod and cross-pod
 * RTTs about evenly spaced, as with the testbed's 200 us links): the top region's children are
 * grouped into pods by the RTTs between them (group_top_children), or the pods are lost. And a
 * 2-level tree of four leaves stays flat. */
static void test_small_three_levels(void)
{
    static const int shapes[][3] = {{2, 2, 4}, {2, 2, 8}, {2, 3, 4}, {3, 2, 4}, {1, 4, 4}};
    for (size_t c = 0; c < sizeof shapes / sizeof shapes[0]; c++) {
        for (int testbed = 0; testbed < 2; testbed++) {
            ts_fabric f;
            ts_error err = {{0}};
            ts_model_params p;
            ts_fabric_init(&f);
            if (ts_gen_regular(&f, shapes[c], 3, 7, &err) != TS_OK ||
                ts_model_params_profile(&p, "ethernet", &err) != TS_OK) {
                ok(0, "setup: %s", err.text);
                ts_fabric_free(&f);
                continue;
            }
            if (testbed) {            /* etc/demo/params.yaml: 200 us on every link */
                p.link_latency_us = 200;
                p.link_variation = 0;
            }
            int exact = 0, flagged = 0, seeds = 10;
            for (uint64_t seed = 1; seed <= (uint64_t)seeds; seed++) {
                run r = simulate_method_params(ts_discover_fast, "fast", &f, &p, seed, 0);
                if (r.rc == TS_OK && r.acc.tree_exact)
                    exact++;
                else if (r.rc == TS_OK && (r.nambiguous > 0 || r.partial))
                    flagged++;
                if (!(r.rc == TS_OK && r.acc.tree_exact))
                    diag("%dx%dx%d %s seed %llu: missing %d extra %d", shapes[c][0], shapes[c][1],
                         shapes[c][2], testbed ? "200 us links" : "ethernet",
                         (unsigned long long)seed, r.acc.splits_missing, r.acc.splits_extra);
            }
            /* small trees give few pairs per level: a run may end unsure (a region whose top
             * gap is not significant is reported unresolved), never wrong without saying so */
            ok(exact >= seeds - 2 && exact + flagged == seeds,
               "%d pods x %d leaves x %d nodes, %s: %d/%d seeds exact, the other %d flagged",
               shapes[c][0], shapes[c][1], shapes[c][2], testbed ? "200 us links" : "ethernet",
               exact, seeds, flagged);
            ts_model_params_free(&p);
            ts_fabric_free(&f);
        }
    }
}

/* Plans varied (the engine's plan_seed): partners, padding and batch sizes must hold for any
 * plan, not only for the one a job of each size makes. The 1024-node tree over several plans,
 * and a 2048-node tree of 8 pods x 16 leaves x 16 nodes, whose pods are big enough that the
 * in-fragment padding below the top (pad_inside) leaves thousands of near pairs and lightly
 * loaded far pairs there: exact every time, and without falling back to the additive method
 * (which would take thousands of rounds). */
static void test_varied_plans(void)
{
    static const int shape[] = {8, 16, 16};
    for (int big = 0; big < 2; big++) {
        ts_fabric f;
        ts_error err = {{0}};
        ts_fabric_init(&f);
        if ((big ? ts_gen_regular(&f, shape, 3, 7, &err) : ts_gen_fat_tree(&f, 16, 7, &err)) != TS_OK) {
            ok(0, "setup: %s", err.text);
            ts_fabric_free(&f);
            continue;
        }
        int plans = big ? 3 : 6, good = 0;
        for (int k = 1; k <= plans; k++) {
            simrun_plan_seed = (uint64_t)(40 + k);
            run r = simulate(&f, "ethernet", 0, (uint64_t)(40 + k), 0);
            if (r.rc == TS_OK && r.acc.tree_exact && r.count.rounds <= 200)
                good++;
            else
                diag("%d nodes, plan %d: exact %d, %ld rounds, missing %d extra %d", f.nnodes,
                     40 + k, r.acc.tree_exact, r.count.rounds, r.acc.splits_missing,
                     r.acc.splits_extra);
        }
        simrun_plan_seed = 0;
        ok(good == plans, "ethernet, %d nodes: %d/%d varied plans exact within 200 rounds",
           f.nnodes, good, plans);
        ts_fabric_free(&f);
    }
}

/* The published profiles (doc/params.md) and other realistic numbers from the same sources
 * (a 0.35 us cut-through hop, a level step of 1.4 us; a 1 us hop under a 30 us stack with a
 * wider jitter and 5% of probes waking a core): over 40 runs each of a 128-node fat tree,
 * never a wrong tree reported measured (inexact, not partial and nothing unresolved), and the
 * tree exact where the noise allows. Exact over seeds 1-100, measured 2026-11-25: 100, 100,
 * 0 (all partial), 85 and 98 of 100, 0 wrong; each bound is the count those rates reach in 40
 * runs but once in a hundred (binomial), so a change that only redraws the samples passes.
 * IP over InfiniBand's 0.8 us step under 5.6 us of jitter left the pods' leaves of 4 without a
 * gap, unresolved, until the partition look (fast.c): 296 of seeds 1-300 exact, 2026-11-30,
 * and its bound 36 (5 misses in 40 at that rate: 0.3 %; at 3.4 %, the rate's upper 95 % bound,
 * 1.2 %). (Hosts differing by up to 30% instead of 15% with the 0.35 us hop, measured
 * 2026-11-25: 34 of 40 exact, none wrong and measured; when this test was written, 14/20 and
 * one wrong tree reported measured.) */
static void test_realistic(void)
{
    static const struct {
        const char *profile;
        double link_us, host_var, host_us, skew_us, skew_sigma, power;
        int min_exact;
    } cases[] = {
        {"ethernet-udp", NAN, NAN, NAN, NAN, NAN, 0, 37},
        {"rdma", NAN, NAN, NAN, NAN, NAN, 0, 37},
        {"ipoib-udp", NAN, NAN, NAN, NAN, NAN, 0, 36},
        {"ethernet-udp", 0.35, NAN, NAN, NAN, NAN, 0, 28},
        {"ethernet-udp", 1.0, NAN, 30, 3, 1.0, 0.05, 37},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        int exact = 0, wrong = 0, runs = 40;
        for (uint64_t seed = 1; seed <= (uint64_t)runs; seed++) {
            ts_fabric f;
            ts_error err = {{0}};
            ts_model_params p;
            ts_fabric_init(&f);
            if (ts_gen_fat_tree(&f, 8, 7, &err) != TS_OK ||
                ts_model_params_profile(&p, cases[c].profile, &err) != TS_OK) {
                ok(0, "setup: %s", err.text);
                ts_fabric_free(&f);
                return;
            }
            if (!isnan(cases[c].link_us))
                p.link_latency_us = cases[c].link_us;
            if (!isnan(cases[c].host_var))
                p.host_variation = cases[c].host_var;
            if (!isnan(cases[c].host_us))
                p.host_overhead_us = cases[c].host_us;
            if (!isnan(cases[c].skew_us)) {
                p.jitter_skew_median_us = cases[c].skew_us;
                p.jitter_skew_sigma = cases[c].skew_sigma;
            }
            p.power_prob = cases[c].power;
            run r = simulate_method_params(ts_discover_fast, "fast", &f, &p, seed, 0);
            exact += r.rc == TS_OK && r.acc.tree_exact;
            if (r.rc == TS_OK && !r.acc.tree_exact && !r.partial && r.nambiguous == 0) {
                wrong++;
                diag("%s case %zu seed %llu: wrong and measured (missing %d extra %d)",
                     cases[c].profile, c, (unsigned long long)seed, r.acc.splits_missing,
                     r.acc.splits_extra);
            }
            ts_model_params_free(&p);
            ts_fabric_free(&f);
        }
        ok(wrong == 0 && exact >= cases[c].min_exact,
           "%s case %zu: %d/%d exact (>= %d), %d wrong trees reported measured", cases[c].profile,
           c, exact, runs, cases[c].min_exact, wrong);
    }
}

/* Whether the generator's return rc left fabric f ready; if not, a failed check names why and f
 * is freed. */
static int fabric_ready(ts_fabric *f, int rc, const ts_error *err)
{
    if (rc == TS_OK)
        return 1;
    ok(0, "setup: %s", err->text);
    ts_fabric_free(f);
    return 0;
}

/* One run over RDMA of fabric f (fabric `what` number `which`), counted into *good when its
 * tree is exact and measured (no unresolved region, no unpowered star), into *wrong when it
 * is measured and not exact. */
static void rdma_run(ts_fabric *f, uint64_t seed, const char *what, uint64_t which, int *good,
                     int *wrong)
{
    run r = simulate(f, "rdma", 0, seed, 0);
    int measured = r.rc == TS_OK && !r.partial && r.nambiguous == 0 && r.nunpowered == 0;
    *good += measured && r.acc.tree_exact;
    if (measured && !r.acc.tree_exact) {
        ++*wrong;
        diag("rdma %s %llu seed %llu: wrong and measured", what, (unsigned long long)which,
             (unsigned long long)seed);
    }
}

/* The top of a 128-node fat tree (8 pods of 16) over ten shuffles of the node names: each
 * shuffle puts other physical pairs into the planner's rounds, so the rounds' load on the pod
 * uplinks differs, and with it the look at which the top's gap turns significant (the 4th
 * batch in about half of the runs). Judged on the 3rd batch's margin alone, every RDMA run
 * of shuffle 1 ended unresolved and partial (settle_region): 27 of 30 here. RDMA's load is the
 * larger share of its level step, and its runs differ least from seed to seed: 180 runs over
 * the 10 shuffles and 10 plans were all measured and exact, and 3 failures in 30 fail this
 * (1.3 % at the 1.7 % failure rate that 0 of 180 leaves possible, 2026-11-29). Over kernel
 * UDP the same 10 shuffles, 100 runs, were all measured and exact too (1 of 30 not, here). */
static void test_name_shuffles(void)
{
    int good = 0, wrong = 0, runs = 0;
    for (uint64_t shuffle = 1; shuffle <= 10; shuffle++)
        for (uint64_t seed = 1; seed <= 3; seed++, runs++) {
            ts_fabric f;
            ts_error err = {{0}};
            ts_fabric_init(&f);
            if (!fabric_ready(&f, ts_gen_fat_tree(&f, 8, shuffle, &err), &err))
                return;
            rdma_run(&f, seed, "shuffle", shuffle, &good, &wrong);
            ts_fabric_free(&f);
        }
    ok(wrong == 0 && good >= runs - 2,
       "rdma, 10 shuffles of the names: %d/%d measured and exact (>= %d), %d wrong reported measured",
       good, runs, runs - 2, wrong);
}

/* Trees of other shapes than the fat trees', over RDMA, where every level stands far out of
 * the jitter: two pods of 64 nodes (half of the top's pairs near) and four pods of 64 (a
 * quarter). Before a cut, the offset fit took each node's share of near pairs into its offset
 * (+-14 us where the hosts differ by 0.1): two pods were never exact, four pods exact and never
 * measured (0 of 10 each, 2026-11-30). The second look, on a fit of the region's class on two
 * levels (fit_offsets, second_look), gave 100 of 100 here (seeds 1-50 of each) and on the
 * command line; 3 failures in 20 fail this (2.1 % at the 3 % failure rate that 0 of 100 leaves
 * possible). Four levels (4,4,4,4) came to 48 of 50 here (50 of 50 on the command line) and
 * is left to the bench. */
static void test_other_shapes(void)
{
    static const int shapes[][3] = {{2, 4, 16}, {4, 8, 8}};
    int good = 0, wrong = 0, runs = 0;
    for (size_t sh = 0; sh < sizeof shapes / sizeof shapes[0]; sh++)
        for (uint64_t seed = 1; seed <= 10; seed++, runs++) {
            ts_fabric f;
            ts_error err = {{0}};
            ts_fabric_init(&f);
            if (!fabric_ready(&f, ts_gen_regular(&f, shapes[sh], 3, 7, &err), &err))
                return;
            rdma_run(&f, seed, "shape", sh, &good, &wrong);
            ts_fabric_free(&f);
        }
    ok(wrong == 0 && good >= runs - 2,
       "rdma, two pods of 64 and four pods of 64: %d/%d measured and exact (>= %d), %d wrong "
       "reported measured", good, runs, runs - 2, wrong);
}

/* Where the load adds little to a far pair (a flow penalty of 0.02 us instead of kernel UDP's
 * 0.5: probes smaller than a full frame), the level gap one level down is the level step
 * alone, and two far measurements just above it, of near pairs of a node whose samples fell
 * high, once set the node apart from its own leaf. Over seeds 1-40 of this fabric that
 * reported 3 wrong trees measured (seeds 13, 28, 30); with the first far opinion required in
 * the upper half of the far class, 39 of 40 were exact and none wrong (2026-11-29). Seeds
 * 11-14 keep one of the three. */
static void test_low_load(void)
{
    int exact = 0, wrong = 0, runs = 4;
    for (uint64_t seed = 11; seed < 11 + (uint64_t)runs; seed++) {
        ts_fabric f;
        ts_error err = {{0}};
        ts_model_params p;
        ts_fabric_init(&f);
        if (ts_gen_fat_tree(&f, 16, 7, &err) != TS_OK ||
            ts_model_params_profile(&p, "ethernet-udp", &err) != TS_OK) {
            ok(0, "setup: %s", err.text);
            ts_fabric_free(&f);
            return;
        }
        p.flow_penalty_us = 0.02;
        run r = simulate_method_params(ts_discover_fast, "fast", &f, &p, seed, 0);
        exact += r.rc == TS_OK && r.acc.tree_exact;
        if (r.rc == TS_OK && !r.acc.tree_exact && !r.partial && r.nambiguous == 0) {
            wrong++;
            diag("low load seed %llu: wrong and measured (missing %d extra %d)",
                 (unsigned long long)seed, r.acc.splits_missing, r.acc.splits_extra);
        }
        ts_model_params_free(&p);
        ts_fabric_free(&f);
    }
    ok(wrong == 0 && exact >= runs - 1,
       "ethernet-udp at a flow penalty of 0.02 us, 1024 nodes: %d/%d exact, %d wrong and measured",
       exact, runs, wrong);
}

static void sweep(int seeds, int p, const char *profile)
{
    for (uint64_t seed = 1; seed <= (uint64_t)seeds; seed++) {
        ts_fabric f;
        ts_error err = {{0}};
        ts_fabric_init(&f);
        ts_gen_fat_tree(&f, p, 7, &err);
        run r = simulate(&f, profile, 0, seed, 0);
        diag("sweep %s N=%d seed %llu: exact %d missing %d extra %d probes %ld rounds %ld ctl %ld sim %.2f ms",
             profile, f.nnodes, (unsigned long long)seed, r.acc.tree_exact, r.acc.splits_missing,
             r.acc.splits_extra, r.count.probes, r.count.rounds, r.count.control_steps,
             r.budget_used_us / 1000);
        ts_fabric_free(&f);
    }
}

/* A star is measured only with the power to see a level that matters (settle_star). The
 * emulated cluster's failure: 16 nodes on 3 levels (2 pods x 2 leaves x 4 nodes), 12 us per
 * link (a level step of 48 us a round trip) under kernel UDP's ~280 us of host overhead with
 * heavy jitter and hosts held by a CPU-heavy neighbour. With a few samples per pair no level
 * shows and the whole job used to come out one switch, measured (93 of 100 seeds): now no
 * level is excluded that the data could not see, so it is never a measured star (0 of 100
 * seeds in the simulator, 30 here). The same 16 nodes truly under one switch: a measured star
 * on quiet profiles, and under the noisy one a star left partial, its resolution reported,
 * never measured (0 of 100 seeds). */
static void test_star_power(void)
{
    static const int three[] = {2, 2, 4}, one[] = {16};
    ts_fabric pods, flat;
    ts_error err = {{0}};
    ts_model_params noisy;
    ts_fabric_init(&pods);
    ts_fabric_init(&flat);
    if (ts_gen_regular(&pods, three, 3, 7, &err) != TS_OK ||
        ts_gen_regular(&flat, one, 1, 7, &err) != TS_OK ||
        ts_model_params_profile(&noisy, "ethernet-udp", &err) != TS_OK) {
        ok(0, "setup: %s", err.text);
        return;
    }
    noisy.host_overhead_us = 280;
    noisy.link_latency_us = 12;
    noisy.link_variation = 0;
    noisy.jitter_sigma = 0.3;
    noisy.jitter_exp_mean_us = 30;
    noisy.jitter_skew_median_us = 30;
    noisy.jitter_skew_sigma = 1.0;
    noisy.hold_prob = 0.2;
    noisy.hold_min_us = 10;
    noisy.hold_max_us = 200;
    int seeds = 30, star_measured = 0, wrong_measured = 0, flat_measured = 0, flat_unpowered = 0;
    for (uint64_t seed = 1; seed <= (uint64_t)seeds; seed++) {
        run r = simulate_method_params(ts_discover_fast, "fast", &pods, &noisy, seed, 0);
        int measured = r.rc == TS_OK && !r.partial && r.nambiguous == 0 && r.nunpowered == 0;
        wrong_measured += measured && !r.acc.tree_exact;
        star_measured += measured && r.acc.splits_missing == 6;
        r = simulate_method_params(ts_discover_fast, "fast", &flat, &noisy, seed, 0);
        flat_measured += r.rc == TS_OK && !r.partial && r.nambiguous == 0 && r.nunpowered == 0;
        flat_unpowered += r.rc == TS_OK && r.nunpowered > 0 && r.star_resolution_us > 0;
    }
    ok(star_measured == 0 && wrong_measured == 0,
       "3 levels under 280 us hosts, heavy jitter, holds: %d/%d seeds a measured star, %d "
       "wrong and measured", star_measured, seeds, wrong_measured);
    ok(flat_measured == 0 && flat_unpowered > 0,
       "one switch under the same noise: %d/%d seeds measured, %d unpowered stars reported",
       flat_measured, seeds, flat_unpowered);
    /* One switch on the quiet profiles: its tree is found on each, but it may be measured only
     * where a level of 0.4 us (the least a real fabric's adds) would have shown: under verbs
     * (rdma: measured in 100/100 seeds; below 18 of 20 has a chance under 1e-3); under kernel
     * UDP only where the cap's samples resolved that much (ethernet-udp: a quarter of seeds),
     * otherwise partial with the step it could miss. */
    const char *quiet[] = {"ethernet-udp", "rdma", "ideal-ethernet"};
    const int least_measured[] = {0, 18, 0};
    for (size_t q = 0; q < sizeof quiet / sizeof *quiet; q++) {
        int exact = 0, measured = 0, unsound = 0, n = 20;
        for (uint64_t seed = 1; seed <= (uint64_t)n; seed++) {
            run r = simulate(&flat, quiet[q], 0, seed, 0);
            int m = r.rc == TS_OK && !r.partial && r.nambiguous == 0 && r.nunpowered == 0;
            exact += r.rc == TS_OK && r.acc.tree_exact;
            measured += m;
            /* measured only where a level of 0.4 us would have shown */
            unsound += m && !(r.star_resolution_us <= 0.4);
        }
        ok(exact == n && measured >= least_measured[q] && unsound == 0,
           "one switch, %s: exact in %d/%d seeds, measured in %d, %d without the power they "
           "claim", quiet[q], exact, n, measured, unsound);
    }
    ts_model_params_free(&noisy);
    ts_fabric_free(&pods);
    ts_fabric_free(&flat);
}

/* A site that knows its fabric's least level step (toposcope.yaml level_step_ns) lets a job on
 * one switch be measured once a level that large would have shown. Kernel UDP over Ethernet,
 * where a level adds about 1.6 us a round trip: with that setting one switch is measured (the
 * built-in 0.4 us leaves most such runs partial, test_star_power). Where a level shows, the
 * setting has no say: two leaves under a root (a level of four links' 0.6 us, 2.4 us) and a
 * 3-level tree come out as they do without it, seed by seed, and never wrong and measured. */
static void test_site_level_step(void)
{
    static const int one[] = {16}, two[] = {2, 8}, three[] = {2, 2, 4};
    ts_fabric flat, leaves, pods;
    ts_error err = {{0}};
    ts_fabric_init(&flat);
    ts_fabric_init(&leaves);
    ts_fabric_init(&pods);
    if (ts_gen_regular(&flat, one, 1, 7, &err) != TS_OK || ts_gen_regular(&leaves, two, 2, 7, &err) != TS_OK ||
        ts_gen_regular(&pods, three, 3, 7, &err) != TS_OK) {
        ok(0, "setup: %s", err.text);
        return;
    }
    int n = 20, flat_measured = 0, flat_exact = 0, wrong_measured = 0, differ = 0;
    for (uint64_t seed = 1; seed <= (uint64_t)n; seed++) {
        simrun_least_step_us = 1.6;
        run r = simulate(&flat, "ethernet-udp", 0, seed, 0);
        flat_exact += r.rc == TS_OK && r.acc.tree_exact;
        flat_measured += r.rc == TS_OK && !r.partial && r.nambiguous == 0 && r.nunpowered == 0 &&
                         r.star_resolution_us <= 1.6;
        ts_fabric *deeper[] = {&leaves, &pods};
        for (int d = 0; d < 2; d++) {
            int outcome[2];
            for (int site = 0; site < 2; site++) {
                simrun_least_step_us = site ? 1.6 : 0;
                r = simulate(deeper[d], "ethernet-udp", 0, seed, 0);
                int measured = r.rc == TS_OK && !r.partial && r.nambiguous == 0 && r.nunpowered == 0;
                wrong_measured += measured && !r.acc.tree_exact;
                outcome[site] = (r.rc == TS_OK) + 2 * measured + 4 * r.acc.tree_exact;
            }
            differ += outcome[0] != outcome[1];
        }
    }
    simrun_least_step_us = 0;
    /* 20 of 20 in the simulator's 20 seeds; 18 leaves room for other hardware draws */
    ok(flat_exact == n && flat_measured >= 18,
       "one switch, ethernet-udp, the site's least step 1.6 us: exact in %d/%d seeds, measured "
       "within it in %d", flat_exact, n, flat_measured);
    ok(differ == 0 && wrong_measured == 0,
       "2 and 3 levels: %d of %d runs changed by the setting, %d wrong trees reported measured",
       differ, 2 * n, wrong_measured);
    ts_fabric_free(&flat);
    ts_fabric_free(&leaves);
    ts_fabric_free(&pods);
}

/* Past 48 samples per pair only under a deadline, and within it. One switch of 16 nodes under
 * IPoIB's noise (48 samples per pair do not show whether a level of 0.4 us hides there, so the
 * star stays unpowered and the run doubles as far as it may): without a budget it stops at 48
 * samples per pair (stages of 3, 6, ... 48); under 1 s of virtual time it goes on while the
 * doubled stage fits in half of what is left, and ends within the budget. Never a wrong tree
 * measured. (The most samples a pair's measurement took tells the stages apart: a stage may
 * run more cycles than one tournament's, so its probes are no fixed count.) */
static void test_doubling_deadline(void)
{
    static const int one[] = {16};
    ts_fabric flat;
    ts_error err = {{0}};
    ts_fabric_init(&flat);
    if (ts_gen_regular(&flat, one, 1, 7, &err) != TS_OK) {
        ok(0, "setup: %s", err.text);
        return;
    }
    int n = 20, past_unbounded = 0, past_bounded = 0, late = 0, wrong = 0;
    for (uint64_t seed = 1; seed <= (uint64_t)n; seed++) {
        run r = simulate(&flat, "ipoib-udp", 0, seed, 0);
        run b = simulate(&flat, "ipoib-udp", 0, seed, 1e6);
        past_unbounded += r.count.samples_most > 48;
        past_bounded += b.count.samples_most > 48;
        late += b.budget_used_us > 1e6;
        wrong += b.rc == TS_OK && !b.acc.tree_exact && !b.partial && b.nambiguous == 0;
    }
    ok(past_unbounded == 0 && past_bounded == n && late == 0 && wrong == 0,
       "one switch, ipoib-udp: past 48 samples per pair in %d/%d runs under a 1 s budget, %d "
       "without one; %d late, %d wrong and measured", past_bounded, n, past_unbounded, late, wrong);
    ts_fabric_free(&flat);

    /* Two leaves of two under one switch (kernel UDP: 48 samples per pair leave them
     * unresolved): no number of samples splits four nodes (EDGE_MIN), so a budget buys them
     * nothing past 48, and every run probes as it does without one. */
    static const int pairs[] = {2, 2};
    ts_fabric tiny;
    ts_fabric_init(&tiny);
    if (ts_gen_regular(&tiny, pairs, 2, 7, &err) != TS_OK) {
        ok(0, "setup: %s", err.text);
        return;
    }
    int same = 0;
    for (uint64_t seed = 1; seed <= (uint64_t)n; seed++) {
        run r = simulate(&tiny, "ethernet-udp", 0, seed, 0);
        run b = simulate(&tiny, "ethernet-udp", 0, seed, 1e6);
        same += r.rc == TS_OK && b.rc == TS_OK && r.count.probes == b.count.probes &&
                r.count.samples == b.count.samples;
    }
    ok(same == n, "four nodes in two leaves, ethernet-udp: a 1 s budget changes no run's probes "
       "(%d/%d the same)", same, n);
    ts_fabric_free(&tiny);
}

int main(void)
{
    const char *sw = getenv("TS_FAST_SWEEP");
    if (sw) {
        sweep(atoi(sw), getenv("TS_FAST_P") ? atoi(getenv("TS_FAST_P")) : 16,
              getenv("TS_FAST_PROFILE") ? getenv("TS_FAST_PROFILE") : "ethernet");
        ok(1, "sweep");
        return done_testing();
    }
    test_fat_trees("ethernet");
    test_fat_trees("infiniband");
    test_other_shapes();
    test_site_level_step();
    test_doubling_deadline();
    test_realistic();
    test_name_shuffles();
    test_low_load();
    test_small_leaves();
    test_leaves_of_two();
    test_star_false_alarms();
    test_tiny_jobs();
    test_fat_tree_1024("ethernet", 150);
    test_fat_tree_1024("infiniband", 15);
    test_light_rounds();
    test_varied_plans();
    test_small_three_levels();
    test_irregular();
    test_unresolved_keeps_splits();
    test_small_budget();
    test_budget_below_a_round();
    test_ambiguous();
    test_star_power();
    return done_testing();
}
