/* toposcope — rankfile, hostfile, machinefile, hints, tree text and Graphviz. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "toposcope/emit.h"
#include "toposcope/hints_read.h"
#include "toposcope/textout.h"

/* ---- a buffered writer: fprintf per number would dominate at 65 536 ranks ---- */

typedef struct outbuf {
    FILE *f;
    size_t n;
    char b[1 << 16];
} outbuf;

static void ob_flush(outbuf *o)
{
    if (o->n)
        fwrite(o->b, 1, o->n, o->f);
    o->n = 0;
}

static void ob_mem(outbuf *o, const char *s, size_t len)
{
    if (len > sizeof o->b - o->n) {
        ob_flush(o);
        if (len > sizeof o->b) {
            fwrite(s, 1, len, o->f);
            return;
        }
    }
    memcpy(o->b + o->n, s, len);
    o->n += len;
}

static void ob_str(outbuf *o, const char *s)
{
    ob_mem(o, s, strlen(s));
}

static void ob_int(outbuf *o, long v)
{
    char tmp[24];
    int n = 0;
    unsigned long u = v < 0 ? 0UL - (unsigned long)v : (unsigned long)v;
    do {
        tmp[n++] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0)
        tmp[n++] = '-';
    char out[24];
    for (int i = 0; i < n; i++)
        out[i] = tmp[n - 1 - i];
    ob_mem(o, out, (size_t)n);
}

static void ob_num(outbuf *o, double v)
{
    char tmp[48];
    if (isfinite(v))
        snprintf(tmp, sizeof tmp, "%.4f", v);
    else
        snprintf(tmp, sizeof tmp, "null");
    ob_str(o, tmp);
}

static int ob_done(outbuf *o)
{
    ob_flush(o);
    return ferror(o->f) ? TS_ESYS : TS_OK;
}

static outbuf *ob_open(FILE *f)
{
    outbuf *o = malloc(sizeof *o);
    if (o) {
        o->f = f;
        o->n = 0;
    }
    return o;
}

static int ob_close(outbuf *o)
{
    int rc = ob_done(o);
    free(o);
    return rc;
}

static const char *node_name(const ts_hierarchy *h, int node)
{
    const ts_fabric *f = h->fabric;
    return f->v[f->node_vertex[node]].name;
}

/* ---- rankfile, hostfile, machinefile ---- */

void ts_emit_slot(const ts_placement *pl, int r, char *buf, size_t max)
{
    int n;
    const int *cores = ts_placement_cores(pl, r, &n);
    const ts_hwtree *hw = ts_placement_hwtree(pl, pl->rank[r].node);
    size_t used = 0;
    buf[0] = '\0';
    for (int k = 0; k < n && used < max;) {
        const ts_hwcore *c = &hw->core[cores[k]];
        int j = k;
        while (j + 1 < n && hw->core[cores[j + 1]].package == c->package &&
               hw->core[cores[j + 1]].core_in_package == hw->core[cores[j]].core_in_package + 1)
            j++;
        int last = hw->core[cores[j]].core_in_package;
        int w = j > k ? snprintf(buf + used, max - used, "%s%d:%d-%d", used ? "," : "", c->package,
                                 c->core_in_package, last)
                      : snprintf(buf + used, max - used, "%s%d:%d", used ? "," : "", c->package,
                                 c->core_in_package);
        if (w < 0)
            break;
        used += (size_t)w;
        k = j + 1;
    }
}

int ts_emit_rankfile(const ts_placement *pl, FILE *out)
{
    outbuf *o = ob_open(out);
    if (!o)
        return TS_ENOMEM;
    char slot[256];
    for (int r = 0; r < pl->nranks; r++) {
        ts_emit_slot(pl, r, slot, sizeof slot);
        ob_str(o, "rank ");
        ob_int(o, r);
        ob_str(o, "=");
        ob_str(o, node_name(pl->h, pl->rank[r].node));
        ob_str(o, " slot=");
        ob_str(o, slot);
        ob_str(o, "\n");
    }
    return ob_close(o);
}

