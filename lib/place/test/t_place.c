/* Placement: each policy's order, multi-core ranks, ranks per core and per node, partial nodes,
 * groups and leaders, measure-only, every emitter (the rankfile parsed back: each rank's cores
 * are allowed and distinct), and 65 536 ranks on 1024 nodes of 64 cores checked rank by rank. */
#include <stdlib.h>
#include <string.h>
#include "tap.h"
#include "hwdata.h"
#include "toposcope/emit.h"
#include "toposcope/gen.h"
#include "toposcope/groups.h"
#include "toposcope/place.h"
#include "toposcope/treeyaml.h"
#include "placeset.h"
#include "toposcope/jobplace.h"
#include "toposcope/mpiplan.h"

static const char *two_leaves =
    "SwitchName=top Switches=leafa,leafb\nSwitchName=leafa Nodes=n[1-2]\nSwitchName=leafb Nodes=n[3-4]\n";

static int first_core(const setup *s, int r)
{
    int n;
    return ts_placement_cores(&s->pl, r, &n)[0];
}

static const char *slot(const setup *s, int r)
{
    static char buf[2][128];
    static int which;
    ts_emit_slot(&s->pl, r, buf[which ^= 1], sizeof buf[0]);
    return buf[which];
}

/* ---- the rankfile, parsed back ---- */

/* Parse "rank R=HOST slot=P:C[-D][,P:C[-D]]..." lines; check every rank once, its host, and that
 * its cores are usable on that node and used by no other rank there. */
static int check_rankfile(const setup *s, const char *text, char *why, size_t max)
{
    int nranks = s->pl.nranks, ncores = s->hw.ncores;
    char *seen = calloc((size_t)nranks, 1);
    int *owner = malloc(sizeof(int) * (size_t)(s->f.nnodes * ncores));
    for (int i = 0; i < s->f.nnodes * ncores; i++)
        owner[i] = -1;
    int lines = 0, bad = 0;
    const char *p = text;
    while (*p && !bad) {
        const char *eol = strchr(p, '\n');
        char line[512];
        size_t n = eol ? (size_t)(eol - p) : strlen(p);
        snprintf(line, sizeof line, "%.*s", (int)n, p);
        p = eol ? eol + 1 : p + n;
        int r, at = 0;
        char hostname[256], slots[256];
        if (sscanf(line, "rank %d=%255[^ ] slot=%255s%n", &r, hostname, slots, &at) != 3 || line[at]) {
            snprintf(why, max, "line %d does not parse: '%.100s'", lines + 1, line);
            bad = 1;
            break;
        }
        lines++;
        if (r < 0 || r >= nranks || seen[r]) {
            snprintf(why, max, "rank %d out of range or twice", r);
            bad = 1;
            break;
        }
        seen[r] = 1;
        int node = s->f.v[ts_fabric_find(&s->f, hostname)].node_index;
        if (ts_fabric_find(&s->f, hostname) == TS_NONE || node != s->pl.rank[r].node) {
            snprintf(why, max, "rank %d on '%.64s', placed on '%.64s'", r, hostname, host(s, r));
            bad = 1;
            break;
        }
        int cores = 0;
        for (char *item = strtok(slots, ","); item && !bad; item = strtok(NULL, ",")) {
            int pkg, lo, hi;
            if (sscanf(item, "%d:%d-%d", &pkg, &lo, &hi) != 3) {
                if (sscanf(item, "%d:%d", &pkg, &lo) != 2) {
                    snprintf(why, max, "rank %d: slot item '%s'", r, item);
                    bad = 1;
                    break;
                }
                hi = lo;
            }
            for (int cip = lo; cip <= hi && !bad; cip++) {
                int c = -1;
                for (int k = 0; k < ncores; k++)
                    if (s->hw.core[k].package == pkg && s->hw.core[k].core_in_package == cip)
                        c = k;
                if (c < 0 || !s->hw.core[c].usable) {
                    snprintf(why, max, "rank %d: core %d:%d is not usable", r, pkg, cip);
                    bad = 1;
                } else if (owner[node * ncores + c] >= 0 && s->pl.ranks_per_core == 1) {
                    snprintf(why, max, "rank %d: core %d:%d already belongs to rank %d", r, pkg, cip,
                             owner[node * ncores + c]);
                    bad = 1;
                } else {
                    owner[node * ncores + c] = r;
                    cores++;
                }
            }
        }
        if (!bad && cores != s->pl.cpus_per_rank) {
            snprintf(why, max, "rank %d has %d cores, not %d", r, cores, s->pl.cpus_per_rank);
            bad = 1;
        }
    }
    if (!bad && lines != nranks) {
        snprintf(why, max, "%d lines for %d ranks", lines, nranks);
        bad = 1;
    }
    free(seen);
    free(owner);
    return !bad;
}

