/* Slurm topology.conf: good files, every broken case with its message, round trips, garbage. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "tap.h"
#include "toposcope/fabric.h"
#include "toposcope/hostlist.h"
#include "toposcope/topoconf.h"

static char data_dir[1024];

/* Tests run from the repo root; fall back to the directory of this source file. */
static void find_data_dir(void)
{
    struct stat st;
    snprintf(data_dir, sizeof data_dir, "tests/data/topo");
    if (stat(data_dir, &st) == 0)
        return;
    const char *slash = strrchr(__FILE__, '/');
    int dirlen = slash ? (int)(slash - __FILE__) : 1;
    snprintf(data_dir, sizeof data_dir, "%.*s/../data/topo", dirlen, slash ? __FILE__ : ".");
}

static const char *data_path(const char *file)
{
    static char path[1200];
    snprintf(path, sizeof path, "%s/%s", data_dir, file);
    return path;
}

static int load(ts_fabric *f, const char *file, ts_error *err)
{
    err->text[0] = '\0';
    return ts_fabric_load_topology_conf(f, data_path(file), err);
}

static int parse(ts_fabric *f, const char *text, ts_error *err)
{
    err->text[0] = '\0';
    return ts_fabric_parse_topology_conf(f, text, strlen(text), "mem.conf", err);
}

static const char *parent_name(const ts_fabric *f, const char *name)
{
    int v = ts_fabric_find(f, name);
    if (v == TS_NONE || f->v[v].parent == TS_NONE)
        return "(none)";
    return f->v[f->v[v].parent].name;
}

static int nswitches(const ts_fabric *f)
{
    int n = 0;
    for (int i = 0; i < f->nvert; i++)
        n += f->v[i].kind == TS_SWITCH;
    return n;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A description independent of vertex order: sorted "kind name<parent" lines. */
static char *canonical(const ts_fabric *f)
{
    char **lines = malloc(sizeof *lines * (size_t)f->nvert);
    size_t total = 1;
    for (int i = 0; i < f->nvert; i++) {
        const ts_vertex *v = &f->v[i];
        const char *p = v->parent == TS_NONE ? "-" : f->v[v->parent].name;
        size_t n = strlen(v->name) + strlen(p) + 8;
        lines[i] = malloc(n);
        snprintf(lines[i], n, "%c%s %s<%s\n", v->kind == TS_NODE ? 'n' : 's', v->implicit ? "*" : "", v->name, p);
        total += strlen(lines[i]);
    }
    qsort(lines, (size_t)f->nvert, sizeof *lines, cmp_str);
    char *s = malloc(total);
    s[0] = '\0';
    for (int i = 0; i < f->nvert; i++) {
        strcat(s, lines[i]);
        free(lines[i]);
    }
    free(lines);
    return s;
}

static char *write_conf(const ts_fabric *f)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    int rc = ts_fabric_write_topology_conf(f, out);
    fclose(out);
    if (rc != TS_OK) {
        free(buf);
        return NULL;
    }
    return buf;
}

/* parse -> write -> parse gives the same tree */
static void round_trip(const ts_fabric *f, const char *what)
{
    char *text = write_conf(f);
    ts_fabric g;
    ts_error err = { "" };
    int rc = text ? ts_fabric_parse_topology_conf(&g, text, strlen(text), "written.conf", &err) : -1;
    if (!ok(rc == TS_OK, "%s: written file parses again", what)) {
        diag("  %s", err.text);
        free(text);
        return;
    }
    char *a = canonical(f), *b = canonical(&g);
    if (!ok(strcmp(a, b) == 0 && g.nnodes == f->nnodes, "%s: round trip gives the same tree", what))
        diag("  written:\n%s", text);
    free(a);
    free(b);
    free(text);
    ts_fabric_free(&g);
}

