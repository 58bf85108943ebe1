/* tree.yaml: what ts_fabric_write_yaml writes reads back to the same tree; every broken file is
 * refused with FILE:LINE:COLUMN and what is wrong. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "tap.h"
#include "hwdata.h"
#include "toposcope/treeyaml.h"

static int parse(ts_fabric *f, const char *text, ts_error *err)
{
    err->text[0] = '\0';
    return ts_fabric_parse_tree_yaml(f, text, strlen(text), "tree.yaml", err);
}

static void test_round_trip(void)
{
    ts_fabric f, g;
    ts_error err = {{0}};
    test_fabric(&f, "SwitchName=spine Switches=leaf[1-2]\nSwitchName=leaf1 Nodes=n[1-3]\nSwitchName=leaf2 Nodes=n[4-5]\n");
    for (int i = 0; i < f.nvert; i++) {
        f.v[i].link_us = 0.25 * i;
        if (f.v[i].kind == TS_NODE)
            f.v[i].host_us = 3.5;
    }
    f.v[ts_fabric_find(&f, "leaf2")].unresolved = 1;
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    ts_fabric_write_yaml(&f, out);
    fclose(out);
    ok(ts_fabric_parse_tree_yaml(&g, buf, len, "tree.yaml", &err) == TS_OK, "what the writer writes reads back %s", err.text);
    is_int(g.nnodes, 5, "5 nodes");
    is_int(g.nvert, 8, "8 vertices");
    int same = 1;
    for (int i = 0; i < f.nvert; i++) {
        int j = ts_fabric_find(&g, f.v[i].name);
        if (j == TS_NONE || g.v[j].kind != f.v[i].kind || fabs(g.v[j].link_us - f.v[i].link_us) > 1e-4 ||
            (f.v[i].parent == TS_NONE) != (g.v[j].parent == TS_NONE) ||
            (f.v[i].parent != TS_NONE && strcmp(f.v[f.v[i].parent].name, g.v[g.v[j].parent].name)))
            same = 0;
    }
    ok(same, "same names, kinds, parents and latencies");
    is_num(g.v[ts_fabric_find(&g, "n4")].host_us, 3.5, 1e-9, "host_us kept");
    ok(g.v[ts_fabric_find(&g, "leaf2")].unresolved && !g.v[ts_fabric_find(&g, "leaf1")].unresolved &&
       strstr(buf, "\"leaf2\", kind: switch, parent: \"spine\", link_us: 0.5000, unresolved: true}"),
       "an unresolved switch says so, and only it");
    ok(!strcmp(g.v[g.node_vertex[0]].name, "n1") && !strcmp(g.v[g.node_vertex[4]].name, "n5"), "nodes in hostname order");
    free(buf);
    ts_fabric_free(&f);
    ts_fabric_free(&g);

    ok(parse(&g, "vertices:\n  - {name: a, kind: node, parent: s2}\n  - {name: s2, kind: switch, parent: s1}\n"
                 "  - {name: s1, kind: switch, parent: null}\n  - {name: b, kind: node, parent: s1}\n", &err) == TS_OK,
       "children may come before their parents %s", err.text);
    is_int(g.v[g.root].nchildren, 2, "the root has s2 and b");
    ok(isnan(g.v[ts_fabric_find(&g, "a")].link_us), "a missing link_us stays unknown");
    ts_fabric_free(&g);
    ok(parse(&g, "nodes: 1\nswitches: 1\nvertices:\n- {name: s, kind: switch, parent: ~, link_us: null}\n- {name: x, kind: node, parent: s}\n",
             &err) == TS_OK, "null and ~ are unknown values %s", err.text);
    ts_fabric_free(&g);
}

typedef struct bad_case {
    const char *text;
    const char *where;       /* "tree.yaml:L:C" */
    const char *what;        /* a piece of the message */
} bad_case;