static void rankfile_ok(const setup *s, const char *what)
{
    char why[256] = "";
    char *text = emit_to_string(ts_emit_rankfile, &s->pl);
    if (!ok(check_rankfile(s, text, why, sizeof why), "%s: the rankfile parses back, every core usable and distinct", what))
        diag("  %s", why);
    free(text);
}

/* ---- policies ---- */

static void test_compact(void)
{
    setup s;
    ts_policy p = policy(TS_PLACE_COMPACT, 0, 1, 1, 0);
    run(&s, two_leaves, "2pack-2numa-8core-ht.xml", &p, 40);
    ok(s.rc == TS_OK, "compact: 40 ranks on 4 nodes of 32 cores %s", s.err.text);
    is_int(s.pl.capacity, 128, "128 slots");
    int consecutive = 1;
    for (int r = 0; r < 32; r++)
        consecutive = consecutive && !strcmp(host(&s, r), "n1") && first_core(&s, r) == r;
    ok(consecutive, "ranks 0-31 fill n1 core by core");
    ok(!strcmp(host(&s, 32), "n2") && !strcmp(host(&s, 39), "n2"), "ranks 32-39 go to n2, n1's sibling on leafa");
    ok(!strcmp(slot(&s, 15), "0:15") && !strcmp(slot(&s, 16), "1:0"), "package 0 fills before package 1 (%s, %s)",
       slot(&s, 15), slot(&s, 16));
    is_int(s.pl.node_ranks[2], 0, "nothing on n3");
    int leaf = ts_groups_level(&s.g, "leaf"), node = ts_groups_level(&s.g, "node");
    int pkg = ts_groups_level(&s.g, "package"), numa = ts_groups_level(&s.g, "numa");
    ok(leaf == 1 && node == 2 && pkg == 3 && numa == 4 && ts_groups_level(&s.g, "core") == 6, "levels job, leaf, node, package, numa, l3, core");
    is_int(s.g.level[leaf].ngroups, 1, "one leaf group used");
    is_int(s.g.level[node].ngroups, 2, "two node groups");
    is_int(s.g.group[32 * s.g.nlevels + node], 1, "rank 32 is in node group 1");
    ok(s.g.leader[32 * s.g.nlevels + node] && !s.g.leader[32 * s.g.nlevels + leaf], "and leads it, but not its leaf");
    ok(s.g.leader[8 * s.g.nlevels + numa] && !s.g.leader[8 * s.g.nlevels + pkg], "rank 8 leads NUMA node 1 of package 0");
    int leaders = 0;
    for (int r = 0; r < 40; r++)
        leaders += s.g.leader[r * s.g.nlevels + pkg];
    is_int(leaders, 3, "3 package leaders (ranks 0, 16, 32)");
    rankfile_ok(&s, "compact");
    done(&s);
}

/* An inferred root may hold nodes and one switch (distances cannot tell that from two leaves
 * under a spine); compact still fills the root's own nodes in a row, then the switch's. */