static void test_good_files(void)
{
    ts_fabric f;
    ts_error err;

    if (!ok(load(&f, "flat.conf", &err) == TS_OK, "flat.conf loads"))
        diag("  %s", err.text);
    is_int(f.nnodes, 16, "  16 nodes");
    is_int(nswitches(&f), 1, "  one switch");
    ok(strcmp(f.v[f.root].name, "s0") == 0 && !f.v[f.root].implicit, "  s0 is the root, not implicit");
    ok(strcmp(f.v[f.node_vertex[0]].name, "cn01") == 0 && strcmp(f.v[f.node_vertex[15]].name, "cn16") == 0,
       "  nodes in natural order");
    is_int(f.v[ts_fabric_find(&f, "cn07")].line, 2, "  cn07 records line 2");
    round_trip(&f, "flat.conf");
    ts_fabric_free(&f);

    if (!ok(load(&f, "two-level.conf", &err) == TS_OK, "two-level.conf loads"))
        diag("  %s", err.text);
    is_int(f.nnodes, 8, "  8 nodes");
    ok(strcmp(f.v[f.root].name, "spine") == 0, "  spine is the root");
    ok(strcmp(parent_name(&f, "cn006"), "leaf2") == 0, "  cn006 under leaf2");
    is_int(ts_fabric_hops(&f, ts_fabric_find(&f, "cn001"), ts_fabric_find(&f, "cn008")), 4, "  cn001-cn008: 4 hops");
    is_int(f.v[ts_fabric_find(&f, "spine")].line, 4, "  spine defined on line 4");
    round_trip(&f, "two-level.conf");
    ts_fabric_free(&f);

    if (!ok(load(&f, "three-level.conf", &err) == TS_OK, "three-level.conf loads"))
        diag("  %s", err.text);
    is_int(f.nnodes, 16, "  16 nodes");
    is_int(nswitches(&f), 7, "  7 switches");
    is_int(ts_fabric_max_depth(&f), 3, "  depth 3");
    int a = ts_fabric_find(&f, "r1n1");
    is_int(ts_fabric_hops(&f, a, ts_fabric_find(&f, "r1n2")), 2, "  same leaf: 2 hops");
    is_int(ts_fabric_hops(&f, a, ts_fabric_find(&f, "r2n1")), 4, "  same aggregation: 4 hops");
    is_int(ts_fabric_hops(&f, a, ts_fabric_find(&f, "r4n4")), 6, "  across the core: 6 hops");
    round_trip(&f, "three-level.conf");
    ts_fabric_free(&f);

    if (!ok(load(&f, "out-of-order.conf", &err) == TS_OK, "out-of-order.conf loads"))
        diag("  %s", err.text);
    ok(strcmp(f.v[f.root].name, "top") == 0, "  top is the root");
    ok(strcmp(parent_name(&f, "l3"), "mid2") == 0 && strcmp(parent_name(&f, "x9"), "mid2") == 0,
       "  mid2 holds a switch and a node");
    ok(strcmp(parent_name(&f, "gpu2"), "l3") == 0, "  gpu2 under l3");
    is_int(f.v[ts_fabric_find(&f, "l2")].line, 6, "  l2 records its defining line, not where it was listed");
    is_int(f.nnodes, 9, "  9 nodes");
    round_trip(&f, "out-of-order.conf");
    ts_fabric_free(&f);

    if (!ok(load(&f, "comments.conf", &err) == TS_OK, "comments.conf loads"))
        diag("  %s", err.text);
    is_int(f.nnodes, 4, "  commented-out nodes are not read");
    ok(ts_fabric_find(&f, "ignored") == TS_NONE && ts_fabric_find(&f, "never") == TS_NONE, "  comments ignored");
    ok(strcmp(f.v[f.root].name, "c") == 0, "  c is the root");
    is_int(f.v[ts_fabric_find(&f, "c")].line, 8, "  line numbers count comment and blank lines");
    ts_fabric_free(&f);

    if (!ok(load(&f, "case-insensitive.conf", &err) == TS_OK, "case-insensitive.conf loads"))
        diag("  %s", err.text);
    is_int(f.nnodes, 6, "  6 nodes");
    ok(strcmp(parent_name(&f, "b3"), "leafB") == 0 && strcmp(parent_name(&f, "leafA"), "top") == 0,
       "  keys in any case; names keep their case");
    ts_fabric_free(&f);

    if (!ok(load(&f, "implicit-root.conf", &err) == TS_OK, "implicit-root.conf loads"))
        diag("  %s", err.text);
    ok(strcmp(f.v[f.root].name, "root") == 0 && f.v[f.root].implicit == 1, "  implicit root named 'root'");
    is_int(f.v[f.root].nchildren, 3, "  above the three parentless switches");
    ok(strcmp(parent_name(&f, "island4"), "island3") == 0, "  island4 stays under island3");
    is_int(f.v[f.root].line, 0, "  the implicit root has no source line");
    char *text = write_conf(&f);
    ok(text && strstr(text, "SwitchName=root") == NULL, "  the writer leaves the implicit root out");
    free(text);
    round_trip(&f, "implicit-root.conf");
    ts_fabric_free(&f);

    if (!ok(load(&f, "implicit-root-taken.conf", &err) == TS_OK, "implicit-root-taken.conf loads"))
        diag("  %s", err.text);
    ok(strcmp(f.v[f.root].name, "root2") == 0 && f.v[f.root].implicit, "  implicit root avoids taken names");
    ok(strcmp(parent_name(&f, "root"), "root2") == 0, "  the switch named 'root' hangs under it");
    round_trip(&f, "implicit-root-taken.conf");
    ts_fabric_free(&f);

    if (!ok(parse(&f, "SwitchName=a Nodes=n[1-2]\r\nSwitchName=b Switches=a\r\n", &err) == TS_OK &&
           strcmp(parent_name(&f, "a"), "b") == 0 && f.nnodes == 2, "CRLF line ends are accepted"))
        diag("  %s", err.text);
    ts_fabric_free(&f);

    if (!ok(parse(&f, "SwitchName=a Nodes=n1", &err) == TS_OK && f.nnodes == 1, "no newline at the end"))
        diag("  %s", err.text);
    ts_fabric_free(&f);

    const char text_nul[] = "SwitchName=a Nodes=n1\nSwitchName=b Nodes=n2";
    ok(ts_fabric_parse_topology_conf(&f, text_nul, 21, "mem.conf", &err) == TS_OK && f.nnodes == 1,
       "only len bytes are read");
    ts_fabric_free(&f);
}