int ts_emit_hostfile(const ts_placement *pl, FILE *out)
{
    outbuf *o = ob_open(out);
    if (!o)
        return TS_ENOMEM;
    for (int r = 0; r < pl->nranks; r++) {
        ob_str(o, node_name(pl->h, pl->rank[r].node));
        ob_str(o, "\n");
    }
    return ob_close(o);
}

int ts_emit_machinefile(const ts_placement *pl, FILE *out)
{
    outbuf *o = ob_open(out);
    if (!o)
        return TS_ENOMEM;
    for (int i = 0; i < pl->h->nnodes; i++) {
        int node = pl->node_order[i];
        if (pl->node_ranks[node] == 0)
            continue;
        ob_str(o, node_name(pl->h, node));
        ob_str(o, ":");
        ob_int(o, pl->node_ranks[node]);
        ob_str(o, "\n");
    }
    return ob_close(o);
}

/* MPICH's Hydra gives the first n ranks to a line's host, the next to the next line's, and
 * starts one proxy per line: a line per run of consecutive ranks on one node keeps rank order. */
int ts_emit_hydra_hosts(const ts_placement *pl, FILE *out)
{
    outbuf *o = ob_open(out);
    if (!o)
        return TS_ENOMEM;
    for (int r = 0, run = 1; r < pl->nranks; r++, run++) {
        if (r + 1 < pl->nranks && pl->rank[r + 1].node == pl->rank[r].node)
            continue;
        ob_str(o, node_name(pl->h, pl->rank[r].node));
        ob_str(o, ":");
        ob_int(o, run);
        ob_str(o, "\n");
        run = 0;
    }
    return ob_close(o);
}

/* LSF's affinity file lists CPUs one by one ("0,1", never "0-1"), and PRRTE binds each rank to
 * exactly the CPUs of its line: every hardware thread of every core the rank has. */
int ts_emit_lsf_affinity(const ts_placement *pl, FILE *out)
{
    outbuf *o = ob_open(out);
    if (!o)
        return TS_ENOMEM;
    for (int r = 0; r < pl->nranks; r++) {
        int ncores;
        const int *cores = ts_placement_cores(pl, r, &ncores);
        const ts_hwtree *hw = ts_placement_hwtree(pl, pl->rank[r].node);
        ob_str(o, node_name(pl->h, pl->rank[r].node));
        for (int k = 0, first = 1; k < ncores; k++) {
            const ts_hwcore *c = &hw->core[cores[k]];
            for (int t = 0; t < c->npus; t++, first = 0) {
                ob_str(o, first ? " " : ",");
                ob_int(o, hw->pus[c->first_pu + t]);
            }
        }
        ob_str(o, "\n");
    }
    return ob_close(o);
}

/* ---- hints ---- */

static void rank_cpus(const ts_placement *pl, int r, char *buf, size_t max)
{
    int n;
    const int *cores = ts_placement_cores(pl, r, &n);
    const ts_hwtree *hw = ts_placement_hwtree(pl, pl->rank[r].node);
    size_t used = 0;
    buf[0] = '\0';
    for (int k = 0; k < n && used + 1 < max; k++) {
        if (k)
            buf[used++] = ',';
        ts_hwtree_core_cpus(hw, cores[k], buf + used, max - used);
        used += strlen(buf + used);
    }
}

static void int_list(outbuf *o, const int *v, int n)
{
    ob_str(o, "[");
    for (int i = 0; i < n; i++) {
        if (i)
            ob_str(o, ", ");
        ob_int(o, v[i]);
    }
    ob_str(o, "]");
}

static void flag_list(outbuf *o, const unsigned char *v, int n)
{
    ob_str(o, "[");
    for (int i = 0; i < n; i++)
        ob_str(o, i ? (v[i] ? ", 1" : ", 0") : (v[i] ? "1" : "0"));
    ob_str(o, "]");
}

