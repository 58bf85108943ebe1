/* Slurm's topology formats written from a tree: topology.conf (topology/tree and topology/block)
 * and topology.yaml, after the nodes Slurm does not know are pruned. Each case of the table is
 * a tree, the nodes kept, and every format's exact bytes; then the refusals. */
#include <stdlib.h>
#include <string.h>
#include "tap.h"
#include "toposcope/fabric.h"
#include "toposcope/hostlist.h"
#include "toposcope/topoconf.h"
#include "toposcope/topoyaml.h"

#define CONF_HEAD "# topology.conf written by toposcope: leaf switches first\n"
#define BLOCK_HEAD "# topology.conf for Slurm's topology/block written by toposcope: a block per switch\n" \
                   "# that holds nodes, neighbours under one switch\n"
#define YTREE_HEAD "# topology.yaml (Slurm 25.05+) written by toposcope: one tree topology per fabric\n---\n"
#define YBLOCK_HEAD "# topology.yaml (Slurm 25.05+) written by toposcope: one block topology per fabric\n---\n"
#define FABRIC(n, dflt) "- topology: fabric" #n "\n  cluster_default: " dflt "\n"

typedef struct writer_case {
    const char *what;
    const char *conf;            /* the tree, as topology.conf */
    const char *keep;            /* hostlist of the nodes Slurm knows; NULL: all */
    int dropped_nodes, dropped_switches;
    const char *dropped;         /* their names, NULL when none */
    const char *tree, *block, *ytree, *yblock;
} writer_case;