static void test_errors(void)
{
    static const bad_case cases[] = {
        { "", "tree.yaml:1:1", "mapping" },
        { "- a\n", "tree.yaml:1:1", "mapping" },
        { "vertices:\n  - {name: s, kind: switch, parent: null, colour: red}\n", "tree.yaml:2:43", "unknown key 'colour'" },
        { "vertices:\n  - {name: s, kind: switch, parent: null, colour: red}\n", "tree.yaml:2:43", "allowed: name, kind, parent" },
        { "nodes: 1\n", "tree.yaml:1:1", "'vertices' is missing" },
        { "vertices: 3\n", "tree.yaml:1:11", "must be a list" },
        { "vertices:\n  - {name: s, kind: router, parent: null}\n", "tree.yaml:2:21", "one of switch, node" },
        { "vertices:\n  - {name: s, kind: switch}\n", "tree.yaml:2:5", "needs the keys name, kind and parent" },
        { "vertices:\n  - {name: s, kind: switch, parent: null}\n  - {name: s, kind: node, parent: s}\n", "tree.yaml:3:12", "defined twice (first at line 2)" },
        { "vertices:\n  - {name: s, kind: switch, parent: null}\n  - {name: x, kind: node, parent: t}\n", "tree.yaml:3:35", "parent 't' of 'x' is not a vertex" },
        { "vertices:\n  - {name: s, kind: switch, parent: null}\n  - {name: x, kind: node, parent: s}\n  - {name: y, kind: node, parent: x}\n",
          "tree.yaml:4:35", "is a node" },
        { "vertices:\n  - {name: s, kind: switch, parent: null}\n  - {name: t, kind: switch, parent: null}\n", "tree.yaml:3:37", "both have no parent" },
        { "vertices:\n  - {name: s, kind: switch, parent: t}\n  - {name: t, kind: switch, parent: s}\n", "tree.yaml:2:3", "no vertex has 'parent: null'" },
        { "vertices:\n  - {name: r, kind: switch, parent: null}\n  - {name: s, kind: switch, parent: t}\n  - {name: t, kind: switch, parent: s}\n",
          "tree.yaml:", "cycle" },
        { "vertices:\n  - {name: s, kind: switch, parent: s}\n", "tree.yaml:2:37", "own parent" },
        { "vertices:\n  - {name: x, kind: node, parent: null}\n", "tree.yaml:2:35", "needs a parent switch" },
        { "vertices:\n  - {name: s, kind: switch, parent: null, link_us: -1}\n", "tree.yaml:2:52", "from 0 to" },
        { "vertices:\n  - {name: s, kind: switch, parent: null, link_us: fast}\n", "tree.yaml:2:52", "'link_us' must be a number" },
        { "vertices:\n  - {name: s, kind: switch, parent: null, link_us: .inf}\n", "tree.yaml:2:52", "must be a number" },
        { "vertices:\n  - {name: s, kind: switch, parent: null, host_us: 1}\n", "tree.yaml:2:52", "belongs to nodes" },
        { "vertices:\n  - {name: s, kind: switch, parent: null, unresolved: yes}\n", "tree.yaml:2:55", "'unresolved' must be true or false" },
        { "vertices:\n  - {name: s, kind: switch, parent: null}\n  - {name: x, kind: node, parent: s, unresolved: true}\n",
          "tree.yaml:3:50", "belongs to switches" },
        { "nodes: 2\nvertices:\n  - {name: s, kind: switch, parent: null}\n  - {name: x, kind: node, parent: s}\n", "tree.yaml:1:8", "'nodes: 2' but the list has 1" },
        { "switches: 0\nvertices:\n  - {name: s, kind: switch, parent: null}\n  - {name: x, kind: node, parent: s}\n", "tree.yaml:1:11", "'switches: 0'" },
        { "vertices:\n  - {name: s, kind: switch, parent: null}\n", "tree.yaml:2:3", "no nodes" },
        { "vertices:\n  - &a {name: s, kind: switch, parent: null}\n  - *a\n", "tree.yaml:3:5", "aliases" },
        { "vertices: [\n", "tree.yaml:2:1", "YAML syntax error" },
        { "a: 1\n---\nb: 2\n", "tree.yaml:2:1", "only one YAML document" },
        { "vertices:\n  - {name: \"\", kind: switch, parent: null}\n", "tree.yaml:2:12", "non-empty name" },
        { "vertices:\n  - [s, switch]\n", "tree.yaml:2:5", "must be a mapping" },
        { "vertices:\n  - {{a: 1}: 2}\n", "tree.yaml:2:6", "must be a name" },
        { "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]", "tree.yaml:1:", "nesting deeper" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ts_fabric f;
        ts_error err = {{0}};
        int rc = parse(&f, cases[i].text, &err);
        if (!ok(rc != TS_OK && strstr(err.text, cases[i].where) == err.text && strstr(err.text, cases[i].what),
                "broken tree %zu refused at %s with '%s'", i, cases[i].where, cases[i].what))
            diag("  got rc %d: %s", rc, err.text);
        ok(f.nvert == 0 && f.v == NULL, "and leaves the fabric empty");
    }
}

static void test_files(void)
{
    ts_fabric f;
    ts_error err = {{0}};
    ok(ts_fabric_load_tree(&f, test_data("topo", "two-level.conf"), &err) == TS_OK, "a .conf file is read as topology.conf %s", err.text);
    ok(f.nnodes > 0, "with %d nodes", f.nnodes);
    ts_fabric_free(&f);
    ok(ts_fabric_load_tree(&f, test_data("place", "tree.yaml"), &err) == TS_OK, "tests/data/place/tree.yaml loads %s", err.text);
    is_int(f.nnodes, 8, "8 nodes in it");
    ts_fabric_free(&f);
    ok(ts_fabric_load_tree(&f, "/nonexistent/tree.yaml", &err) != TS_OK && strstr(err.text, "/nonexistent/tree.yaml"),
       "a missing file is refused by name (%s)", err.text);
}

int main(void)
{
    test_round_trip();
    test_errors();
    test_files();
    return done_testing();
}