int ts_emit_hints_yaml(const ts_hierarchy *h, const ts_placement *pl, const ts_groups *g,
                       const ts_policy *p, FILE *out)
{
    outbuf *o = ob_open(out);
    if (!o)
        return TS_ENOMEM;
    ob_str(o, "# toposcope hints: the levels of the hierarchy, outermost first, each with a LogP\n"
              "# estimate for messages between its groups (microseconds; null where there is none,\n"
              "# and reason says why),\n"
              "# and per rank its group id at every level (dense, rank 0 in group 0) and whether it\n"
              "# leads that group (it is the group's lowest rank), in the order of 'levels'.\n");
    ob_str(o, "version: 2\npolicy: \"");
    ob_str(o, p->name);
    ob_str(o, "\"\nkind: ");
    ob_str(o, ts_placement_kind_name(p->kind));
    ob_str(o, "\nnranks: ");
    ob_int(o, g->members_are_nodes ? 0 : g->nmembers);
    ob_str(o, "\nnnodes: ");
    ob_int(o, h->nnodes);
    ob_str(o, "\ncpus_per_rank: ");
    ob_int(o, pl ? pl->cpus_per_rank : p->cpus_per_rank);
    ob_str(o, "\nlevels:\n");
    for (int l = 0; l < g->nlevels; l++) {
        const ts_level *lv = &g->level[l];
        ob_str(o, "  - {name: ");
        ob_str(o, lv->name);
        ob_str(o, ", depth: ");
        ob_int(o, l);
        ob_str(o, ", groups: ");
        ob_int(o, lv->ngroups);
        ob_str(o, ", logp: {L_us: ");
        ob_num(o, lv->logp.L_us);
        ob_str(o, ", o_s_us: ");
        ob_num(o, lv->logp.o_s_us);
        ob_str(o, ", o_r_us: ");
        ob_num(o, lv->logp.o_r_us);
        ob_str(o, ", g_us: ");
        ob_num(o, lv->logp.g_us);
        ob_str(o, ", pairs: ");
        ob_int(o, lv->logp.pairs);
        ob_str(o, ", source: ");
        ob_str(o, lv->logp.source);
        if (lv->logp.reason) {
            ob_str(o, ", reason: \"");
            ob_str(o, lv->logp.reason);
            ob_str(o, "\"");
        }
        ob_str(o, "}}\n");
    }
    int *ids = malloc(sizeof(int) * (size_t)g->nlevels);
    if (!ids) {
        ob_close(o);
        return TS_ENOMEM;
    }
    ob_str(o, g->members_are_nodes ? "nodes:\n" : "ranks:\n");
    char slot[256], cpus[1024];
    for (int m = 0; m < g->nmembers; m++) {
        const int *grp = g->group + (size_t)m * g->nlevels;
        memcpy(ids, grp, sizeof(int) * (size_t)g->nlevels);
        if (g->members_are_nodes) {
            ob_str(o, "  - {node: \"");
            ob_str(o, node_name(h, m));
        } else {
            ts_emit_slot(pl, m, slot, sizeof slot);
            rank_cpus(pl, m, cpus, sizeof cpus);
            ob_str(o, "  - {rank: ");
            ob_int(o, m);
            ob_str(o, ", node: \"");
            ob_str(o, node_name(h, pl->rank[m].node));
            ob_str(o, "\", slot: \"");
            ob_str(o, slot);
            ob_str(o, "\", cpus: \"");
            ob_str(o, cpus);
        }
        ob_str(o, "\", group: ");
        int_list(o, ids, g->nlevels);
        ob_str(o, ", leader: ");
        flag_list(o, g->leader + (size_t)m * g->nlevels, g->nlevels);
        ob_str(o, "}\n");
    }
    free(ids);
    return ob_close(o);
}

static void env_to_file(void *out, const char *key, const char *value)
{
    ts_emit_env_line(out, key, value);
}