static const writer_case cases[] = {
    { "two leaves under a top", "SwitchName=s0 Switches=s[1-2]\nSwitchName=s1 Nodes=n[1-4]\nSwitchName=s2 Nodes=n[5-8]\n",
      NULL, 0, 0, NULL,
      CONF_HEAD "SwitchName=s1 Nodes=n[1-4]\nSwitchName=s2 Nodes=n[5-8]\nSwitchName=s0 Switches=s[1-2]\n",
      BLOCK_HEAD "BlockName=s1 Nodes=n[1-4]\nBlockName=s2 Nodes=n[5-8]\nBlockSizes=4,8\n",
      YTREE_HEAD FABRIC(1, "true") "  tree:\n    switches:\n      - switch: s0\n        children: s[1-2]\n"
      "      - switch: s1\n        nodes: n[1-4]\n      - switch: s2\n        nodes: n[5-8]\n",
      YBLOCK_HEAD FABRIC(1, "true") "  block:\n    block_sizes:\n      - 4\n      - 8\n    blocks:\n"
      "      - block: s1\n        nodes: n[1-4]\n      - block: s2\n        nodes: n[5-8]\n" },
    { "a leaf of unknown nodes goes, and with it the switch", "SwitchName=s0 Switches=s[1-2]\nSwitchName=s1 Nodes=n[1-4]\n"
      "SwitchName=s2 Nodes=n[5-8]\n", "n[1-4],n9", 4, 1, "n[5-8]",
      CONF_HEAD "SwitchName=s1 Nodes=n[1-4]\nSwitchName=s0 Switches=s1\n",
      BLOCK_HEAD "BlockName=s1 Nodes=n[1-4]\nBlockSizes=4\n",
      YTREE_HEAD FABRIC(1, "true") "  tree:\n    switches:\n      - switch: s0\n        children: s1\n"
      "      - switch: s1\n        nodes: n[1-4]\n",
      YBLOCK_HEAD FABRIC(1, "true") "  block:\n    block_sizes:\n      - 4\n    blocks:\n"
      "      - block: s1\n        nodes: n[1-4]\n" },
    { "two fabrics", "SwitchName=a0 Switches=a[1-2]\nSwitchName=a1 Nodes=x[1-2]\nSwitchName=a2 Nodes=x[3-5]\n"
      "SwitchName=b0 Nodes=y[1-3]\n", NULL, 0, 0, NULL,
      CONF_HEAD "SwitchName=a1 Nodes=x[1-2]\nSwitchName=a2 Nodes=x[3-5]\nSwitchName=b0 Nodes=y[1-3]\n"
      "SwitchName=a0 Switches=a[1-2]\n",
      BLOCK_HEAD "# 2 separate fabrics: BlockSizes= is the base size alone, so that no larger block\n"
      "# pairs two of them (topology.yaml keeps each fabric its own topology)\n"
      "BlockName=a1 Nodes=x[1-2]\nBlockName=a2 Nodes=x[3-5]\nBlockName=b0 Nodes=y[1-3]\nBlockSizes=2\n",
      YTREE_HEAD FABRIC(1, "true") "  tree:\n    switches:\n      - switch: a0\n        children: a[1-2]\n"
      "      - switch: a1\n        nodes: x[1-2]\n      - switch: a2\n        nodes: x[3-5]\n"
      FABRIC(2, "false") "  tree:\n    switches:\n      - switch: b0\n        nodes: y[1-3]\n",
      YBLOCK_HEAD FABRIC(1, "true") "  block:\n    block_sizes:\n      - 2\n      - 4\n    blocks:\n"
      "      - block: a1\n        nodes: x[1-2]\n      - block: a2\n        nodes: x[3-5]\n"
      FABRIC(2, "false") "  block:\n    block_sizes:\n      - 3\n    blocks:\n      - block: b0\n        nodes: y[1-3]\n" },
    { "a fabric pruned away leaves one, without the implicit root", "SwitchName=a0 Switches=a[1-2]\n"
      "SwitchName=a1 Nodes=x[1-2]\nSwitchName=a2 Nodes=x[3-5]\nSwitchName=b0 Nodes=y[1-3]\n", "x[1-5]", 3, 1, "y[1-3]",
      CONF_HEAD "SwitchName=a1 Nodes=x[1-2]\nSwitchName=a2 Nodes=x[3-5]\nSwitchName=a0 Switches=a[1-2]\n",
      BLOCK_HEAD "BlockName=a1 Nodes=x[1-2]\nBlockName=a2 Nodes=x[3-5]\nBlockSizes=2,4\n",
      YTREE_HEAD FABRIC(1, "true") "  tree:\n    switches:\n      - switch: a0\n        children: a[1-2]\n"
      "      - switch: a1\n        nodes: x[1-2]\n      - switch: a2\n        nodes: x[3-5]\n",
      YBLOCK_HEAD FABRIC(1, "true") "  block:\n    block_sizes:\n      - 2\n      - 4\n    blocks:\n"
      "      - block: a1\n        nodes: x[1-2]\n      - block: a2\n        nodes: x[3-5]\n" },
    { "names out of order, zero padding, natural order", "SwitchName=t Switches=l2,l10,l1\n"
      "SwitchName=l10 Nodes=c010,c002\nSwitchName=l2 Nodes=c003,c001\nSwitchName=l1 Nodes=c004\n", NULL, 0, 0, NULL,
      CONF_HEAD "SwitchName=l1 Nodes=c004\nSwitchName=l2 Nodes=c[001,003]\nSwitchName=l10 Nodes=c[002,010]\n"
      "SwitchName=t Switches=l[1-2,10]\n",
      BLOCK_HEAD "BlockName=l1 Nodes=c004\nBlockName=l2 Nodes=c[001,003]\nBlockName=l10 Nodes=c[002,010]\n"
      "BlockSizes=1,2\n",
      YTREE_HEAD FABRIC(1, "true") "  tree:\n    switches:\n      - switch: t\n        children: l[1-2,10]\n"
      "      - switch: l1\n        nodes: c004\n      - switch: l2\n        nodes: c[001,003]\n"
      "      - switch: l10\n        nodes: c[002,010]\n",
      YBLOCK_HEAD FABRIC(1, "true") "  block:\n    block_sizes:\n      - 1\n      - 2\n    blocks:\n"
      "      - block: l1\n        nodes: c004\n      - block: l2\n        nodes: c[001,003]\n"
      "      - block: l10\n        nodes: c[002,010]\n" },
    { "blocks depth first: neighbours share a pod", "SwitchName=core Switches=pb,pa\nSwitchName=pa Switches=a2,a1\n"
      "SwitchName=pb Switches=b1\nSwitchName=a1 Nodes=n[1-2]\nSwitchName=a2 Nodes=n[3-4]\nSwitchName=b1 Nodes=n[5-6]\n"
      "SwitchName=pc Nodes=m1 Switches=c1\nSwitchName=c1 Nodes=m[2-3]\n", "n[1-6],m[1-3],junk", 0, 0, NULL,
      CONF_HEAD "SwitchName=a1 Nodes=n[1-2]\nSwitchName=a2 Nodes=n[3-4]\nSwitchName=b1 Nodes=n[5-6]\n"
      "SwitchName=c1 Nodes=m[2-3]\nSwitchName=pa Switches=a[1-2]\nSwitchName=pb Switches=b1\n"
      "SwitchName=pc Switches=c1 Nodes=m1\nSwitchName=core Switches=pa,pb\n",
      BLOCK_HEAD "# 2 separate fabrics: BlockSizes= is the base size alone, so that no larger block\n"
      "# pairs two of them (topology.yaml keeps each fabric its own topology)\n"
      "BlockName=a1 Nodes=n[1-2]\nBlockName=a2 Nodes=n[3-4]\nBlockName=b1 Nodes=n[5-6]\n"
      "BlockName=pc Nodes=m1\nBlockName=c1 Nodes=m[2-3]\nBlockSizes=1\n",
      YTREE_HEAD FABRIC(1, "true") "  tree:\n    switches:\n      - switch: core\n        children: pa,pb\n"
      "      - switch: pa\n        children: a[1-2]\n      - switch: pb\n        children: b1\n"
      "      - switch: a1\n        nodes: n[1-2]\n      - switch: a2\n        nodes: n[3-4]\n"
      "      - switch: b1\n        nodes: n[5-6]\n"
      FABRIC(2, "false") "  tree:\n    switches:\n      - switch: pc\n        children: c1\n        nodes: m1\n"
      "      - switch: c1\n        nodes: m[2-3]\n",
      YBLOCK_HEAD FABRIC(1, "true") "  block:\n    block_sizes:\n      - 2\n      - 4\n    blocks:\n"
      "      - block: a1\n        nodes: n[1-2]\n      - block: a2\n        nodes: n[3-4]\n"
      "      - block: b1\n        nodes: n[5-6]\n"
      FABRIC(2, "false") "  block:\n    block_sizes:\n      - 1\n      - 2\n    blocks:\n"
      "      - block: pc\n        nodes: m1\n      - block: c1\n        nodes: m[2-3]\n" },
    { "names YAML would misread are quoted", "SwitchName=s Switches=q[1-4]\nSwitchName=q1 Nodes=true\n"
      "SwitchName=q2 Nodes=1e3\nSwitchName=q3 Nodes=x:y\nSwitchName=q4 Nodes=n-1.a_b\n", NULL, 0, 0, NULL,
      CONF_HEAD "SwitchName=q1 Nodes=true\nSwitchName=q2 Nodes=1e3\nSwitchName=q3 Nodes=x:y\n"
      "SwitchName=q4 Nodes=n-1.a_b\nSwitchName=s Switches=q[1-4]\n",
      BLOCK_HEAD "BlockName=q1 Nodes=true\nBlockName=q2 Nodes=1e3\nBlockName=q3 Nodes=x:y\n"
      "BlockName=q4 Nodes=n-1.a_b\nBlockSizes=1,2,4\n",
      YTREE_HEAD FABRIC(1, "true") "  tree:\n    switches:\n      - switch: s\n        children: q[1-4]\n"
      "      - switch: q1\n        nodes: \"true\"\n      - switch: q2\n        nodes: \"1e3\"\n"
      "      - switch: q3\n        nodes: \"x:y\"\n      - switch: q4\n        nodes: n-1.a_b\n",
      YBLOCK_HEAD FABRIC(1, "true") "  block:\n    block_sizes:\n      - 1\n      - 2\n      - 4\n    blocks:\n"
      "      - block: q1\n        nodes: \"true\"\n      - block: q2\n        nodes: \"1e3\"\n"
      "      - block: q3\n        nodes: \"x:y\"\n      - block: q4\n        nodes: n-1.a_b\n" },
};

