/* toposcope — Slurm topology.conf (topology/tree plugin): parser and writer.
 *
 * Lines are "SwitchName=NAME [Switches=HOSTLIST] [Nodes=HOSTLIST] [LinkSpeed=N]". A switch may
 * be listed in Switches= before its own line, so a listed name first becomes a placeholder
 * switch that its SwitchName= line later confirms; whatever is still unconfirmed at the end is
 * an error. Children are attached as soon as they are read, which lets every conflict be
 * reported with both lines involved. The input is untrusted: every read is bounded by len,
 * the vertex count is bounded, and cycle detection walks parent links iteratively. */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "toposcope/topoconf.h"
#include "toposcope/hostlist.h"

#define TOPOCONF_FILE_MAX ((size_t)64 * 1024 * 1024)
/* Far above any real cluster, low enough that hostile input cannot exhaust memory. */
#define TOPOCONF_VERTICES_MAX TS_HOSTLIST_MAX_HOSTS
#define QUOTE_MAX 64            /* longest excerpt of the input quoted in a message */

enum conf_key { KEY_SWITCHNAME, KEY_SWITCHES, KEY_NODES, KEY_LINKSPEED, KEY_COUNT };
static const char *const key_names[KEY_COUNT] = { "SwitchName", "Switches", "Nodes", "LinkSpeed" };

typedef struct conf_value {
    const char *text;
    size_t len;
    int present;
} conf_value;

typedef struct conf_parser {
    ts_fabric f;
    const char *source;
    ts_error *err;
    int line;
    /* per vertex, beside the fabric's own arrays */
    int *listed_line;           /* line where it appeared in a Switches=/Nodes= list, 0 if never */
    unsigned char *defined;     /* switches: its SwitchName= line has been read */
    int side_cap;
    int nswitch_lines;
} conf_parser;