typedef struct broken_case {
    const char *file;
    int line;
    const char *message;
} broken_case;

static const broken_case broken[] = {
    { "bad-unknown-switch.conf", 2, "switch 'leaf9' is referenced but never defined" },
    { "bad-switch-twice.conf", 3, "switch 'leaf1' is defined twice (first on line 1)" },
    { "bad-node-twice-same.conf", 1, "node 'cn2' is listed twice under switch 'a'" },
    { "bad-node-twice.conf", 2, "node 'cn3' is listed under switch 'b' and already under switch 'a' (line 1)" },
    { "bad-two-parents.conf", 3, "switch 'leaf' is listed under two parents: 'spine1' (line 2) and 'spine2'" },
    { "bad-node-then-switch.conf", 2, "'x1' is used both as a node (line 1) and as a switch" },
    { "bad-switch-then-node.conf", 2, "'s1' is used both as a switch (line 1) and as a node" },
    { "bad-node-in-switches.conf", 2, "'n1' is used both as a node (line 1) and as a switch in Switches= of 'top'" },
    { "bad-cycle.conf", 1, "switch 'a' is part of a cycle (it is listed under 'c' on line 3)" },
    { "bad-cycle-below-root.conf", 3, "switch 'p' is part of a cycle (it is listed under 'q' on line 4)" },
    { "bad-self-cycle.conf", 1, "switch 'a' lists itself in Switches= (a cycle)" },
    { "bad-empty-nodes.conf", 1, "empty Nodes= list" },
    { "bad-empty-switches.conf", 2, "empty Switches= list" },
    { "bad-no-children.conf", 2, "switch 'lonely' has neither Nodes= nor Switches=" },
    { "bad-unknown-key.conf", 1, "unknown key 'Node' (allowed: SwitchName, Switches, Nodes, LinkSpeed)" },
    { "bad-missing-switchname.conf", 2, "missing SwitchName=" },
    { "bad-range.conf", 1, "bad Nodes= list 'cn[5-3]': column 4: range 5-3 has lo > hi" },
    { "bad-unterminated.conf", 1, "bad Nodes= list 'cn[1-3': column 3: unterminated '['" },
    { "bad-no-switch.conf", 3, "no switch defined" },
    { "bad-empty-file.conf", 1, "no switch defined" },
    { "bad-no-equals.conf", 1, "expected KEY=VALUE, found 'garbage'" },
    { "bad-switchname-list.conf", 1, "SwitchName=s[1-2] names 2 switches" },
    { "bad-key-twice.conf", 1, "Nodes= is given twice on one line" },
    { "bad-empty-switchname.conf", 1, "SwitchName= has no value" },
};