static void test_compact_root_with_nodes(void)
{
    setup s;
    ts_policy p = policy(TS_PLACE_COMPACT, 0, 1, 1, 1);
    run(&s, "SwitchName=s2 Nodes=n[2,4,6,8]\nSwitchName=s1 Switches=s2 Nodes=n[1,3,5,7]\n",
        "1pack-4core.xml", &p, 8);
    ok(s.rc == TS_OK, "compact on a root with nodes and a switch: 8 ranks, one per node %s", s.err.text);
    char order[64] = "";
    for (int r = 0; r < 8 && s.rc == TS_OK; r++)
        snprintf(order + strlen(order), sizeof order - strlen(order), "%s%s", r ? " " : "", host(&s, r));
    is_str(order, "n1 n3 n5 n7 n2 n4 n6 n8", "the root's own nodes in a row, then the switch's");
    done(&s);
}

static void test_spread(void)
{
    setup s;
    ts_policy p = policy(TS_PLACE_SPREAD, 0, 1, 1, 0);
    run(&s, two_leaves, "2pack-2numa-8core-ht.xml", &p, 20);
    ok(s.rc == TS_OK, "spread: 20 ranks %s", s.err.text);
    const char *want[] = { "n1", "n3", "n2", "n4", "n1", "n3" };
    int order = 1;
    for (int r = 0; r < 6; r++)
        order = order && !strcmp(host(&s, r), want[r]);
    ok(order, "round-robin over leaf switches, then over their nodes: n1 n3 n2 n4 n1 n3");
    /* on n1: ranks 0, 4, 8, 12, 16 */
    ok(first_core(&s, 0) == 0 && first_core(&s, 4) == 16 && first_core(&s, 8) == 8 && first_core(&s, 12) == 24 &&
           first_core(&s, 16) == 1,
       "inside n1: package 0, package 1, then the other NUMA node of each, then the next core (%d %d %d %d %d)",
       first_core(&s, 0), first_core(&s, 4), first_core(&s, 8), first_core(&s, 12), first_core(&s, 16));
    for (int n = 0; n < 4; n++)
        is_int(s.pl.node_ranks[n], 5, "5 ranks on node %d", n);
    rankfile_ok(&s, "spread");
    done(&s);

    /* a leaf that fills up is skipped */
    const char *uneven = "SwitchName=top Switches=la,lb\nSwitchName=la Nodes=a1\nSwitchName=lb Nodes=b[1-3]\n";
    run(&s, uneven, "1pack-4core.xml", &p, 10);
    ok(s.rc == TS_OK, "spread over uneven leaves %s", s.err.text);
    int on_a = 0;
    for (int r = 0; r < 10; r++)
        on_a += !strcmp(host(&s, r), "a1");
    is_int(on_a, 4, "the one-node leaf takes its 4 slots, the rest go to the other");
    ok(!strcmp(host(&s, 8), "b2") && !strcmp(host(&s, 9), "b3"), "after it is full the other leaf keeps its round-robin");
    rankfile_ok(&s, "spread, uneven");
    done(&s);
}

static void test_block(void)
{
    setup s;
    ts_policy p = policy(TS_PLACE_BLOCK, 3, 1, 1, 0);
    run(&s, two_leaves, "1pack-4core.xml", &p, 10);
    ok(s.rc == TS_OK, "block of 3: 10 ranks on 4 nodes of 4 cores %s", s.err.text);
    const char *want[] = { "n1", "n1", "n1", "n3", "n3", "n3", "n1", "n2", "n2", "n3" };
    int order = 1;
    for (int r = 0; r < 10; r++)
        order = order && !strcmp(host(&s, r), want[r]);
    ok(order, "blocks 0-2 on leafa, 3-5 on leafb, 6-8 on leafa (n1's last core, then n2), 9 on leafb");
    ok(!strcmp(slot(&s, 9), "0:3"), "the one-rank last block fills n3's last core, compact inside its leaf (%s)", slot(&s, 9));
    is_int(s.pl.node_ranks[3], 0, "n4 stays empty");
    rankfile_ok(&s, "block");
    done(&s);

    p = policy(TS_PLACE_BLOCK, 5, 1, 1, 0);
    run(&s, two_leaves, "1pack-4core.xml", &p, 15);
    ok(s.rc == TS_OK, "block of 5: 15 ranks in leaves of 8 slots %s", s.err.text);
    int a = 0;
    for (int r = 0; r < 5; r++)
        a += !strcmp(host(&s, r), "n1") || !strcmp(host(&s, r), "n2");
    is_int(a, 5, "block 0 whole on leafa");
    ok(!strcmp(host(&s, 10), "n2") && !strcmp(host(&s, 13), "n4"), "block 2 fits no leaf whole: it spills over the free slots (%s, %s)",
       host(&s, 10), host(&s, 13));
    rankfile_ok(&s, "block, spilled");
    done(&s);
}