static int fail(conf_parser *p, const char *fmt, ...) TS_PRINTF(2, 3);
static int fail(conf_parser *p, const char *fmt, ...)
{
    char what[TS_ERROR_TEXT_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return ts_fail(p->err, TS_EINPUT, "%s:%d: %s", p->source, p->line, what);
}

static int quote_len(size_t len)
{
    return (int)(len > QUOTE_MAX ? QUOTE_MAX : len);
}

static const char *quote_ellipsis(size_t len)
{
    return len > QUOTE_MAX ? "..." : "";
}

static int add_vertex(conf_parser *p, const char *name, ts_vertex_kind kind)
{
    if (p->f.nvert >= TOPOCONF_VERTICES_MAX)
        return fail(p, "more than %d switches and nodes", TOPOCONF_VERTICES_MAX);
    int v = ts_fabric_add_vertex(&p->f, name, kind, p->err);
    if (v < 0)
        return v;
    if (v >= p->side_cap) {
        int cap = p->f.cap;
        int *listed = realloc(p->listed_line, sizeof *listed * (size_t)cap);
        if (listed)
            p->listed_line = listed;
        unsigned char *defined = realloc(p->defined, (size_t)cap);
        if (defined)
            p->defined = defined;
        if (!listed || !defined)
            return ts_fail(p->err, TS_ENOMEM, "out of memory");
        p->side_cap = cap;
    }
    p->listed_line[v] = 0;
    p->defined[v] = 0;
    p->f.v[v].line = p->line;
    return v;
}

/* The callers have already checked what ts_fabric_attach() checks (parent is a switch, the
 * child has no parent yet), with messages that name lines; this cannot fail. */
static void append_child(conf_parser *p, int parent, int child)
{
    ts_fabric_attach(&p->f, parent, child, NULL);
}

/* Split one line (comment already removed) into its key=value tokens. */
static int tokenize(conf_parser *p, const char *s, size_t len, conf_value *values)
{
    memset(values, 0, sizeof *values * KEY_COUNT);
    size_t i = 0;
    while (i < len) {
        while (i < len && (s[i] == ' ' || s[i] == '\t'))
            i++;
        if (i == len)
            break;
        size_t start = i;
        while (i < len && s[i] != ' ' && s[i] != '\t')
            i++;
        const char *tok = s + start;
        size_t toklen = i - start;
        const char *eq = memchr(tok, '=', toklen);
        if (!eq)
            return fail(p, "expected KEY=VALUE, found '%.*s%s'", quote_len(toklen), tok, quote_ellipsis(toklen));
        size_t keylen = (size_t)(eq - tok);
        int key = KEY_COUNT;
        for (int k = 0; k < KEY_COUNT; k++)
            if (strlen(key_names[k]) == keylen && strncasecmp(tok, key_names[k], keylen) == 0)
                key = k;
        if (key == KEY_COUNT)
            return fail(p, "unknown key '%.*s%s' (allowed: SwitchName, Switches, Nodes, LinkSpeed)",
                        quote_len(keylen), tok, quote_ellipsis(keylen));
        if (values[key].present)
            return fail(p, "%s= is given twice on one line", key_names[key]);
        values[key].present = 1;
        values[key].text = eq + 1;
        values[key].len = toklen - keylen - 1;
        if (values[key].len == 0)
            return fail(p, key == KEY_SWITCHES || key == KEY_NODES ? "empty %s= list" : "%s= has no value",
                        key_names[key]);
    }
    return TS_OK;
}

static int expand_list(conf_parser *p, const conf_value *value, int key, ts_hostlist *hl)
{
    ts_error herr;
    int rc = ts_hostlist_expand(value->text, value->len, hl, &herr);
    if (rc == TS_EINPUT)
        return fail(p, "bad %s= list '%.*s%s': %s", key_names[key], quote_len(value->len), value->text,
                    quote_ellipsis(value->len), herr.text);
    if (rc != TS_OK)
        return ts_fail(p->err, rc, "%s", herr.text);
    if ((size_t)p->f.nvert + hl->count > TOPOCONF_VERTICES_MAX) {
        ts_hostlist_free(hl);
        return fail(p, "more than %d switches and nodes", TOPOCONF_VERTICES_MAX);
    }
    return TS_OK;
}

static int define_switch(conf_parser *p, const conf_value *value)
{
    ts_hostlist hl;
    int rc = expand_list(p, value, KEY_SWITCHNAME, &hl);
    if (rc != TS_OK)
        return rc;
    if (hl.count != 1) {
        rc = fail(p, "SwitchName=%.*s%s names %zu switches; give each switch its own line",
                  quote_len(value->len), value->text, quote_ellipsis(value->len), hl.count);
        ts_hostlist_free(&hl);
        return rc;
    }
    const char *name = hl.hosts[0];
    int v = ts_fabric_find(&p->f, name);
    if (v == TS_NONE) {
        v = add_vertex(p, name, TS_SWITCH);
    } else if (p->f.v[v].kind == TS_NODE) {
        v = fail(p, "'%s' is used both as a node (line %d) and as a switch", name, p->f.v[v].line);
    } else if (p->defined[v]) {
        v = fail(p, "switch '%s' is defined twice (first on line %d)", name, p->f.v[v].line);
    } else {
        p->f.v[v].line = p->line;       /* a placeholder from an earlier Switches= list */
    }
    if (v >= 0)
        p->defined[v] = 1;
    ts_hostlist_free(&hl);
    return v;
}

static int add_child_switch(conf_parser *p, int sw, const char *name)
{
    const char *parent = p->f.v[sw].name;
    int c = ts_fabric_find(&p->f, name);
    if (c == sw)
        return fail(p, "switch '%s' lists itself in Switches= (a cycle)", name);
    if (c != TS_NONE) {
        const ts_vertex *x = &p->f.v[c];
        if (x->kind == TS_NODE)
            return fail(p, "'%s' is used both as a node (line %d) and as a switch in Switches= of '%s'",
                        name, x->line, parent);
        if (x->parent == sw)
            return fail(p, "switch '%s' is listed twice under switch '%s'", name, parent);
        if (x->parent != TS_NONE)
            return fail(p, "switch '%s' is listed under two parents: '%s' (line %d) and '%s'", name,
                        p->f.v[x->parent].name, p->listed_line[c], parent);
    } else {
        c = add_vertex(p, name, TS_SWITCH);
        if (c < 0)
            return c;
        p->f.v[c].line = 0;             /* not defined yet */
    }
    p->listed_line[c] = p->line;
    append_child(p, sw, c);
    return TS_OK;
}

static int add_child_node(conf_parser *p, int sw, const char *name)
{
    int n = ts_fabric_find(&p->f, name);
    if (n != TS_NONE) {
        const ts_vertex *x = &p->f.v[n];
        if (x->kind == TS_SWITCH)
            return fail(p, "'%s' is used both as a switch (line %d) and as a node", name,
                        p->defined[n] ? x->line : p->listed_line[n]);
        if (x->parent == sw)
            return fail(p, "node '%s' is listed twice under switch '%s'", name, p->f.v[sw].name);
        return fail(p, "node '%s' is listed under switch '%s' and already under switch '%s' (line %d)", name,
                    p->f.v[sw].name, p->f.v[x->parent].name, x->line);
    }
    n = add_vertex(p, name, TS_NODE);
    if (n < 0)
        return n;
    p->listed_line[n] = p->line;
    append_child(p, sw, n);
    return TS_OK;
}

static int add_children(conf_parser *p, int sw, const conf_value *value, int key)
{
    ts_hostlist hl;
    int rc = expand_list(p, value, key, &hl);
    for (size_t i = 0; i < hl.count && rc == TS_OK; i++)
        rc = key == KEY_SWITCHES ? add_child_switch(p, sw, hl.hosts[i]) : add_child_node(p, sw, hl.hosts[i]);
    ts_hostlist_free(&hl);
    return rc;
}

static int parse_line(conf_parser *p, const char *s, size_t len)
{
    const char *nul = memchr(s, '\0', len);
    if (nul)
        return fail(p, "NUL byte at column %zu", (size_t)(nul - s) + 1);
    if (len > 0 && s[len - 1] == '\r')
        len--;
    if (len > TS_TOPOCONF_LINE_MAX)
        return fail(p, "line is longer than %d bytes", TS_TOPOCONF_LINE_MAX);
    const char *hash = memchr(s, '#', len);
    if (hash)
        len = (size_t)(hash - s);
    conf_value values[KEY_COUNT];
    int rc = tokenize(p, s, len, values);
    if (rc != TS_OK)
        return rc;
    int any = 0;
    for (int k = 0; k < KEY_COUNT; k++)
        any |= values[k].present;
    if (!any)
        return TS_OK;
    if (!values[KEY_SWITCHNAME].present)
        return fail(p, "missing SwitchName= (every line defines one switch)");
    int sw = define_switch(p, &values[KEY_SWITCHNAME]);
    if (sw < 0)
        return sw;
    p->nswitch_lines++;
    if (!values[KEY_SWITCHES].present && !values[KEY_NODES].present)
        return fail(p, "switch '%s' has neither Nodes= nor Switches=", p->f.v[sw].name);
    if (values[KEY_SWITCHES].present && (rc = add_children(p, sw, &values[KEY_SWITCHES], KEY_SWITCHES)) != TS_OK)
        return rc;
    if (values[KEY_NODES].present && (rc = add_children(p, sw, &values[KEY_NODES], KEY_NODES)) != TS_OK)
        return rc;
    return TS_OK;   /* LinkSpeed= is accepted for compatibility; latencies come from measurement */
}

static int check_all_defined(conf_parser *p)
{
    for (int v = 0; v < p->f.nvert; v++)
        if (p->f.v[v].kind == TS_SWITCH && !p->defined[v]) {
            p->line = p->listed_line[v];
            return fail(p, "switch '%s' is referenced but never defined", p->f.v[v].name);
        }
    return TS_OK;
}

/* Vertices not reachable from a parentless switch hang below a cycle; walking parent links from
 * one of them, the first vertex seen twice lies on the cycle. */
static int check_cycles(conf_parser *p)
{
    int n = p->f.nvert, head = 0, tail = 0;
    if (n <= 0)
        return TS_OK;
    int *queue = malloc(sizeof *queue * (size_t)n);
    unsigned char *seen = calloc((size_t)n, 1);
    if (!queue || !seen) {
        free(queue);
        free(seen);
        return ts_fail(p->err, TS_ENOMEM, "out of memory");
    }
    for (int v = 0; v < n; v++)
        if (p->f.v[v].parent == TS_NONE) {
            queue[tail++] = v;
            seen[v] = 1;
        }
    while (head < tail) {
        int x = queue[head++];
        for (int c = p->f.v[x].first_child; c != TS_NONE; c = p->f.v[c].next_sibling)
            if (!seen[c]) {
                seen[c] = 1;
                queue[tail++] = c;
            }
    }
    int rc = TS_OK;
    for (int v = 0; v < n && rc == TS_OK; v++) {
        if (seen[v])
            continue;
        int x = v;
        while (seen[x] != 2) {
            seen[x] = 2;
            x = p->f.v[x].parent;
        }
        const ts_vertex *on = &p->f.v[x];
        p->line = on->line;
        rc = fail(p, "switch '%s' is part of a cycle (it is listed under '%s' on line %d)", on->name,
                  p->f.v[on->parent].name, p->listed_line[x]);
    }
    free(queue);
    free(seen);
    return rc;
}

static int add_implicit_root(conf_parser *p)
{
    int nroots = 0;
    for (int v = 0; v < p->f.nvert; v++)
        nroots += p->f.v[v].parent == TS_NONE;
    if (nroots <= 1)
        return TS_OK;
    int *roots = malloc(sizeof *roots * (size_t)nroots);
    if (!roots)
        return ts_fail(p->err, TS_ENOMEM, "out of memory");
    int k = 0;
    for (int v = 0; v < p->f.nvert; v++)
        if (p->f.v[v].parent == TS_NONE)
            roots[k++] = v;
    char name[32] = "root";
    for (unsigned i = 1; ts_fabric_find(&p->f, name) != TS_NONE; i++)
        snprintf(name, sizeof name, "root%u", i);
    int saved_line = p->line;
    p->line = 0;
    int root = add_vertex(p, name, TS_SWITCH);
    p->line = saved_line;
    int rc = root < 0 ? root : TS_OK;
    if (rc == TS_OK) {
        p->f.v[root].implicit = 1;
        p->defined[root] = 1;
    }
    for (int i = 0; i < nroots && rc == TS_OK; i++)
        append_child(p, root, roots[i]);
    free(roots);
    return rc;
}

static int parse_all(conf_parser *p, const char *text, size_t len)
{
    size_t pos = 0;
    p->line = 0;
    while (pos < len) {
        p->line++;
        const char *nl = memchr(text + pos, '\n', len - pos);
        size_t end = nl ? (size_t)(nl - text) : len;
        int rc = parse_line(p, text + pos, end - pos);
        if (rc != TS_OK)
            return rc;
        pos = end + 1;
    }
    if (p->line == 0)
        p->line = 1;
    if (p->nswitch_lines == 0)
        return fail(p, "no switch defined (the file has no SwitchName= line)");
    int rc = check_all_defined(p);
    if (rc == TS_OK)
        rc = check_cycles(p);
    if (rc == TS_OK)
        rc = add_implicit_root(p);
    if (rc == TS_OK && (rc = ts_fabric_finalize(&p->f, p->err)) != TS_OK && p->err) {
        char what[TS_ERROR_TEXT_MAX];
        snprintf(what, sizeof what, "%s", p->err->text);
        rc = fail(p, "%s", what);
    }
    return rc;
}

/* f is overwritten, not read: on success it holds the finalized tree, on error it is empty
 * (initialized), so the caller may always ts_fabric_free() it. */
int ts_fabric_parse_topology_conf(ts_fabric *f, const char *text, size_t len, const char *source,
                                  ts_error *err)
{
    conf_parser p = { .source = source ? source : "topology.conf", .err = err };
    ts_fabric_init(&p.f);
    if (!text)
        len = 0;
    int rc = parse_all(&p, text, len);
    free(p.listed_line);
    free(p.defined);
    if (rc != TS_OK) {
        ts_fabric_free(&p.f);
        ts_fabric_init(f);
        return rc;
    }
    *f = p.f;
    return TS_OK;
}

int ts_fabric_load_topology_conf(ts_fabric *f, const char *path, ts_error *err)
{
    ts_fabric_init(f);
    FILE *in = fopen(path, "rb");
    if (!in)
        return ts_fail(err, TS_ESYS, "%s: %s", path, strerror(errno));
    size_t len = 0, cap = 0;
    char *text = NULL;
    int rc = TS_OK;
    for (;;) {
        if (len == cap) {
            size_t ncap = cap ? cap * 2 : 64 * 1024;
            if (ncap > TOPOCONF_FILE_MAX + 1)
                ncap = TOPOCONF_FILE_MAX + 1;
            char *t = ncap > cap ? realloc(text, ncap) : NULL;
            if (!t) {
                rc = len > TOPOCONF_FILE_MAX
                         ? ts_fail(err, TS_EINPUT, "%s: file is larger than %zu MiB", path, TOPOCONF_FILE_MAX >> 20)
                         : ts_fail(err, TS_ENOMEM, "%s: out of memory", path);
                break;
            }
            text = t;
            cap = ncap;
        }
        size_t got = fread(text + len, 1, cap - len, in);
        len += got;
        if (got == 0) {
            if (ferror(in))
                rc = ts_fail(err, TS_ESYS, "%s: read error: %s", path, strerror(errno));
            break;
        }
    }
    fclose(in);
    if (rc == TS_OK)
        rc = ts_fabric_parse_topology_conf(f, text, len, path, err);
    free(text);
    return rc;
}

/* ------------------------------------------------------------------------------------------ */

static int cmp_names(const void *a, const void *b)
{
    return ts_hostname_cmp(*(char *const *)a, *(char *const *)b);
}

typedef struct switch_order {
    const ts_fabric *f;
    const int *height;
} switch_order;

static int cmp_switches(const void *a, const void *b, void *ctx)
{
    const switch_order *o = ctx;
    int x = *(const int *)a, y = *(const int *)b;
    if (o->height[x] != o->height[y])
        return o->height[x] < o->height[y] ? -1 : 1;
    return ts_hostname_cmp(o->f->v[x].name, o->f->v[y].name);
}

/* Heights from the vertices themselves, so the writer works on trees that were never finalized. */
static int *compute_heights(const ts_fabric *f)
{
    int n = f->nvert, head = 0, tail = 0;
    int *height = calloc((size_t)n + 1, sizeof *height);
    int *queue = malloc(sizeof *queue * ((size_t)n + 1));
    unsigned char *seen = calloc((size_t)n + 1, 1);
    if (!height || !queue || !seen) {
        free(height);
        free(queue);
        free(seen);
        return NULL;
    }
    for (int v = 0; v < n; v++)
        if (f->v[v].parent == TS_NONE) {
            queue[tail++] = v;
            seen[v] = 1;
        }
    while (head < tail) {
        int x = queue[head++];
        for (int c = f->v[x].first_child; c != TS_NONE; c = f->v[c].next_sibling)
            if (!seen[c]) {
                seen[c] = 1;
                queue[tail++] = c;
            }
    }
    for (int i = tail - 1; i >= 0; i--) {
        int x = queue[i], p = f->v[x].parent;
        if (p != TS_NONE && height[x] + 1 > height[p])
            height[p] = height[x] + 1;
    }
    free(queue);
    free(seen);
    return height;
}

/* The children of one kind as a compressed hostlist: *list stays NULL when there are none. */
static int compress_children(const ts_fabric *f, int sw, ts_vertex_kind kind, char **names, char **list)
{
    size_t n = 0;
    *list = NULL;
    for (int c = f->v[sw].first_child; c != TS_NONE; c = f->v[c].next_sibling)
        if (f->v[c].kind == kind)
            names[n++] = f->v[c].name;
    if (n == 0)
        return TS_OK;
    qsort(names, n, sizeof *names, cmp_names);
    *list = ts_hostlist_compress(names, n);
    return *list ? TS_OK : TS_ENOMEM;
}

/* A line the parser would refuse is not written: the output must always read back. */
static int write_switch(const ts_fabric *f, int sw, char **names, FILE *out)
{
    char *switches, *nodes = NULL;
    int rc = compress_children(f, sw, TS_SWITCH, names, &switches);
    if (rc == TS_OK)
        rc = compress_children(f, sw, TS_NODE, names, &nodes);
    if (rc == TS_OK) {
        size_t len = strlen("SwitchName=") + strlen(f->v[sw].name) +
                     (switches ? strlen(" Switches=") + strlen(switches) : 0) +
                     (nodes ? strlen(" Nodes=") + strlen(nodes) : 0);
        if (len > TS_TOPOCONF_LINE_MAX)
            rc = TS_ELIMIT;
    }
    if (rc == TS_OK)
        fprintf(out, "SwitchName=%s%s%s%s%s\n", f->v[sw].name, switches ? " Switches=" : "",
                switches ? switches : "", nodes ? " Nodes=" : "", nodes ? nodes : "");
    free(switches);
    free(nodes);
    return rc;
}

static int has_node_child(const ts_fabric *f, int sw)
{
    for (int c = f->v[sw].first_child; c != TS_NONE; c = f->v[c].next_sibling)
        if (f->v[c].kind == TS_NODE)
            return 1;
    return 0;
}

int ts_fabric_write_topology_conf(const ts_fabric *f, FILE *out)
{
    int *height = compute_heights(f);
    int *switches = malloc(sizeof *switches * ((size_t)f->nvert + 1));
    char **names = malloc(sizeof *names * ((size_t)f->nvert + 1));
    int rc = TS_OK;
    if (!height || !switches || !names) {
        rc = TS_ENOMEM;
        goto out;
    }
    int nsw = 0;
    for (int v = 0; v < f->nvert; v++)
        if (f->v[v].kind == TS_SWITCH && !(f->v[v].implicit && !has_node_child(f, v)))
            switches[nsw++] = v;
    switch_order order = { f, height };
    qsort_r(switches, (size_t)nsw, sizeof *switches, cmp_switches, &order);
    fprintf(out, "# topology.conf written by toposcope: leaf switches first\n");
    for (int i = 0; i < nsw && rc == TS_OK; i++)
        rc = write_switch(f, switches[i], names, out);
    if (rc == TS_OK && ferror(out))
        rc = TS_ESYS;
out:
    free(height);
    free(switches);
    free(names);
    return rc;
}

/* ---- topology/block ------------------------------------------------------------------------ */

static int node_children(const ts_fabric *f, int sw)
{
    int n = 0;
    for (int c = f->v[sw].first_child; c != TS_NONE; c = f->v[c].next_sibling)
        n += f->v[c].kind == TS_NODE;
    return n;
}

static int cmp_vertex_desc(const void *a, const void *b, void *ctx)
{
    const ts_fabric *f = ctx;
    return ts_hostname_cmp(f->v[*(const int *)b].name, f->v[*(const int *)a].name);
}

int ts_fabric_blocks(const ts_fabric *f, int top, int *blocks, int max)
{
    int *stack = malloc(sizeof *stack * ((size_t)f->nvert + 1));
    if (!stack)
        return TS_ENOMEM;
    int sp = 0, n = 0;
    stack[sp++] = top;
    while (sp > 0) {
        int x = stack[--sp];
        if (node_children(f, x)) {
            if (n < max)
                blocks[n] = x;
            n++;
        }
        /* pushed last-name first, so the first name is taken next */
        int first = sp;
        for (int c = f->v[x].first_child; c != TS_NONE; c = f->v[c].next_sibling)
            if (f->v[c].kind == TS_SWITCH)
                stack[sp++] = c;
        qsort_r(stack + first, (size_t)(sp - first), sizeof *stack, cmp_vertex_desc, (void *)f);
    }
    free(stack);
    return n;
}

int ts_block_sizes(const ts_fabric *f, const int *blocks, int n, int larger, int *sizes)
{
    if (n <= 0)
        return 0;
    int base = node_children(f, blocks[0]);
    for (int i = 1; i < n; i++)
        if (node_children(f, blocks[i]) < base)
            base = node_children(f, blocks[i]);
    int k = 0;
    sizes[k++] = base;
    for (long mult = 2; larger && mult <= n && k < TS_BLOCK_SIZES_MAX && base * mult <= INT_MAX; mult *= 2)
        sizes[k++] = (int)(base * mult);
    return k;
}

static int write_block(const ts_fabric *f, int sw, char **names, FILE *out, ts_error *err)
{
    char *nodes;
    if (compress_children(f, sw, TS_NODE, names, &nodes) != TS_OK)
        return ts_fail(err, TS_ENOMEM, "out of memory");
    int rc = TS_OK;
    if (strlen("BlockName= Nodes=") + strlen(f->v[sw].name) + strlen(nodes) > TS_TOPOCONF_LINE_MAX)
        rc = ts_fail(err, TS_ELIMIT, "block '%s': its line would be longer than %d bytes", f->v[sw].name,
                     TS_TOPOCONF_LINE_MAX);
    else
        fprintf(out, "BlockName=%s Nodes=%s\n", f->v[sw].name, nodes);
    free(nodes);
    return rc;
}

int ts_fabric_write_block_conf(const ts_fabric *f, FILE *out, ts_error *err)
{
    int n = f->nvert + 1;
    int *tops = malloc(sizeof *tops * (size_t)n), *blocks = malloc(sizeof *blocks * (size_t)n);
    char **names = malloc(sizeof *names * (size_t)n);
    int rc = tops && blocks && names ? TS_OK : ts_fail(err, TS_ENOMEM, "out of memory");
    int ntops = rc == TS_OK ? ts_fabric_tops(f, tops, n) : 0, nblocks = 0;
    for (int t = 0; t < ntops && rc == TS_OK; t++) {
        int k = ts_fabric_blocks(f, tops[t], blocks + nblocks, n - nblocks);
        rc = k < 0 ? ts_fail(err, TS_ENOMEM, "out of memory") : TS_OK;
        nblocks += k > 0 ? k : 0;
    }
    if (rc == TS_OK && nblocks == 0)
        rc = ts_fail(err, TS_EINPUT, "the tree has no switch that holds nodes: no block to write");
    if (rc == TS_OK) {
        fprintf(out, "# topology.conf for Slurm's topology/block written by toposcope: a block per switch\n"
                     "# that holds nodes, neighbours under one switch\n");
        if (ntops > 1)
            fprintf(out, "# %d separate fabrics: BlockSizes= is the base size alone, so that no larger block\n"
                         "# pairs two of them (topology.yaml keeps each fabric its own topology)\n", ntops);
    }
    for (int i = 0; i < nblocks && rc == TS_OK; i++)
        rc = write_block(f, blocks[i], names, out, err);
    if (rc == TS_OK) {
        int sizes[TS_BLOCK_SIZES_MAX], k = ts_block_sizes(f, blocks, nblocks, ntops == 1, sizes);
        fprintf(out, "BlockSizes=");
        for (int i = 0; i < k; i++)
            fprintf(out, "%s%d", i ? "," : "", sizes[i]);
        fputc('\n', out);
        if (ferror(out))
            rc = ts_fail(err, TS_ESYS, "write error: %s", strerror(errno));
    }
    free(tops);
    free(blocks);
    free(names);
    return rc;
}
