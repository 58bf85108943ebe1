/* toposcope — the tree.yaml reader (the inverse of ts_fabric_write_yaml). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "toposcope/treeyaml.h"
#include "toposcope/topoconf.h"
#include "util/ydoc.h"

static const char *const top_keys[] = { "nodes", "switches", "vertices", NULL };
static const char *const vertex_keys[] = { "name", "kind", "parent", "link_us", "link_lo_us",
                                           "link_hi_us", "host_us", "unresolved", NULL };
static const char *const kinds[] = { "switch", "node", NULL };

/* Latencies are microseconds; a day is far beyond any plausible link and keeps sums finite. */
#define TREE_MAX_US 86400e6
#define TREE_NAME_MAX 256      /* a hostname is at most 255 bytes */

typedef struct tree_reader {
    ts_ydoc doc;
    ts_fabric *f;
    ts_error *err;
    int *entry;          /* vertex index -> its YAML mapping */
    int list;            /* the 'vertices' list */
} tree_reader;

static int read_latency(tree_reader *r, int map, const char *key, double *out)
{
    int v = ts_ydoc_get(&r->doc, map, key);
    if (v < 0 || ts_ydoc_is_null(&r->doc.v[v]))
        return TS_OK;                     /* stays NAN: unknown */
    return ts_ydoc_num(&r->doc, v, key, 0, TREE_MAX_US, out, r->err);
}

static int add_vertex(tree_reader *r, int map)
{
    ts_ydoc *d = &r->doc;
    if (d->v[map].type != TS_Y_MAP)
        return ts_ydoc_fail(d, map, r->err, "a vertex must be a mapping with name, kind and "
                            "parent, not %s", ts_ydoc_type_name(&d->v[map]));
    int rc = ts_ydoc_check_keys(d, map, vertex_keys, "a vertex", r->err);
    if (rc)
        return rc;
    int name_at = ts_ydoc_get(d, map, "name"), kind_at = ts_ydoc_get(d, map, "kind");
    if (name_at < 0 || kind_at < 0 || ts_ydoc_get(d, map, "parent") < 0)
        return ts_ydoc_fail(d, map, r->err, "a vertex needs the keys name, kind and parent");
    char name[TREE_NAME_MAX];
    int kind;
    if ((rc = ts_ydoc_name(d, name_at, "name", name, sizeof name, r->err)) ||
        (rc = ts_ydoc_choice(d, kind_at, "kind", kinds, &kind, r->err)))
        return rc;
    if (ts_fabric_find(r->f, name) != TS_NONE)
        return ts_ydoc_fail(d, name_at, r->err, "vertex '%s' is defined twice (first at line %d)",
                            name, d->v[r->entry[ts_fabric_find(r->f, name)]].line);
    int x = ts_fabric_add_vertex(r->f, name, kind ? TS_NODE : TS_SWITCH, r->err);
    if (x < 0)
        return x;
    r->entry[x] = map;
    ts_vertex *v = &r->f->v[x];
    if ((rc = read_latency(r, map, "link_us", &v->link_us)) ||
        (rc = read_latency(r, map, "link_lo_us", &v->link_lo_us)) ||
        (rc = read_latency(r, map, "link_hi_us", &v->link_hi_us)) ||
        (rc = read_latency(r, map, "host_us", &v->host_us)))
        return rc;
    if (kind == 0 && ts_ydoc_get(d, map, "host_us") >= 0)
        return ts_ydoc_fail(d, ts_ydoc_get(d, map, "host_us"), r->err,
                            "'host_us' belongs to nodes, and '%s' is a switch", name);
    int at = ts_ydoc_get(d, map, "unresolved");
    if (at >= 0 && kind == 1)
        return ts_ydoc_fail(d, at, r->err, "'unresolved' belongs to switches, and '%s' is a node", name);
    if (at >= 0 && (rc = ts_ydoc_bool(d, at, "unresolved", &v->unresolved, r->err)))
        return rc;
    return TS_OK;
}

