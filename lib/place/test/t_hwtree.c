/* The intra-node tree from hwloc XML shapes and the live machine, CPU restrictions, and the
 * merged hierarchy (switches, nodes, packages, NUMA, L3, cores) with single-child collapse. */
#include <stdlib.h>
#include <string.h>
#include "tap.h"
#include "hwdata.h"
#include "toposcope/hier.h"
#include "toposcope/hwtree.h"

static int load(ts_hwtree *t, const char *file, const char *cpus, ts_error *err)
{
    err->text[0] = '\0';
    return ts_hwtree_load_xml(t, test_data("hwloc", file), cpus, err);
}

static void test_shapes(void)
{
    ts_hwtree t;
    ts_error err = {{0}};
    char cpus[64];

    ok(load(&t, "2pack-2numa-8core-ht.xml", NULL, &err) == TS_OK, "2 packages x 2 NUMA x 8 cores x 2 PUs loads %s", err.text);
    is_int(t.ncores, 32, "32 cores");
    is_int(t.nusable, 32, "all usable");
    is_int(t.npackages, 2, "2 packages");
    is_int(t.nnuma, 4, "4 NUMA nodes");
    is_int(t.nl3, 4, "4 L3 caches");
    is_int(t.l3_above_numa, 0, "each L3 inside one NUMA node");
    is_int(t.core[16].package, 1, "core 16 is on package 1");
    is_int(t.core[16].core_in_package, 0, "and is core 0 there (rankfile slot=1:0)");
    is_int(t.core[9].numa, 1, "core 9 is on NUMA node 1");
    ts_hwtree_core_cpus(&t, 17, cpus, sizeof cpus);
    ok(!strcmp(cpus, "34-35"), "core 17 runs PUs 34-35 (%s)", cpus);
    ts_hwtree_free(&t);

    ok(load(&t, "l3-over-numa.xml", NULL, &err) == TS_OK, "an L3 spanning two NUMA nodes loads");
    is_int(t.l3_above_numa, 1, "the L3 level sits above NUMA");
    is_int(t.nl3, 2, "one L3 per package");
    ts_hwtree_free(&t);

    ok(load(&t, "4l3-per-numa.xml", NULL, &err) == TS_OK, "four L3 caches per NUMA node load");
    is_int(t.nl3, 8, "8 L3 caches");
    is_int(t.nnuma, 2, "2 NUMA nodes");
    ok(t.core[4].l3 == 1 && t.core[4].numa == 0, "core 4: second L3 of the first NUMA node");
    ts_hwtree_free(&t);

    ok(load(&t, "pu-only.xml", NULL, &err) == TS_OK, "a topology without Core objects loads");
    is_int(t.ncores, 4, "its PUs stand in for cores");
    is_int(t.core[2].l3, -1, "no L3 is reported as -1");
    ts_hwtree_free(&t);

    ok(load(&t, "64core.xml", NULL, &err) == TS_OK, "the 64-core bench shape loads");
    is_int(t.nusable, 64, "64 usable cores");
    ts_hwtree_free(&t);
}