int ts_emit_hints_env(const ts_hierarchy *h, const ts_placement *pl, const ts_groups *g,
                      const ts_policy *p, const ts_emit_paths *paths, const ts_mpi_plan *mpi,
                      int rank, FILE *out)
{
    char cpus[1024];
    fprintf(out, "# toposcope: the environment of %s %d (hints.yaml has every %s)\n",
            g->members_are_nodes ? "node" : "rank", rank, g->members_are_nodes ? "node" : "rank");
    ts_emit_env_line(out, "TOPOSCOPE_POLICY", p->name);
    if (paths && paths->hints)
        ts_emit_env_line(out, "TOPOSCOPE_HINTS", paths->hints);
    if (paths && paths->rankfile)
        ts_emit_env_line(out, "TOPOSCOPE_RANKFILE", paths->rankfile);
    if (paths && paths->hostfile)
        ts_emit_env_line(out, "TOPOSCOPE_HOSTFILE", paths->hostfile);
    if (paths && paths->machinefile)
        ts_emit_env_line(out, "TOPOSCOPE_MACHINEFILE", paths->machinefile);
    /* the per-member part is the one every task gets from `toposcope hints` or the plugin */
    ts_hints_env e;
    memset(&e, 0, sizeof e);
    e.is_node = g->members_are_nodes;
    e.index = rank;
    e.nlevels = g->nlevels;
    for (int l = 0; l < g->nlevels; l++)
        e.level[l] = g->level[l].name;
    if (rank >= 0 && rank < g->nmembers) {
        e.node = node_name(h, e.is_node ? rank : pl->rank[rank].node);
        if (!e.is_node) {
            rank_cpus(pl, rank, cpus, sizeof cpus);
            e.cpus = cpus;
        }
        e.group = g->group + (size_t)rank * g->nlevels;
        e.leader = g->leader + (size_t)rank * g->nlevels;
    }
    ts_hints_env_each(&e, env_to_file, out);
    if (mpi && paths) {
        ts_mpi_paths files = {paths->rankfile, paths->hostfile, paths->hydra_hosts,
                              paths->lsf_affinity};
        ts_mpi_env_each(mpi, &files, env_to_file, out);
    }
    return ferror(out) ? TS_ESYS : TS_OK;
}

/* ---- pictures ---- */

typedef struct rank_span {
    int count, lo, hi;
} rank_span;

/* Per vertex the ranks below it: a rank counts at each of its cores and, through its first
 * core, at every ancestor. One pass puts ranks on cores, a second pass (vertices are stored
 * parents first, so backwards is children first) carries them up sequentially: walking up per
 * rank would jump around the whole hierarchy for every rank of a spread placement. */
static void span_add(rank_span *x, int count, int lo, int hi)
{
    x->count += count;
    x->lo = lo < x->lo ? lo : x->lo;
    x->hi = hi > x->hi ? hi : x->hi;
}

static rank_span *rank_spans(const ts_hierarchy *h, const ts_placement *pl)
{
    rank_span *s = malloc(sizeof *s * (size_t)(h->nvert + 1));
    rank_span *up = malloc(sizeof *up * (size_t)(h->nvert + 1));
    if (!s || !up) {
        free(s);
        free(up);
        return NULL;
    }
    for (int i = 0; i < h->nvert; i++)
        s[i] = up[i] = (rank_span){ 0, INT_MAX, -1 };
    for (int r = 0; pl && r < pl->nranks; r++) {
        int n, node = pl->rank[r].node;
        const int *cores = ts_placement_cores(pl, r, &n);
        for (int k = 0; k < n; k++)
            span_add(&s[ts_hierarchy_core_vertex(h, node, cores[k])], 1, r, r);
        span_add(&up[ts_hierarchy_core_vertex(h, node, cores[0])], 1, r, r);
    }
    for (int v = h->nvert - 1; v >= 0; v--) {
        if (!(h->v[v].kinds & TS_HK_BIT(TS_HK_CORE)))
            s[v] = up[v];
        int p = h->v[v].parent;
        if (p != TS_NONE && up[v].count)
            span_add(&up[p], up[v].count, up[v].lo, up[v].hi);
    }
    free(up);
    return s;
}

static void span_text(const rank_span *s, char *buf, size_t max)
{
    if (s->count == 0)
        snprintf(buf, max, "no ranks");
    else if (s->count == 1)
        snprintf(buf, max, "rank %d", s->lo);
    else if (s->hi - s->lo + 1 == s->count)
        snprintf(buf, max, "ranks %d-%d", s->lo, s->hi);
    else
        snprintf(buf, max, "%d ranks in %d..%d", s->count, s->lo, s->hi);
}