static void test_cores_per_rank(void)
{
    setup s;
    ts_policy p = policy(TS_PLACE_COMPACT, 0, 4, 1, 0);
    run(&s, two_leaves, "2pack-2numa-8core-ht.xml", &p, 0);
    ok(s.rc == TS_OK, "4 cores per rank, every slot %s", s.err.text);
    is_int(s.pl.nranks, 32, "8 ranks per node");
    ok(!strcmp(slot(&s, 0), "0:0-3") && !strcmp(slot(&s, 5), "1:4-7"), "rank 0 slot=0:0-3, rank 5 slot=1:4-7 (%s, %s)",
       slot(&s, 0), slot(&s, 5));
    rankfile_ok(&s, "4 cores per rank");
    done(&s);

    p = policy(TS_PLACE_COMPACT, 0, 3, 1, 0);
    run(&s, two_leaves, "2pack-2numa-8core-ht.xml", &p, 10);
    ok(s.rc == TS_OK, "3 cores per rank %s", s.err.text);
    ok(!strcmp(slot(&s, 2), "0:6-7,0:14"), "the NUMA nodes' leftovers pool into one rank inside the package (%s)", slot(&s, 2));
    ok(!strcmp(slot(&s, 3), "0:8-10"), "then the second NUMA node's own groups (%s)", slot(&s, 3));
    is_int(s.pl.capacity, 40, "5 ranks per package, 10 per node (2 cores idle)");
    rankfile_ok(&s, "3 cores per rank");
    done(&s);

    p = policy(TS_PLACE_COMPACT, 0, 17, 1, 0);
    run(&s, two_leaves, "2pack-2numa-8core-ht.xml", &p, 1);
    is_int(s.rc, TS_EINPUT, "17 cores per rank do not fit a 16-core package");
    ok(strstr(s.err.text, "no package has 17 usable cores") != NULL, "and it says so: %s", s.err.text);
    done(&s);
}

static void test_limits(void)
{
    setup s;
    ts_policy p = policy(TS_PLACE_COMPACT, 0, 1, 2, 0);
    run(&s, two_leaves, "1pack-4core.xml", &p, 0);
    ok(s.rc == TS_OK && s.pl.nranks == 32, "2 ranks per core: 32 slots on 16 cores");
    ok(first_core(&s, 0) == 0 && first_core(&s, 1) == 0 && first_core(&s, 2) == 1, "compact: ranks 0 and 1 share core 0");
    rankfile_ok(&s, "2 ranks per core");
    done(&s);

    p = policy(TS_PLACE_COMPACT, 0, 1, 1, 3);
    run(&s, two_leaves, "1pack-4core.xml", &p, 0);
    ok(s.rc == TS_OK && s.pl.nranks == 12, "ranks_per_node 3: 12 slots");
    ok(!strcmp(host(&s, 3), "n2"), "n1 stops after 3 ranks");
    done(&s);

    p = policy(TS_PLACE_COMPACT, 0, 1, 1, 0);
    run(&s, two_leaves, "1pack-4core.xml", &p, 17);
    is_int(s.rc, TS_EINPUT, "17 ranks on 16 slots are refused");
    ok(strstr(s.err.text, "17 ranks do not fit: the 4 nodes offer 16 slots") != NULL, "naming the numbers: %s", s.err.text);
    done(&s);
}