/* Second pass: parents by name. Every vertex gets at most one, so only a cycle can keep a vertex
 * from the root; walk each chain with a step bound of the vertex count to find one in O(n). */
static int link_parents(tree_reader *r)
{
    ts_ydoc *d = &r->doc;
    ts_fabric *f = r->f;
    int root = TS_NONE;
    int *parent = malloc(sizeof(int) * (size_t)f->nvert);
    unsigned char *state = calloc((size_t)f->nvert, 1);   /* 0 new, 1 on the walk, 2 reaches root */
    int *walk = malloc(sizeof(int) * (size_t)f->nvert);
    int rc = TS_OK;
    if (!parent || !state || !walk) {
        rc = ts_fail(r->err, TS_ENOMEM, "%s: out of memory", d->src);
        goto out;
    }
    for (int x = 0; x < f->nvert && rc == TS_OK; x++) {
        int at = ts_ydoc_get(d, r->entry[x], "parent");
        parent[x] = TS_NONE;
        if (ts_ydoc_is_null(&d->v[at])) {
            if (f->v[x].kind == TS_NODE)
                rc = ts_ydoc_fail(d, at, r->err, "node '%s' needs a parent switch", f->v[x].name);
            else if (root != TS_NONE)
                rc = ts_ydoc_fail(d, at, r->err, "switches '%s' and '%s' both have no parent; a "
                                  "tree has one root", f->v[root].name, f->v[x].name);
            root = x;
            continue;
        }
        char name[TREE_NAME_MAX];
        if ((rc = ts_ydoc_name(d, at, "parent", name, sizeof name, r->err)))
            break;
        int p = ts_fabric_find(f, name);
        if (p == TS_NONE)
            rc = ts_ydoc_fail(d, at, r->err, "parent '%s' of '%s' is not a vertex of the tree",
                              name, f->v[x].name);
        else if (f->v[p].kind != TS_SWITCH)
            rc = ts_ydoc_fail(d, at, r->err, "parent '%s' of '%s' is a node; only switches have "
                              "children", name, f->v[x].name);
        else if (p == x)
            rc = ts_ydoc_fail(d, at, r->err, "'%s' is its own parent", name);
        parent[x] = p;
    }
    if (rc == TS_OK && root == TS_NONE)
        rc = ts_ydoc_fail(d, r->list, r->err, "no vertex has 'parent: null'; a tree needs a root "
                          "switch");
    for (int x = 0; x < f->nvert && rc == TS_OK; x++) {
        int len = 0, y = x;
        while (y != TS_NONE && state[y] == 0) {
            state[y] = 1;
            walk[len++] = y;
            y = parent[y];
        }
        if (y != TS_NONE && state[y] == 1) {
            rc = ts_ydoc_fail(d, ts_ydoc_get(d, r->entry[y], "parent"), r->err,
                              "'%s' is part of a cycle of parents", f->v[y].name);
            break;
        }
        for (int k = 0; k < len; k++)
            state[walk[k]] = 2;
    }
    /* attach in file order, so children keep the order the file lists them in */
    for (int x = 0; x < f->nvert && rc == TS_OK; x++)
        if (parent[x] != TS_NONE)
            rc = ts_fabric_attach(f, parent[x], x, r->err);
out:
    free(parent);
    free(state);
    free(walk);
    return rc;
}

static long count_key(tree_reader *r, const char *key, int *present, int *rc)
{
    long n = 0;
    int at = ts_ydoc_get(&r->doc, r->doc.root, key);
    *present = at >= 0;
    if (at >= 0)
        *rc = ts_ydoc_int(&r->doc, at, key, 0, TS_TREE_YAML_MAX_VERTICES, &n, r->err);
    return n;
}

