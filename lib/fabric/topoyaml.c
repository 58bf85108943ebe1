/* toposcope — Slurm's topology.yaml: a list of named topologies, each a tree or a block one.
 *
 * The schema is Slurm's topology.yaml(5) (Slurm 25.05, doc/man/man5/topology.yaml.5):
 *
 *   - topology: topo1              # first attribute, a unique name partitions refer to
 *     cluster_default: true        # the first so marked serves partitions without Topology=
 *     tree:
 *       switches:
 *         - switch: sw_root        # at most 64 characters
 *           children: s[1-2]       # child switches, a hostlist
 *         - switch: s1
 *           nodes: node[01-02]     # child nodes, a hostlist
 *   - topology: topo2
 *     cluster_default: false
 *     block:
 *       block_sizes:               # base size, then each a power of two times the one before
 *         - 4
 *         - 16
 *       blocks:
 *         - block: b1
 *           nodes: node[01-04]
 *
 * Slurm rejects a whole file that names a node it does not know, so callers prune first
 * (ts_fabric_keep_nodes). */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "toposcope/hostlist.h"
#include "toposcope/textout.h"
#include "toposcope/topoconf.h"
#include "toposcope/topoyaml.h"

/* A plain scalar when YAML reads it back as the same string: hostnames and hostlists
 * (letters, digits, "-._[],") that start with a letter, so never a number, and are no boolean
 * or null word; anything else double-quoted. */
static int plain_ok(const char *s)
{
    static const char *const words[] = { "true", "false", "yes", "no", "on", "off", "null", "y", "n", NULL };
    if (!isalpha((unsigned char)s[0]))
        return 0;
    for (const char *p = s; *p; p++)
        if (!isalnum((unsigned char)*p) && !strchr("-._[],", *p))
            return 0;
    for (int i = 0; words[i]; i++)
        if (!strcasecmp(s, words[i]))
            return 0;
    return 1;
}

static void scalar(FILE *out, const char *s)
{
    if (plain_ok(s))
        fputs(s, out);
    else
        ts_emit_yaml_string(out, s);
}

static int cmp_vertices(const void *a, const void *b, void *ctx)
{
    const ts_fabric *f = ctx;
    return ts_hostname_cmp(f->v[*(const int *)a].name, f->v[*(const int *)b].name);
}

/* The children of sw of one kind, in natural order, as a compressed hostlist in *list (NULL
 * when it has none). */
static int child_list(const ts_fabric *f, int sw, ts_vertex_kind kind, int *ids, char **names, char **list)
{
    size_t n = 0;
    *list = NULL;
    for (int c = f->v[sw].first_child; c != TS_NONE; c = f->v[c].next_sibling)
        if (f->v[c].kind == kind)
            ids[n++] = c;
    if (!n)
        return TS_OK;
    qsort_r(ids, n, sizeof *ids, cmp_vertices, (void *)f);
    for (size_t i = 0; i < n; i++)
        names[i] = f->v[ids[i]].name;
    *list = ts_hostlist_compress(names, n);
    return *list ? TS_OK : TS_ENOMEM;
}

typedef struct yaml_writer {
    const ts_fabric *f;
    FILE *out;
    ts_error *err;
    int *queue, *ids;
    char **names;
} yaml_writer;

static int write_switch(yaml_writer *w, int sw)
{
    const char *name = w->f->v[sw].name;
    if (strlen(name) > TS_TOPOYAML_SWITCH_NAME_MAX)
        return ts_fail(w->err, TS_EINPUT, "switch '%.64s...' has a name longer than the %d characters "
                       "topology.yaml allows: rename it in the tree", name, TS_TOPOYAML_SWITCH_NAME_MAX);
    char *children = NULL, *nodes = NULL;
    int rc = child_list(w->f, sw, TS_SWITCH, w->ids, w->names, &children);
    if (rc == TS_OK)
        rc = child_list(w->f, sw, TS_NODE, w->ids, w->names, &nodes);
    if (rc == TS_OK) {
        fputs("      - switch: ", w->out);
        scalar(w->out, name);
        if (children) {
            fputs("\n        children: ", w->out);
            scalar(w->out, children);
        }
        if (nodes) {
            fputs("\n        nodes: ", w->out);
            scalar(w->out, nodes);
        }
        fputc('\n', w->out);
    } else {
        rc = ts_fail(w->err, TS_ENOMEM, "out of memory");
    }
    free(children);
    free(nodes);
    return rc;
}