typedef struct known {
    ts_hostlist hl;
} known;

static int is_known(const char *name, void *arg)
{
    const known *k = arg;
    for (size_t i = 0; i < k->hl.count; i++)
        if (!strcmp(k->hl.hosts[i], name))
            return 1;
    return 0;
}

static int keep_all(const char *name, void *arg)
{
    (void)name;
    (void)arg;
    return 1;
}

enum { OUT_TREE, OUT_BLOCK, OUT_YTREE, OUT_YBLOCK };

/* The fabric written in one format into a string (NULL when the writer failed; err says why). */
static char *written(const ts_fabric *f, int format, ts_error *err)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    int rc = format == OUT_TREE    ? ts_fabric_write_topology_conf(f, out)
             : format == OUT_BLOCK ? ts_fabric_write_block_conf(f, out, err)
                                   : ts_fabric_write_topology_yaml(f, format == OUT_YBLOCK, out, err);
    fclose(out);
    if (rc != TS_OK) {
        free(buf);
        return NULL;
    }
    return buf;
}

static void same(const char *got, const char *want, const char *what, const char *format, const ts_error *err)
{
    if (!ok(got && !strcmp(got, want), "%s: %s", what, format))
        diag("  got:\n%s\n  want:\n%s\n  (%s)", got ? got : "(failed)", want, got ? "" : err->text);
}