static void test_partial(void)
{
    setup s;
    ts_policy p = policy(TS_PLACE_COMPACT, 0, 1, 1, 0);
    run(&s, two_leaves, "partial-2pack.xml", &p, 0);
    ok(s.rc == TS_OK && s.pl.nranks == 32, "a partial allocation (8 of 32 cores per node): 32 slots %s", s.err.text);
    ok(!strcmp(slot(&s, 3), "0:3") && !strcmp(slot(&s, 4), "1:0") && !strcmp(slot(&s, 7), "1:3"),
       "only the allowed cores, numbered as on the whole machine (%s %s %s)", slot(&s, 3), slot(&s, 4), slot(&s, 7));
    rankfile_ok(&s, "partial, compact");
    done(&s);
    p = policy(TS_PLACE_SPREAD, 0, 1, 1, 0);
    run(&s, two_leaves, "partial-2pack.xml", &p, 32);
    ok(s.rc == TS_OK, "spread on partial nodes %s", s.err.text);
    rankfile_ok(&s, "partial, spread");
    p = policy(TS_PLACE_COMPACT, 0, 4, 1, 0);
    done(&s);
    run(&s, two_leaves, "partial-2pack.xml", &p, 0);
    ok(s.rc == TS_OK && s.pl.nranks == 8, "4 cores per rank on partial nodes: 2 per node");
    rankfile_ok(&s, "partial, 4 cores per rank");
    done(&s);
}

static void test_measure_only(void)
{
    setup s;
    ts_policy p = policy(TS_PLACE_MEASURE_ONLY, 0, 1, 1, 0);
    run(&s, two_leaves, "1pack-4core.xml", &p, 0);
    ok(s.rc == TS_OK && s.pl.nranks == 0, "measure-only places no rank");
    ok(s.g.members_are_nodes && s.g.nmembers == 4, "its hints are per node");
    is_int(s.g.nlevels, 3, "levels job, leaf, node");
    is_int(s.g.group[2 * 3 + 1], 1, "n3 is in leaf group 1");
    ok(s.g.leader[2 * 3 + 1] && !s.g.leader[3 * 3 + 1], "n3 leads it, n4 does not");
    done(&s);
}

/* ---- the other emitters ---- */