/* The switches below top (top included), breadth first with siblings in natural order: each
 * switch before its children, as Slurm's own example reads. */
static int write_tree(yaml_writer *w, int top)
{
    const ts_fabric *f = w->f;
    int head = 0, tail = 0, rc = TS_OK;
    w->queue[tail++] = top;
    fputs("  tree:\n    switches:\n", w->out);
    while (head < tail && rc == TS_OK) {
        int x = w->queue[head++], first = tail;
        rc = write_switch(w, x);
        for (int c = f->v[x].first_child; c != TS_NONE; c = f->v[c].next_sibling)
            if (f->v[c].kind == TS_SWITCH)
                w->queue[tail++] = c;
        qsort_r(w->queue + first, (size_t)(tail - first), sizeof *w->queue, cmp_vertices, (void *)f);
    }
    return rc;
}

static int write_blocks(yaml_writer *w, int top)
{
    int n = ts_fabric_blocks(w->f, top, w->queue, w->f->nvert);
    if (n < 0)
        return ts_fail(w->err, TS_ENOMEM, "out of memory");
    if (n == 0)
        return ts_fail(w->err, TS_EINPUT, "switch '%s' holds no nodes: no block to write", w->f->v[top].name);
    int sizes[TS_BLOCK_SIZES_MAX], k = ts_block_sizes(w->f, w->queue, n, 1, sizes);
    fputs("  block:\n    block_sizes:\n", w->out);
    for (int i = 0; i < k; i++)
        fprintf(w->out, "      - %d\n", sizes[i]);
    fputs("    blocks:\n", w->out);
    for (int i = 0; i < n; i++) {
        char *nodes;
        if (child_list(w->f, w->queue[i], TS_NODE, w->ids, w->names, &nodes) != TS_OK)
            return ts_fail(w->err, TS_ENOMEM, "out of memory");
        fputs("      - block: ", w->out);
        scalar(w->out, w->f->v[w->queue[i]].name);
        fputs("\n        nodes: ", w->out);
        scalar(w->out, nodes);
        fputc('\n', w->out);
        free(nodes);
    }
    return TS_OK;
}

int ts_fabric_write_topology_yaml(const ts_fabric *f, int block, FILE *out, ts_error *err)
{
    if (f->root == TS_NONE)
        return ts_fail(err, TS_EINPUT, "the tree is not finalized");
    size_t n = (size_t)f->nvert + 1;
    yaml_writer w = { .f = f, .out = out, .err = err, .queue = malloc(sizeof(int) * n),
                      .ids = malloc(sizeof(int) * n), .names = malloc(sizeof(char *) * n) };
    int *tops = malloc(sizeof(int) * n);
    int rc = w.queue && w.ids && w.names && tops ? TS_OK : ts_fail(err, TS_ENOMEM, "out of memory");
    int ntops = rc == TS_OK ? ts_fabric_tops(f, tops, (int)n) : 0;
    if (rc == TS_OK)
        fprintf(out, "# topology.yaml (Slurm 25.05+) written by toposcope: one %s topology per fabric\n---\n",
                block ? "block" : "tree");
    for (int t = 0; t < ntops && rc == TS_OK; t++) {
        fprintf(out, "- topology: fabric%d\n  cluster_default: %s\n", t + 1, t ? "false" : "true");
        rc = block ? write_blocks(&w, tops[t]) : write_tree(&w, tops[t]);
    }
    if (rc == TS_OK && ferror(out))
        rc = ts_fail(err, TS_ESYS, "write error: %s", strerror(errno));
    free(w.queue);
    free(w.ids);
    free(w.names);
    free(tops);
    return rc;
}