static void expect_error(int rc, const ts_error *err, const ts_fabric *f, const char *source, int line,
                         const char *message, const char *what)
{
    char prefix[1300];
    snprintf(prefix, sizeof prefix, "%s:%d: ", source, line);
    is_int(rc, TS_EINPUT, "%s is rejected", what);
    ok(f->nvert == 0 && f->v == NULL, "  and the fabric is left empty");
    if (!ok(strncmp(err->text, prefix, strlen(prefix)) == 0 && strstr(err->text, message) != NULL,
            "  '%s%s'", prefix, message))
        diag("  got '%s'", err->text);
}

static void test_broken_files(void)
{
    for (size_t i = 0; i < sizeof broken / sizeof broken[0]; i++) {
        ts_fabric f;
        ts_error err;
        int rc = load(&f, broken[i].file, &err);
        expect_error(rc, &err, &f, data_path(broken[i].file), broken[i].line, broken[i].message, broken[i].file);
        ts_fabric_free(&f);
    }
}

static void test_broken_text(void)
{
    ts_fabric f;
    ts_error err;
    const char nul[] = "SwitchName=a Nodes=n1\nSwitchName=b\0 Nodes=n2\n";
    int rc = ts_fabric_parse_topology_conf(&f, nul, sizeof nul - 1, "mem.conf", &err);
    expect_error(rc, &err, &f, "mem.conf", 2, "NUL byte at column 13", "a NUL byte");

    /* 64 KiB exactly is allowed, one byte more is not (CR of CRLF not counted) */
    size_t n = TS_TOPOCONF_LINE_MAX;
    char *big = malloc(n + 64);
    strcpy(big, "SwitchName=a Nodes=n1\n");
    size_t at = strlen(big);
    memset(big + at, ' ', n);
    big[at] = '#';
    memcpy(big + at + n, "\r\n", 3);
    if (!ok(parse(&f, big, &err) == TS_OK, "a 64 KiB comment line is fine"))
        diag("  %s", err.text);
    ts_fabric_free(&f);
    memcpy(big + at + n, "x\n", 3);
    expect_error(parse(&f, big, &err), &err, &f, "mem.conf", 2, "line is longer than 65536 bytes",
                 "a 64 KiB + 1 line");
    free(big);

    size_t k65 = 65 * 1024;
    char *line65 = malloc(k65 + 64);
    strcpy(line65, "SwitchName=a Nodes=n1,");
    at = strlen(line65);
    for (size_t i = at; i < k65; i++)
        line65[i] = i % 2 ? 'x' : ',';
    strcpy(line65 + k65, "y\n");
    expect_error(parse(&f, line65, &err), &err, &f, "mem.conf", 1, "line is longer than", "a 65 KiB line");
    free(line65);

    expect_error(parse(&f, "\n\nSwitchName=a Nodes=n[1-999999],m[1-999999]\n", &err), &err, &f, "mem.conf", 3,
                 "expands to more than 1000000 hosts", "an oversized hostlist");
    expect_error(parse(&f, "SwitchName=a Nodes=n[1-600000]\nSwitchName=b Nodes=m[1-600000]\n", &err), &err, &f,
                 "mem.conf", 2, "more than 1000000 switches and nodes", "too many vertices in total");
    expect_error(parse(&f, "SwitchName=a Nodes=n 1\n", &err), &err, &f, "mem.conf", 1,
                 "expected KEY=VALUE, found '1'", "a blank inside a list");
    expect_error(parse(&f, "SwitchName=a Nodes=n\v1\n", &err), &err, &f, "mem.conf", 1,
                 "column 2: whitespace in hostlist", "a vertical tab inside a list");
    expect_error(parse(&f, "SwitchName=a Nodes=n1\rn2\n", &err), &err, &f, "mem.conf", 1,
                 "column 3: whitespace in hostlist", "a bare CR in the middle of a line");

    rc = ts_fabric_load_topology_conf(&f, data_path("does-not-exist.conf"), &err);
    if (!ok(rc == TS_ESYS && strstr(err.text, "does-not-exist.conf: No such file") != NULL, "a missing file: TS_ESYS"))
        diag("  %s", err.text);
    ts_fabric_free(&f);
}