static void test_emitters(void)
{
    setup s;
    ts_policy p = policy(TS_PLACE_SPREAD, 0, 1, 1, 0);
    run(&s, two_leaves, "1pack-4core.xml", &p, 6);
    char *hosts = emit_to_string(ts_emit_hostfile, &s.pl);
    ok(!strcmp(hosts, "n1\nn3\nn2\nn4\nn1\nn3\n"), "hostfile: one host per rank in rank order");
    char *machines = emit_to_string(ts_emit_machinefile, &s.pl);
    ok(!strcmp(machines, "n1:2\nn2:1\nn3:2\nn4:1\n"), "machinefile: HOST:COUNT in tree order");
    free(hosts);
    free(machines);

    ts_model_params mp;
    ts_error err;
    memset(&mp, 0, sizeof mp);
    ts_model_params_profile(&mp, "ethernet", &err);
    for (int i = 0; i < s.f.nvert; i++)
        s.f.v[i].link_us = s.f.v[i].kind == TS_NODE ? 1.0 + mp.host_overhead_us / 4 : 2.0;
    ok(ts_groups_logp(&s.g, &s.h, &mp, &err) == TS_OK, "LogP estimates");
    /* leaf: node - leaf - node = 2 access links, each 1 us + a quarter of the host part */
    is_num(s.g.level[1].logp.L_us, 2.0, 1e-9, "leaf level: L = two 1 us access links");
    is_num(s.g.level[0].logp.L_us, 6.0, 1e-9, "job level: L adds the two 2 us uplinks");
    is_num(s.g.level[0].logp.o_s_us, mp.host_overhead_us / 4, 1e-9, "o_s = host overhead / 4");
    is_num(s.g.level[0].logp.g_us, mp.host_overhead_us / 4 + mp.flow_penalty_us, 1e-9, "g = o_s + flow penalty");
    ok(!strcmp(s.g.level[0].logp.source, "tree") && s.g.level[1].logp.pairs == 2, "from the tree, one pair per leaf");
    /* n1 and n3 hold two ranks each, on two cores under one L3: they meet at l3 only */
    ok(isnan(s.g.level[5].logp.L_us) && !strcmp(s.g.level[5].logp.source, "none") &&
       s.g.level[5].logp.reason && strstr(s.g.level[5].logp.reason, "not measured") &&
       strstr(s.g.level[5].logp.reason, "intra_node"),
       "l3 without intra_node in the model: null, and the reason names what to give: %s", s.g.level[5].logp.reason);
    ok(isnan(s.g.level[2].logp.L_us) && s.g.level[2].logp.reason &&
       !strcmp(s.g.level[2].logp.reason, "no two members of the job meet at this level") &&
       s.g.level[6].logp.reason && !strcmp(s.g.level[6].logp.reason, s.g.level[2].logp.reason),
       "node and core: no two ranks meet there (one package; no shared core)");
    ok(s.g.level[0].logp.reason == NULL && s.g.level[1].logp.reason == NULL, "levels with an estimate give no reason");
    ts_model_params mi = mp;
    for (int k = 0; k < TS_INTRA_LEVELS; k++)
        mi.intra_latency_us[k] = 0.1 * (TS_INTRA_LEVELS - k);
    mi.intra_overhead_us = 0.25;
    ok(ts_groups_logp(&s.g, &s.h, &mi, &err) == TS_OK, "LogP with the model's intra_node values");
    is_num(s.g.level[5].logp.L_us, 0.2, 1e-9, "l3: L = intra_node.latency_us.l3");
    ok(s.g.level[5].logp.o_s_us == 0.25 && s.g.level[5].logp.o_r_us == 0.25 && s.g.level[5].logp.g_us == 0.25 &&
       !strcmp(s.g.level[5].logp.source, "model") && s.g.level[5].logp.pairs == 2 && !s.g.level[5].logp.reason,
       "o_s = o_r = g = intra_node.overhead_us, source model, 2 pairs (n1, n3)");
    ok(isnan(s.g.level[3].logp.L_us) && s.g.level[3].logp.reason && isnan(s.g.level[6].logp.L_us),
       "package and core stay null: no pair of ranks meets there, whatever the model says");
    mi.intra_overhead_us = NAN;
    ts_groups_logp(&s.g, &s.h, &mi, &err);
    ok(isnan(s.g.level[5].logp.L_us) && s.g.level[5].logp.reason, "latency without overhead: still null");
    ts_groups_logp(&s.g, &s.h, &mp, &err);
    for (int i = 0; i < s.f.nvert; i++)
        s.f.v[i].link_us = NAN;
    ts_groups_logp(&s.g, &s.h, &mp, &err);
    ok(!strcmp(s.g.level[0].logp.source, "model") && s.g.level[0].logp.L_us > 0, "without latencies in the tree: the model's");

    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ts_emit_hints_yaml(&s.h, &s.pl, &s.g, &p, f);
    fclose(f);
    ok(strstr(buf, "  - {name: leaf, depth: 1, groups: 2, logp: {") != NULL, "hints.yaml lists the levels");
    ok(strstr(buf, "  - {rank: 1, node: \"n3\", slot: \"0:0\", cpus: \"0\", group: [0, 1, 1, 1, 1, 1, 1], leader: [0, 1, 1, 1, 1, 1, 1]}") != NULL,
       "and per rank its groups and leadership");
    free(buf);
    f = open_memstream(&buf, &len);
    ts_emit_paths paths = { "/o/hints.yaml", "/o/rankfile", "/o/hostfile", "/o/machinefile", NULL, NULL };
    p.export_mca = 1;
    ts_mpi_plan mpi;
    char note[256];
    ts_mpi_plan_make(&mpi, &s.pl, &p, NULL, note, sizeof note, &err);
    ts_emit_hints_env(&s.h, &s.pl, &s.g, &p, &paths, &mpi, 4, f);
    fclose(f);
    ok(strstr(buf, "TOPOSCOPE_RANK=4\n") && strstr(buf, "TOPOSCOPE_NODE=n1\n") && strstr(buf, "TOPOSCOPE_GROUP_LEAF=0\n") &&
           strstr(buf, "TOPOSCOPE_LEADER_NODE=0\n") && strstr(buf, "TOPOSCOPE_CPUS=1\n"),
       "hints.env for rank 4: its node, CPUs, groups and leadership");
    ok(strstr(buf, "OMPI_MCA_rmaps_rank_file_path=/o/rankfile\n") != NULL, "and the MCA variable when the policy exports it");
    ok(!strstr(buf, "PRTE_MCA_"), "but not PRRTE's mapping policy, which makes Open MPI 5.0's mpirun exit 251");
    ok(!strstr(buf, "HYDRA_") && !strstr(buf, "I_MPI_"), "but not MPICH's nor Intel MPI's, which the policy leaves off");
    ts_mpi_plan_free(&mpi);
    free(buf);
    f = open_memstream(&buf, &len);
    ts_emit_tree_text(&s.h, &s.pl, f);
    fclose(f);
    ok(strstr(buf, "Switch top: ranks 0-5\n  Switch leafa: 3 ranks in 0..4\n    Node n1: 2 ranks in 0..4\n") != NULL,
       "tree.txt: switches and nodes with their ranks");
    ok(strstr(buf, "      Package L#0 + NUMANode L#0: 2 ranks in 0..4\n        Core L#0 (PU 0): rank 0\n") != NULL,
       "and the merged package with its cores");
    free(buf);
    f = open_memstream(&buf, &len);
    ts_emit_tree_dot(&s.h, &s.pl, f);
    fclose(f);
    ok(strstr(buf, "digraph toposcope {") && strstr(buf, "v0 -> v1;") && strstr(buf, "label=\"n1\\n2 ranks in 0..4\""),
       "tree.dot: vertices, edges, labels");
    free(buf);
    ts_model_params_free(&mp);
    done(&s);
}