static const char *kind_word(const ts_hier_vertex *x)
{
    if (x->kinds & TS_HK_BIT(TS_HK_SWITCH))
        return "Switch ";
    if (x->kinds & TS_HK_BIT(TS_HK_NODE))
        return "Node ";
    return "";
}

int ts_emit_tree_text(const ts_hierarchy *h, const ts_placement *pl, FILE *out)
{
    rank_span *span = rank_spans(h, pl);
    outbuf *o = ob_open(out);
    if (!span || !o) {
        free(span);
        free(o);
        return TS_ENOMEM;
    }
    int placed = pl && pl->nranks > 0;
    ob_str(o, "# toposcope tree: switches, nodes, and inside each node the package, NUMA, L3 and\n"
              "# core groups the job may use (merged where one holds a single other), with the\n"
              "# ranks placed below each (\"N ranks in a..b\" when they are not consecutive).\n");
    char label[256], ranks[96], cpus[256];
    /* vertices are stored depth first, so the stored order is the printed order */
    for (int v = 0; v < h->nvert; v++) {
        const ts_hier_vertex *x = &h->v[v];
        for (int d = 0; d < x->depth; d++)
            ob_str(o, "  ");
        ts_hierarchy_label(h, v, label, sizeof label);
        ob_str(o, kind_word(x));
        ob_str(o, label);
        if (x->kinds & TS_HK_BIT(TS_HK_CORE)) {
            ts_hwtree_core_cpus(h->templates[h->node_template[x->node]].hw, x->core, cpus, sizeof cpus);
            ob_str(o, " (PU ");
            ob_str(o, cpus);
            ob_str(o, ")");
        }
        if (placed) {
            span_text(&span[v], ranks, sizeof ranks);
            ob_str(o, ": ");
            ob_str(o, ranks);
        }
        ob_str(o, "\n");
    }
    free(span);
    return ob_close(o);
}

int ts_emit_tree_dot(const ts_hierarchy *h, const ts_placement *pl, FILE *out)
{
    rank_span *span = rank_spans(h, pl);
    outbuf *o = ob_open(out);
    if (!span || !o) {
        free(span);
        free(o);
        return TS_ENOMEM;
    }
    int detail = h->nvert <= TS_DOT_DETAIL_MAX, placed = pl && pl->nranks > 0;
    char label[256], ranks[96];
    ob_str(o, "// toposcope tree; render with: dot -Tsvg tree.dot > tree.svg\n"
              "digraph toposcope {\n  node [fontname=\"Helvetica\", fontsize=10];\n");
    if (!detail)
        ob_str(o, "  // packages, NUMA nodes, L3 caches and cores left out: too many to draw\n");
    for (int v = 0; v < h->nvert; v++) {
        const ts_hier_vertex *x = &h->v[v];
        int inside = x->fabric_vertex == TS_NONE;
        if (inside && !detail)
            continue;
        ts_hierarchy_label(h, v, label, sizeof label);
        span_text(&span[v], ranks, sizeof ranks);
        ob_str(o, "  v");
        ob_int(o, v);
        ob_str(o, " [label=\"");
        for (const char *c = label; *c; c++)     /* names are hostnames; keep DOT strings safe */
            ob_mem(o, (*c == '"' || *c == '\\') ? "_" : c, 1);
        if (placed) {
            ob_str(o, "\\n");
            ob_str(o, ranks);
        }
        ob_str(o, x->kinds & TS_HK_BIT(TS_HK_SWITCH) ? "\", shape=box, style=filled, fillcolor=\"#dde8f5\"]\n"
                   : x->kinds & TS_HK_BIT(TS_HK_NODE) ? "\", shape=box, style=\"rounded,filled\", fillcolor=\"#e8f5dd\"]\n"
                   : "\", shape=ellipse]\n");
        if (x->parent != TS_NONE) {
            ob_str(o, "  v");
            ob_int(o, x->parent);
            ob_str(o, " -> v");
            ob_int(o, v);
            ob_str(o, ";\n");
        }
    }
    ob_str(o, "}\n");
    free(span);
    return ob_close(o);
}