static void test_restrictions(void)
{
    ts_hwtree t;
    ts_error err = {{0}};

    ok(load(&t, "partial-2pack.xml", NULL, &err) == TS_OK, "an XML whose allowed cpuset is 0-7,32-39 loads");
    is_int(t.ncores, 32, "all 32 cores are known");
    is_int(t.nusable, 8, "8 of them usable");
    ok(t.core[3].usable && !t.core[4].usable && t.core[16].usable && t.core[19].usable && !t.core[20].usable,
       "usable: cores 0-3 and 16-19");
    is_int(t.core[16].core_in_package, 0, "logical numbering stays the whole machine's");
    ts_hwtree_free(&t);

    ok(load(&t, "1pack-4core.xml", "1,3", &err) == TS_OK, "--cpuset 1,3 on 4 cores");
    ok(!t.core[0].usable && t.core[1].usable && !t.core[2].usable && t.core[3].usable, "only cores 1 and 3 usable");
    ts_hwtree_free(&t);

    ok(load(&t, "partial-2pack.xml", "6-33", &err) == TS_OK, "a CPU list intersects the allowed cpuset");
    is_int(t.nusable, 2, "PUs 6-7 and 32-33: cores 3 and 16");
    ts_hwtree_free(&t);

    is_int(load(&t, "1pack-4core.xml", "8-9", &err), TS_EINPUT, "a CPU list missing every core is refused");
    ok(strstr(err.text, "none of the 4 cores") != NULL, "and says so: %s", err.text);
    is_int(load(&t, "1pack-4core.xml", "1-", &err), TS_EINPUT, "a broken CPU list is refused");
    ok(strstr(err.text, "column 3") && strstr(err.text, "0-7,16"), "naming the column and the form: %s", err.text);
    is_int(load(&t, "1pack-4core.xml", "0-99999999", &err), TS_EINPUT, "a CPU list beyond the bound is refused");
    is_int(load(&t, "1pack-4core.xml", "3-1", &err), TS_EINPUT, "a reversed range is refused");
}

static void test_bad_inputs(void)
{
    ts_hwtree t;
    ts_error err = {{0}};
    is_int(load(&t, "not-xml.xml", NULL, &err), TS_EINPUT, "a file that is not hwloc XML is refused");
    ok(strstr(err.text, "not-xml.xml") != NULL, "naming the file: %s", err.text);
    ok(load(&t, "missing.xml", NULL, &err) != TS_OK, "a missing file is refused");
    ok(strstr(err.text, "missing.xml") != NULL, "naming the file: %s", err.text);
    const char junk[] = "<?xml version=\"1.0\"?><topology version=\"2.0\"><object type=\"Banana\"/></topology>";
    is_int(ts_hwtree_load_xml_buffer(&t, junk, sizeof junk - 1, "junk.xml", NULL, &err), TS_EINPUT,
           "an XML buffer with an unknown object type is refused");
}

static void test_live(void)
{
    ts_hwtree t;
    ts_error err = {{0}};
    ok(ts_hwtree_load_live(&t, NULL, &err) == TS_OK, "the live machine loads %s", err.text);
    ok(t.ncores >= 1 && t.nusable >= 1 && t.nusable <= t.ncores, "with %d usable of %d cores", t.nusable, t.ncores);
    ts_hwtree_free(&t);
}

/* The number of vertices of kind bit k in the hierarchy. */
static int count_kind(const ts_hierarchy *h, int k)
{
    int n = 0;
    for (int i = 0; i < h->nvert; i++)
        n += (h->v[i].kinds & TS_HK_BIT(k)) != 0;
    return n;
}