static int read_tree(tree_reader *r)
{
    ts_ydoc *d = &r->doc;
    if (d->root < 0 || d->v[d->root].type != TS_Y_MAP)
        return ts_ydoc_fail(d, d->root, r->err, "a tree file is a mapping with the keys nodes, "
                            "switches and vertices");
    int rc = ts_ydoc_check_keys(d, d->root, top_keys, "the top level", r->err);
    if (rc)
        return rc;
    int list = ts_ydoc_get(d, d->root, "vertices");
    if (list < 0)
        return ts_ydoc_fail(d, d->root, r->err, "the key 'vertices' is missing");
    if (d->v[list].type != TS_Y_SEQ)
        return ts_ydoc_fail(d, list, r->err, "'vertices' must be a list, not %s",
                            ts_ydoc_type_name(&d->v[list]));
    if (d->v[list].n > TS_TREE_YAML_MAX_VERTICES)
        return ts_ydoc_fail(d, list, r->err, "more than %d vertices", TS_TREE_YAML_MAX_VERTICES);
    r->list = list;
    r->entry = malloc(sizeof(int) * (size_t)(d->v[list].n + 1));
    if (!r->entry)
        return ts_fail(r->err, TS_ENOMEM, "%s: out of memory", d->src);
    for (int k = d->v[list].first; k >= 0 && rc == TS_OK; k = d->v[k].next)
        rc = add_vertex(r, k);
    if (rc == TS_OK)
        rc = link_parents(r);
    if (rc == TS_OK && (rc = ts_fabric_finalize(r->f, r->err)) != TS_OK) {
        ts_error why = *r->err;           /* the fabric's own words, placed at the list */
        rc = ts_ydoc_fail(d, list, r->err, "%s", why.text);
    }
    int has_nodes = 0, has_switches = 0;
    long nodes = 0, switches = 0;
    if (rc == TS_OK)
        nodes = count_key(r, "nodes", &has_nodes, &rc);
    if (rc == TS_OK)
        switches = count_key(r, "switches", &has_switches, &rc);
    if (rc == TS_OK && has_nodes && nodes != r->f->nnodes)
        rc = ts_ydoc_fail(d, ts_ydoc_get(d, d->root, "nodes"), r->err, "'nodes: %ld' but the list "
                          "has %d nodes", nodes, r->f->nnodes);
    if (rc == TS_OK && has_switches && switches != r->f->nvert - r->f->nnodes)
        rc = ts_ydoc_fail(d, ts_ydoc_get(d, d->root, "switches"), r->err, "'switches: %ld' but "
                          "the list has %d switches", switches, r->f->nvert - r->f->nnodes);
    return rc;
}

int ts_fabric_parse_tree_yaml(ts_fabric *f, const char *text, size_t len, const char *source,
                              ts_error *err)
{
    ts_fabric_init(f);
    tree_reader r = { .f = f, .err = err };
    /* one mapping of at most 7 pairs per vertex, plus the top level */
    ts_ylimits lim = { TS_TREE_YAML_MAX_BYTES, 8, 16 * TS_TREE_YAML_MAX_VERTICES + 64 };
    int rc = ts_ydoc_parse(&r.doc, text, len, source, &lim, err);
    if (rc == TS_OK)
        rc = read_tree(&r);
    free(r.entry);
    ts_ydoc_free(&r.doc);
    if (rc != TS_OK)
        ts_fabric_free(f);
    return rc;
}

int ts_fabric_load_tree_yaml(ts_fabric *f, const char *path, ts_error *err)
{
    char *buf;
    size_t len;
    ts_fabric_init(f);
    int rc = ts_ydoc_read_file(path, TS_TREE_YAML_MAX_BYTES, &buf, &len, err);
    if (rc != TS_OK)
        return rc;
    rc = ts_fabric_parse_tree_yaml(f, buf, len, path, err);
    free(buf);
    return rc;
}

int ts_fabric_load_tree(ts_fabric *f, const char *path, ts_error *err)
{
    size_t n = strlen(path);
    if (n > 5 && !strcmp(path + n - 5, ".conf")) {
        ts_fabric_init(f);
        return ts_fabric_load_topology_conf(f, path, err);
    }
    return ts_fabric_load_tree_yaml(f, path, err);
}