/* ---- 65 536 ranks: correctness at the bench's size, not its time ---- */

static void test_big(void)
{
    ts_fabric f;
    ts_hwtree hw;
    ts_error err;
    ts_fabric_init(&f);
    ok(ts_gen_fat_tree(&f, 16, 7, &err) == TS_OK && f.nnodes == 1024, "a 1024-node fat tree");
    ok(ts_hwtree_load_xml(&hw, test_data("hwloc", "64core.xml"), NULL, &err) == TS_OK, "64-core nodes");
    const ts_hwtree **of_node = malloc(sizeof *of_node * 1024);
    for (int i = 0; i < 1024; i++)
        of_node[i] = &hw;
    ts_hierarchy h;
    ok(ts_hierarchy_build(&h, &f, of_node, &err) == TS_OK, "the hierarchy builds");
    for (int kind = TS_PLACE_COMPACT; kind <= TS_PLACE_BLOCK; kind++) {
        ts_policy p = policy((ts_placement_kind)kind, kind == TS_PLACE_BLOCK ? 100 : 0, 1, 1, 0);
        ts_place_options o = { 65536, 0 };
        ts_placement pl;
        ts_groups g;
        int rc = ts_place(&h, &p, &o, &pl, &err);
        ok(rc == TS_OK && pl.nranks == 65536, "%s: 65 536 ranks placed", ts_placement_kind_name(p.kind));
        /* every (node, core) exactly once */
        unsigned char *used = calloc(1024 * 64, 1);
        int twice = 0, unusable = 0;
        for (int r = 0; r < pl.nranks; r++) {
            int n;
            const int *cores = ts_placement_cores(&pl, r, &n);
            twice += used[pl.rank[r].node * 64 + cores[0]]++ > 0;
            unusable += !hw.core[cores[0]].usable;
        }
        ok(twice == 0 && unusable == 0, "%s: every core of every node used once", ts_placement_kind_name(p.kind));
        free(used);
        ok(ts_groups_compute(&g, &h, &pl, &err) == TS_OK, "%s: groups", ts_placement_kind_name(p.kind));
        int leaf = ts_groups_level(&g, "leaf"), node = ts_groups_level(&g, "node"), core = ts_groups_level(&g, "core");
        ok(g.level[leaf].ngroups == 128 && g.level[node].ngroups == 1024 && g.level[core].ngroups == 65536,
           "%s: 128 leaf, 1024 node and 65 536 core groups", ts_placement_kind_name(p.kind));
        long leaders = 0;
        for (int r = 0; r < 65536; r++)
            leaders += g.leader[(size_t)r * g.nlevels + node];
        is_int(leaders, 1024, "%s: one leader per node", ts_placement_kind_name(p.kind));
        if (kind == TS_PLACE_SPREAD)
            ok(pl.rank[0].node != pl.rank[1].node &&
                   h.v[h.node_vertex[pl.rank[0].node]].parent != h.v[h.node_vertex[pl.rank[1].node]].parent,
               "spread: ranks 0 and 1 on different leaf switches");
        ts_groups_free(&g);
        ts_placement_free(&pl);
    }
    ts_hierarchy_free(&h);
    free(of_node);
    ts_hwtree_free(&hw);
    ts_fabric_free(&f);
}