static void test_huge_file(void)
{
    char path[] = "/tmp/t_topoconf_XXXXXX";
    int fd = mkstemp(path);
    ok(fd >= 0 && ftruncate(fd, (off_t)64 * 1024 * 1024 + 1) == 0, "a sparse 64 MiB + 1 file");
    ts_fabric f;
    ts_error err;
    int rc = ts_fabric_load_topology_conf(&f, path, &err);
    if (!ok(rc == TS_EINPUT && strstr(err.text, "file is larger than 64 MiB") != NULL, "  is refused"))
        diag("  %s", err.text);
    ts_fabric_free(&f);
    close(fd);
    unlink(path);
}

/* Names without digits do not compress, so enough of them overflow one line. */
static void test_writer_limit(void)
{
    ts_fabric f;
    ts_error err;
    ts_fabric_init(&f);
    int sw = ts_fabric_add_vertex(&f, "big", TS_SWITCH, &err);
    int added = 0;
    for (int i = 0; i < 8000; i++) {
        char name[16] = "node-";
        for (int k = 0, x = i; k < 4; k++, x /= 26)
            name[5 + k] = (char)('a' + x % 26);
        int v = ts_fabric_add_vertex(&f, name, TS_NODE, &err);
        added += v >= 0 && ts_fabric_attach(&f, sw, v, &err) == TS_OK;
    }
    ok(added == 8000 && ts_fabric_finalize(&f, &err) == TS_OK, "a switch with 8000 digitless node names");
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    int rc = ts_fabric_write_topology_conf(&f, out);
    fclose(out);
    is_int(rc, TS_ELIMIT, "  the writer refuses a line longer than the parser accepts");
    ok(strstr(buf, "node-") == NULL, "  and writes no partial line");
    free(buf);
    ts_fabric_free(&f);
}

/* A random tree of about 1000 nodes, written the way admins do: leaves first, ranges. */
static char *generate(unsigned *seed, int *want_nodes)
{
    size_t cap = 1 << 20, len = 0;
    char *s = malloc(cap);
    int nleaf = 20 + (int)(*seed % 30), node = 1;
    for (int l = 0; l < nleaf; l++) {
        *seed = *seed * 1103515245u + 12345u;
        int count = 10 + (int)((*seed >> 8) % 70);
        int gap = (*seed >> 16) % 3 == 0;
        len += (size_t)snprintf(s + len, cap - len, "SwitchName=leaf%d Nodes=cn[%04d-%04d]%s", l, node,
                                node + count - 1, gap ? "," : "\n");
        node += count;
        if (gap) {
            len += (size_t)snprintf(s + len, cap - len, "gpu%d\n", node);
            node += 2;
        }
    }
    /* a random shape above the leaves: each switch of level k+1 takes 1..4 of level k */
    int level = 0, width = nleaf, sw = 0;
    while (width > 1) {
        int next = 0, i = 0;
        while (i < width) {
            *seed = *seed * 1103515245u + 12345u;
            int take = 1 + (int)((*seed >> 8) % 4);
            if (take > width - i)
                take = width - i;
            len += (size_t)snprintf(s + len, cap - len, "SwitchName=s%d_%d Switches=", level + 1, next);
            for (int j = 0; j < take; j++) {
                const char *sep = j ? "," : "";
                if (level == 0)
                    len += (size_t)snprintf(s + len, cap - len, "%sleaf%d", sep, i + j);
                else
                    len += (size_t)snprintf(s + len, cap - len, "%ss%d_%d", sep, level, i + j);
            }
            s[len++] = '\n';
            i += take;
            next++;
            sw++;
        }
        width = next;
        level++;
    }
    s[len] = '\0';
    int nodes = 0;
    for (char *p = s; (p = strstr(p, "Nodes=")); p++) {
        char *e = strchr(p, '\n');
        ts_hostlist hl;
        ts_error err;
        if (ts_hostlist_expand(p + 6, (size_t)(e - p - 6), &hl, &err) == TS_OK)
            nodes += (int)hl.count;
        ts_hostlist_free(&hl);
    }
    *want_nodes = nodes;
    return s;
}