static void test_hierarchy(void)
{
    ts_fabric f;
    ts_hwtree two, flat, over, partial;
    ts_error err = {{0}};
    char label[128];
    test_fabric(&f, "SwitchName=top Switches=leaf[1-2]\nSwitchName=leaf1 Nodes=n[1-2]\nSwitchName=leaf2 Nodes=n[3-4]\n");
    load(&two, "2pack-2numa-8core-ht.xml", NULL, &err);
    load(&flat, "1pack-4core.xml", NULL, &err);
    load(&over, "l3-over-numa.xml", NULL, &err);
    load(&partial, "partial-2pack.xml", NULL, &err);

    const ts_hwtree *hw[4] = { &two, &two, &two, &two };
    ts_hierarchy h;
    ok(ts_hierarchy_build(&h, &f, hw, &err) == TS_OK, "4 nodes of 2x2x8 cores merge with the fabric %s", err.text);
    is_int(h.ntemplates, 1, "identical nodes share one template");
    is_int(h.v[h.root].kinds, TS_HK_BIT(TS_HK_SWITCH), "the root is a switch");
    ts_hierarchy_label(&h, h.root, label, sizeof label);
    ok(!strcmp(label, "top"), "named after the fabric (%s)", label);
    is_int(count_kind(&h, TS_HK_SWITCH), 3, "3 switches");
    is_int(count_kind(&h, TS_HK_NODE), 4, "4 nodes");
    is_int(count_kind(&h, TS_HK_PACKAGE), 8, "8 packages");
    is_int(count_kind(&h, TS_HK_CORE), 128, "128 cores");
    /* NUMA and L3 have the same cores here: one vertex carries both */
    int both = 0;
    for (int i = 0; i < h.nvert; i++)
        both += h.v[i].kinds == (TS_HK_BIT(TS_HK_NUMA) | TS_HK_BIT(TS_HK_L3));
    is_int(both, 16, "each NUMA node and its L3 collapse into one vertex");
    is_int(h.nvert, 3 + 4 * (1 + 2 + 4 + 32), "vertex count after the collapse");
    int n3 = h.node_vertex[2];
    ts_hierarchy_label(&h, n3, label, sizeof label);
    ok(!strcmp(label, "n3"), "node index 2 is n3 (%s)", label);
    is_int(h.v[h.v[n3].parent].fabric_vertex, ts_fabric_find(&f, "leaf2"), "n3 hangs from leaf2");
    int c17 = ts_hierarchy_core_vertex(&h, 2, 17);
    ts_hierarchy_label(&h, h.v[c17].parent, label, sizeof label);
    ok(!strcmp(label, "NUMANode L#2 + L3 L#2"), "core 17's parent is 'NUMANode L#2 + L3 L#2' (%s)", label);
    ts_hierarchy_label(&h, h.v[h.v[c17].parent].parent, label, sizeof label);
    ok(!strcmp(label, "Package L#1"), "and its grandparent 'Package L#1' (%s)", label);
    is_int(h.v[c17].depth, 5, "core depth 5: top 0, leaf 1, node 2, package 3, numa+l3 4");
    ts_hierarchy_free(&h);

    const ts_hwtree *mixed[4] = { &flat, &over, &partial, &two };
    ok(ts_hierarchy_build(&h, &f, mixed, &err) == TS_OK, "nodes of four different shapes merge %s", err.text);
    is_int(h.ntemplates, 4, "four templates");
    int c0 = ts_hierarchy_core_vertex(&h, 0, 0);
    ts_hierarchy_label(&h, h.v[c0].parent, label, sizeof label);
    ok(!strcmp(label, "Package L#0 + NUMANode L#0"), "one package with one NUMA node: one vertex (%s)", label);
    is_int(h.v[h.v[c0].parent].parent, h.node_vertex[0], "right under the node");
    int o5 = ts_hierarchy_core_vertex(&h, 1, 5);
    ts_hierarchy_label(&h, h.v[o5].parent, label, sizeof label);
    ok(!strcmp(label, "NUMANode L#1"), "L3 over NUMA: a core's parent is its NUMA node (%s)", label);
    ts_hierarchy_label(&h, h.v[h.v[o5].parent].parent, label, sizeof label);
    ok(!strcmp(label, "Package L#0 + L3 L#0"), "whose parent is the package and its L3 (%s)", label);
    is_int(ts_hierarchy_core_vertex(&h, 2, 4), TS_NONE, "an unusable core has no vertex");
    int p16 = ts_hierarchy_core_vertex(&h, 2, 16);
    ts_hierarchy_label(&h, h.v[p16].parent, label, sizeof label);
    ok(!strcmp(label, "Package L#1 + NUMANode L#2 + L3 L#2"), "partial node: package 1 keeps one NUMA node (%s)", label);
    int cores_on_partial = 0;
    for (int i = 0; i < h.nvert; i++)
        cores_on_partial += h.v[i].node == 2 && (h.v[i].kinds & TS_HK_BIT(TS_HK_CORE));
    is_int(cores_on_partial, 8, "and 8 core vertices");
    ts_hierarchy_free(&h);

    ts_hwtree_free(&two);
    ts_hwtree_free(&flat);
    ts_hwtree_free(&over);
    ts_hwtree_free(&partial);
    ts_fabric_free(&f);
}

int main(void)
{
    test_shapes();
    test_restrictions();
    test_bad_inputs();
    test_live();
    test_hierarchy();
    return done_testing();
}