static void run_case(const writer_case *c)
{
    ts_fabric src, f;
    ts_fabric_pruned dropped;
    ts_error err = { "" };
    known k = { { 0, NULL } };
    if (ts_fabric_parse_topology_conf(&src, c->conf, strlen(c->conf), "case.conf", &err) != TS_OK) {
        printf("Bail out! %s: the fixture does not parse: %s\n", c->what, err.text);
        exit(1);
    }
    if (c->keep && ts_hostlist_expand(c->keep, strlen(c->keep), &k.hl, &err) != TS_OK) {
        printf("Bail out! %s: %s\n", c->what, err.text);
        exit(1);
    }
    int rc = ts_fabric_keep_nodes(&f, &src, c->keep ? is_known : keep_all, &k, &dropped, &err);
    ok(rc == TS_OK && dropped.nodes == c->dropped_nodes && dropped.switches == c->dropped_switches &&
       (c->dropped ? dropped.names && !strcmp(dropped.names, c->dropped) : !dropped.names),
       "%s: pruned, %d node(s) and %d switch(es) left out (%d, %d, %s)", c->what, c->dropped_nodes,
       c->dropped_switches, dropped.nodes, dropped.switches, dropped.names ? dropped.names : "-");
    static const char *const formats[] = { "topology.conf", "topology.conf for topology/block",
                                           "topology.yaml tree", "topology.yaml block" };
    const char *want[] = { c->tree, c->block, c->ytree, c->yblock };
    for (int i = 0; i < 4 && rc == TS_OK; i++) {
        char *got = written(&f, i, &err), *again = written(&f, i, &err);
        same(got, want[i], c->what, formats[i], &err);
        ok(got && again && !strcmp(got, again), "%s: %s twice, the same bytes", c->what, formats[i]);
        free(got);
        free(again);
    }
    /* what the tree writer wrote reads back as the pruned tree */
    char *text = rc == TS_OK ? written(&f, OUT_TREE, &err) : NULL;
    ts_fabric back;
    ok(text && ts_fabric_parse_topology_conf(&back, text, strlen(text), "written.conf", &err) == TS_OK &&
       back.nnodes == f.nnodes && back.nvert == f.nvert, "%s: the topology.conf written parses again", c->what);
    if (text)
        ts_fabric_free(&back);
    free(text);
    free(dropped.names);
    ts_hostlist_free(&k.hl);
    ts_fabric_free(&f);
    ts_fabric_free(&src);
}