static void test_generated(void)
{
    unsigned seed = 4242;
    for (int round = 0; round < 6; round++) {
        int want_nodes;
        char *text = generate(&seed, &want_nodes);
        ts_fabric f;
        ts_error err;
        int rc = parse(&f, text, &err);
        if (!ok(rc == TS_OK, "generated file %d parses (%d nodes)", round, want_nodes)) {
            diag("  %s", err.text);
            free(text);
            continue;
        }
        is_int(f.nnodes, want_nodes, "  every node is there");
        ok(f.nnodes > 500, "  a sizeable fabric");
        round_trip(&f, "generated file");
        ts_fabric_free(&f);
        free(text);
    }
}

/* Malformed input of every kind must give TS_OK or TS_EINPUT with a located message. */
static void test_garbage(void)
{
    static const char *const pieces[] = {
        "SwitchName=", "switches=", "Nodes=", "LinkSpeed=", "s1", "s2", "n[1-3]", "[", "]", ",", "-",
        " ", "\t", "\n", "\r\n", "#", "=", "0", "99999999999", "\0", "root", "s[1-2]", "n1", "x",
    };
    static const char mutable_base[] = "SwitchName=s1 Switches=s[2-3]\nSwitchName=s2 Nodes=a[1-4]\n"
                                       "SwitchName=s3 Nodes=b[01-10],c0\nSwitchName=s4 Switches=s1\n";
    unsigned seed = 99;
    int bad = 0, parsed = 0;
    char buf[512];
    for (int round = 0; round < 20000; round++) {
        size_t len = 0;
        seed = seed * 1103515245u + 12345u;
        int mode = (int)(seed >> 28) % 3;
        if (mode == 2) {
            /* a few bytes changed in a valid file: reaches the deeper checks */
            len = strlen(mutable_base);
            memcpy(buf, mutable_base, len);
            for (int i = 0; i < 1 + (int)(seed >> 4) % 2; i++) {
                seed = seed * 1103515245u + 12345u;
                buf[(seed >> 8) % len] = "s1[],-=# \n0aN"[(seed >> 20) % 14];
            }
        }
        int pieces_n = 1 + (int)((seed >> 8) % 40);
        for (int i = 0; mode != 2 && i < pieces_n && len < sizeof buf - 32; i++) {
            seed = seed * 1103515245u + 12345u;
            if (mode) {
                buf[len++] = (char)(seed >> 16);
            } else {
                const char *p = pieces[(seed >> 16) % (sizeof pieces / sizeof pieces[0])];
                size_t pl = *p ? strlen(p) : 1;
                memcpy(buf + len, p, pl);
                len += pl;
            }
        }
        ts_fabric f;
        ts_error err = { "" };
        int rc = ts_fabric_parse_topology_conf(&f, buf, len, "g.conf", &err);
        if (rc == TS_OK)
            parsed++;
        else if (rc != TS_EINPUT || strncmp(err.text, "g.conf:", 7) != 0)
            bad++;
        ts_fabric_free(&f);
    }
    is_int(bad, 0, "20000 garbage inputs: only TS_OK or located TS_EINPUT");
    ok(parsed > 50, "  some mutated files are still valid (%d), so the deep checks ran", parsed);
}

int main(void)
{
    find_data_dir();
    test_good_files();
    test_broken_files();
    test_broken_text();
    test_huge_file();
    test_writer_limit();
    test_generated();
    test_garbage();
    return done_testing();
}