/* ---- ts_place_job: the same pipeline in one call ---- */

static void test_place_job(void)
{
    setup s;
    ts_policy p = policy(TS_PLACE_SPREAD, 0, 1, 1, 0);
    run(&s, two_leaves, "2pack-2numa-8core-ht.xml", &p, 40);
    ts_model_params mp;
    ts_error err = {{0}};
    ok(ts_model_params_profile(&mp, "ethernet", &err) == TS_OK, "the ethernet model");
    ts_place_options o = { 40, 0 };
    ts_job_placement jp;
    memset(&jp, 0xA5, sizeof jp);       /* an output: whatever the caller's memory held */
    int rc = ts_place_job(&jp, &s.f, s.of_node, &p, &o, &mp, &err);
    ok(rc == TS_OK && s.rc == TS_OK, "ts_place_job: 40 ranks spread %s", err.text);
    int same = jp.placement.nranks == s.pl.nranks && jp.groups.nlevels == s.g.nlevels &&
               jp.hier.nnodes == s.h.nnodes;
    for (int r = 0; same && r < s.pl.nranks; r++) {
        same = jp.placement.rank[r].node == s.pl.rank[r].node;
        for (int l = 0; same && l < s.g.nlevels; l++)
            same = jp.groups.group[(size_t)r * s.g.nlevels + l] == s.g.group[(size_t)r * s.g.nlevels + l] &&
                   jp.groups.leader[(size_t)r * s.g.nlevels + l] == s.g.leader[(size_t)r * s.g.nlevels + l];
    }
    ok(same, "the same ranks, nodes, groups and leaders as the steps one by one");
    ts_job_placement_free(&jp);

    o.nranks = 1000;
    rc = ts_place_job(&jp, &s.f, s.of_node, &p, &o, &mp, &err);
    ok(rc == TS_EINPUT && strstr(err.text, "1000 ranks do not fit") != NULL, "too many ranks: refused, saying why: %s",
       err.text);
    ts_job_placement_free(&jp);        /* and what it leaves is safe to free */
    ts_model_params_free(&mp);
    done(&s);
}

int main(void)
{
    test_compact();
    test_compact_root_with_nodes();
    test_spread();
    test_block();
    test_cores_per_rank();
    test_limits();
    test_partial();
    test_measure_only();
    test_emitters();
    test_big();
    test_place_job();
    return done_testing();
}