static void test_nothing_left(void)
{
    ts_fabric src, f;
    ts_fabric_pruned dropped;
    ts_error err = { "" };
    const char *conf = "SwitchName=s0 Switches=s1\nSwitchName=s1 Nodes=n[1-3]\n";
    ts_fabric_parse_topology_conf(&src, conf, strlen(conf), "t.conf", &err);
    known k = { { 0, NULL } };
    ts_hostlist_expand("m[1-3]", 6, &k.hl, &err);
    int rc = ts_fabric_keep_nodes(&f, &src, is_known, &k, &dropped, &err);
    ok(rc == TS_EINPUT && f.nvert == 0 && dropped.nodes == 3 && dropped.switches == 2 && dropped.names &&
       !strcmp(dropped.names, "n[1-3]"), "no node known: refused, the tree empty, the nodes named (%s)", err.text);
    ok(strstr(err.text, "none of the tree's 3 nodes") != NULL, "the message counts them");
    free(dropped.names);
    ts_fabric_free(&f);
    ts_hostlist_free(&k.hl);
    ts_fabric_free(&src);
}

static void test_refusals(void)
{
    ts_fabric f;
    ts_error err = { "" };
    char conf[256], *got;
    snprintf(conf, sizeof conf, "SwitchName=%0*d Nodes=n1\n", TS_TOPOYAML_SWITCH_NAME_MAX + 1, 7);
    ts_fabric_parse_topology_conf(&f, conf, strlen(conf), "t.conf", &err);
    got = written(&f, OUT_YTREE, &err);
    ok(!got && strstr(err.text, "longer than the 64 characters topology.yaml allows"),
       "a switch name over 64 characters is refused for topology.yaml (%s)", err.text);
    free(got);
    got = written(&f, OUT_BLOCK, &err);
    ok(got != NULL, "topology/block has no such limit");
    free(got);
    ts_fabric_free(&f);

    ts_fabric_init(&f);
    ok(written(&f, OUT_YTREE, &err) == NULL && strstr(err.text, "not finalized"), "an unfinished tree is refused");
    ts_fabric_pruned dropped;
    ts_fabric g;
    ok(ts_fabric_keep_nodes(&g, &f, keep_all, NULL, &dropped, &err) == TS_EINPUT, "and not pruned");
}

static void test_tops(void)
{
    ts_fabric f;
    ts_error err;
    int tops[4];
    const char *conf = "SwitchName=z Nodes=n1\nSwitchName=b Nodes=n2\nSwitchName=a10 Nodes=n3\nSwitchName=a9 Nodes=n4\n";
    ts_fabric_parse_topology_conf(&f, conf, strlen(conf), "t.conf", &err);
    int n = ts_fabric_tops(&f, tops, 4);
    ok(n == 4 && !strcmp(f.v[tops[0]].name, "a9") && !strcmp(f.v[tops[1]].name, "a10") &&
       !strcmp(f.v[tops[3]].name, "z"), "four parentless switches are four fabrics, in natural order");
    ok(ts_fabric_tops(&f, tops, 2) == 4, "the count is whole when the room is not");
    ts_fabric_free(&f);
    conf = "SwitchName=s Nodes=n1\n";
    ts_fabric_parse_topology_conf(&f, conf, strlen(conf), "t.conf", &err);
    ok(ts_fabric_tops(&f, tops, 4) == 1 && tops[0] == f.root, "one switch is one fabric");
    ts_fabric_free(&f);
}

int main(void)
{
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        run_case(&cases[i]);
    test_nothing_left();
    test_refusals();
    test_tops();
    return done_testing();
}
