/* toposcope — a bounded YAML document tree and typed getters for schema checks. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ydoc.h"

#define YDOC_DEPTH_CAP 64       /* the stack below; callers may ask for less */

int ts_ydoc_fail(const ts_ydoc *d, int i, ts_error *err, const char *fmt, ...)
{
    char msg[TS_ERROR_TEXT_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (i < 0 || i >= d->n)   /* nothing to point at (an empty file): its start */
        return ts_fail(err, TS_EINPUT, "%s:1:1: %s", d->src, msg);
    return ts_fail(err, TS_EINPUT, "%s:%d:%d: %s", d->src, d->v[i].line, d->v[i].col, msg);
}

int ts_ydoc_fail_at(const ts_ydoc *d, int code, const yaml_mark_t *m, ts_error *err, const char *fmt, ...)
{
    char msg[TS_ERROR_TEXT_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return ts_fail(err, code, "%s:%zu:%zu: %s", d->src, m->line + 1, m->column + 1, msg);
}

static int fail_at_mark(const ts_ydoc *d, int code, const yaml_mark_t *m, ts_error *err,
                        const char *what)
{
    return ts_ydoc_fail_at(d, code, m, err, "%s", what);
}

void ts_ydoc_free(ts_ydoc *d)
{
    for (int i = 0; i < d->n; i++)
        free(d->v[i].text);
    free(d->v);
    d->v = NULL;
    d->n = d->cap = 0;
    d->root = -1;
}

static int add_node(ts_ydoc *d, int type, const yaml_mark_t *mark, int parent, ts_error *err)
{
    if (d->n >= d->max_nodes)
        return fail_at_mark(d, TS_ELIMIT, mark, err, "too many YAML values (the limit keeps "
                            "hostile input bounded)");
    if (d->n == d->cap) {
        int cap = d->cap ? d->cap * 2 : 64;
        ts_ynode *v = realloc(d->v, sizeof *v * (size_t)cap);
        if (!v)
            return ts_fail(err, TS_ENOMEM, "%s: out of memory", d->src);
        d->v = v;
        d->cap = cap;
    }
    ts_ynode *y = &d->v[d->n];
    memset(y, 0, sizeof *y);
    y->type = type;
    y->line = (int)mark->line + 1;
    y->col = (int)mark->column + 1;
    y->first = y->last = y->next = -1;
    if (parent >= 0) {
        ts_ynode *p = &d->v[parent];
        if (p->last >= 0)
            d->v[p->last].next = d->n;
        else
            p->first = d->n;
        p->last = d->n;
        p->n++;
    }
    return d->n++;
}

int ts_ydoc_syntax_error(const ts_ydoc *d, const yaml_parser_t *ps, ts_error *err)
{
    const char *problem = ps->problem ? ps->problem : "malformed YAML";
    if (ps->error == YAML_MEMORY_ERROR)
        return ts_fail(err, TS_ENOMEM, "%s: out of memory while parsing YAML", d->src);
    if (ps->error == YAML_READER_ERROR)
        return ts_fail(err, TS_EINPUT, "%s: YAML syntax error at byte %zu: %s", d->src,
                       ps->problem_offset, problem);
    const yaml_mark_t *m = &ps->problem_mark;
    return ts_fail(err, TS_EINPUT, "%s:%zu:%zu: YAML syntax error: %s%s%s", d->src, m->line + 1,
                   m->column + 1, problem, ps->context ? " " : "", ps->context ? ps->context : "");
}

int ts_ydoc_next_event(const ts_ydoc *d, yaml_parser_t *ps, yaml_event_t *ev, int *have, ts_error *err)
{
    if (*have)
        yaml_event_delete(ev);
    *have = yaml_parser_parse(ps, ev) != 0;
    return *have ? TS_OK : ts_ydoc_syntax_error(d, ps, err);
}

static int add_scalar(ts_ydoc *d, const yaml_event_t *ev, int parent, ts_error *err)
{
    size_t len = ev->data.scalar.length;
    if (memchr(ev->data.scalar.value, '\0', len))
        return fail_at_mark(d, TS_EINPUT, &ev->start_mark, err,
                            "a NUL character inside a value is not allowed");
    int i = add_node(d, TS_Y_SCALAR, &ev->start_mark, parent, err);
    if (i < 0)
        return i;
    ts_ynode *y = &d->v[i];
    y->text = malloc(len + 1);
    if (!y->text)
        return ts_fail(err, TS_ENOMEM, "%s: out of memory", d->src);
    memcpy(y->text, ev->data.scalar.value, len);
    y->text[len] = '\0';
    y->len = len;
    y->plain = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
    if (parent < 0)
        d->root = i;
    return TS_OK;
}

/* Where the events of one value go: the open collections, innermost last. */
typedef struct ystack {
    int node[YDOC_DEPTH_CAP];
    int depth, max_depth;
} ystack;

/* One event of a value (scalar, alias, collection start or end) into d. */
static int add_event(ts_ydoc *d, const yaml_event_t *ev, ystack *st, ts_error *err)
{
    int parent = st->depth > 0 ? st->node[st->depth - 1] : -1;
    switch (ev->type) {
    case YAML_ALIAS_EVENT:
        /* an alias lets a small file expand into a huge one; no schema here needs them */
        return fail_at_mark(d, TS_EINPUT, &ev->start_mark, err,
                            "YAML aliases (*name) are not supported");
    case YAML_SCALAR_EVENT:
        return add_scalar(d, ev, parent, err);
    case YAML_MAPPING_START_EVENT:
    case YAML_SEQUENCE_START_EVENT: {
        if (st->depth >= st->max_depth) {
            char what[96];
            snprintf(what, sizeof what, "nesting deeper than %d levels", st->max_depth);
            return fail_at_mark(d, TS_ELIMIT, &ev->start_mark, err, what);
        }
        int i = add_node(d, ev->type == YAML_MAPPING_START_EVENT ? TS_Y_MAP : TS_Y_SEQ,
                         &ev->start_mark, parent, err);
        if (i < 0)
            return i;
        if (parent < 0)
            d->root = i;
        st->node[st->depth++] = i;
        return TS_OK;
    }
    case YAML_MAPPING_END_EVENT:
    case YAML_SEQUENCE_END_EVENT:
        if (st->depth > 0)
            st->depth--;
        return TS_OK;
    default:
        return TS_OK;
    }
}

static int depth_cap(int max_depth)
{
    return max_depth < YDOC_DEPTH_CAP ? max_depth : YDOC_DEPTH_CAP;
}

void ts_ydoc_init(ts_ydoc *d, const char *src, int max_nodes)
{
    memset(d, 0, sizeof *d);
    d->src = src ? src : "<input>";
    d->root = -1;
    d->max_nodes = max_nodes;
}

void ts_ydoc_reset(ts_ydoc *d)
{
    for (int i = 0; i < d->n; i++)
        free(d->v[i].text);
    d->n = 0;
    d->root = -1;
}

int ts_ydoc_add_value(ts_ydoc *d, yaml_parser_t *ps, const yaml_event_t *first, int max_depth,
                      ts_error *err)
{
    ystack st = { .depth = 0, .max_depth = depth_cap(max_depth) };
    int at = d->n;
    int rc = add_event(d, first, &st, err);
    while (rc == TS_OK && st.depth > 0) {
        yaml_event_t ev;
        if (!yaml_parser_parse(ps, &ev))
            return ts_ydoc_syntax_error(d, ps, err);
        rc = add_event(d, &ev, &st, err);
        yaml_event_delete(&ev);
    }
    return rc == TS_OK ? at : rc;
}

int ts_ydoc_parse(ts_ydoc *d, const char *text, size_t len, const char *src,
                  const ts_ylimits *lim, ts_error *err)
{
    ts_ydoc_init(d, src, lim->max_nodes);
    if (len > lim->max_bytes)
        return ts_fail(err, TS_ELIMIT, "%s: larger than %zu bytes", d->src, lim->max_bytes);
    yaml_parser_t ps;
    yaml_event_t ev;
    ystack st = { .depth = 0, .max_depth = depth_cap(lim->max_depth) };
    int ndocs = 0, rc = TS_OK, done = 0;
    if (!yaml_parser_initialize(&ps))
        return ts_fail(err, TS_ENOMEM, "%s: out of memory", d->src);
    yaml_parser_set_input_string(&ps, (const unsigned char *)(text ? text : ""), text ? len : 0);
    while (!done && rc == TS_OK) {
        if (!yaml_parser_parse(&ps, &ev)) {
            rc = ts_ydoc_syntax_error(d, &ps, err);
            break;
        }
        if (ev.type == YAML_STREAM_END_EVENT)
            done = 1;
        else if (ev.type == YAML_DOCUMENT_START_EVENT && ++ndocs > 1)
            rc = fail_at_mark(d, TS_EINPUT, &ev.start_mark, err, "only one YAML document is allowed");
        else
            rc = add_event(d, &ev, &st, err);
        yaml_event_delete(&ev);
    }
    yaml_parser_delete(&ps);
    if (rc != TS_OK)
        ts_ydoc_free(d);
    return rc;
}

int ts_ydoc_read_file(const char *path, size_t max, char **buf, size_t *len, ts_error *err)
{
    *buf = NULL;
    *len = 0;
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return ts_fail(err, errno == ENOENT ? TS_EINPUT : TS_ESYS, "%s: %s", path, strerror(errno));
    size_t cap = 4096, n = 0;
    char *b = malloc(cap + 1);
    while (b) {
        if (n == cap) {
            if (cap > max)
                break;                      /* n is max + 1: refused below */
            size_t ncap = cap * 2 > max + 1 ? max + 1 : cap * 2;
            char *nb = realloc(b, ncap + 1);
            if (!nb) {
                free(b);
                b = NULL;
                break;
            }
            b = nb;
            cap = ncap;
        }
        size_t got = fread(b + n, 1, cap - n, fp);
        n += got;
        if (got == 0)
            break;                          /* end of file or an error, told apart below */
    }
    int bad = ferror(fp), saved = errno;
    fclose(fp);
    if (!b)
        return ts_fail(err, TS_ENOMEM, "%s: out of memory", path);
    if (bad) {
        free(b);
        return ts_fail(err, TS_ESYS, "%s: %s", path, strerror(saved));
    }
    if (n > max) {
        free(b);
        return ts_fail(err, TS_ELIMIT, "%s: larger than %zu bytes", path, max);
    }
    b[n] = '\0';
    *buf = b;
    *len = n;
    return TS_OK;
}

const char *ts_ydoc_type_name(const ts_ynode *y)
{
    return y->type == TS_Y_MAP ? "a mapping" : y->type == TS_Y_SEQ ? "a list" : "a scalar";
}

int ts_ydoc_is_null(const ts_ynode *y)
{
    return y->type == TS_Y_SCALAR && y->plain &&
           (y->len == 0 || !strcmp(y->text, "~") || !strcmp(y->text, "null") ||
            !strcmp(y->text, "Null") || !strcmp(y->text, "NULL"));
}

static void list_choices(char *out, size_t max, const char *const *choices)
{
    size_t used = 0;
    out[0] = '\0';
    for (int k = 0; choices[k] && used < max; k++) {
        int w = snprintf(out + used, max - used, "%s%s", k ? ", " : "", choices[k]);
        if (w < 0)
            break;
        used += (size_t)w;
    }
}

int ts_ydoc_check_keys(const ts_ydoc *d, int map, const char *const *allowed, const char *where,
                       ts_error *err)
{
    const ts_ynode *v = d->v;
    char list[256];
    list_choices(list, sizeof list, allowed);
    for (int k = v[map].first; k >= 0; k = v[v[k].next].next) {
        if (v[k].type != TS_Y_SCALAR)
            return ts_ydoc_fail(d, k, err, "a key in %s must be a name, not %s (allowed: %s)", where,
                                ts_ydoc_type_name(&v[k]), list);
        int known = 0;
        for (int a = 0; allowed[a]; a++)
            if (!strcmp(v[k].text, allowed[a]))
                known = 1;
        if (!known)
            return ts_ydoc_fail(d, k, err, "unknown key '%.64s' in %s (allowed: %s)", v[k].text,
                                where, list);
        for (int j = v[map].first; j != k; j = v[v[j].next].next)
            if (!strcmp(v[j].text, v[k].text))
                return ts_ydoc_fail(d, k, err, "key '%.64s' given twice in %s (first at line %d)",
                                    v[k].text, where, v[j].line);
    }
    return TS_OK;
}

int ts_ydoc_get(const ts_ydoc *d, int map, const char *key)
{
    if (map < 0 || d->v[map].type != TS_Y_MAP)
        return -1;
    for (int k = d->v[map].first; k >= 0; k = d->v[d->v[k].next].next)
        if (d->v[k].type == TS_Y_SCALAR && !strcmp(d->v[k].text, key))
            return d->v[k].next;
    return -1;
}

/* What a scalar that should have been something else looks like, for messages. */
static void describe(const ts_ynode *y, char *out, size_t max)
{
    if (y->type != TS_Y_SCALAR)
        snprintf(out, max, "%s", ts_ydoc_type_name(y));
    else if (y->len == 0)
        snprintf(out, max, "an empty value");
    else
        snprintf(out, max, "'%.64s'", y->text);
}

/* Plain decimal only: strtod alone would also take hex, "inf", "nan" and leading blanks. */
static int decimal_text(const char *s, int integer)
{
    if (*s == '+' || *s == '-')
        s++;
    if (!*s)
        return 0;
    int digits = 0;
    for (; *s; s++) {
        if (*s >= '0' && *s <= '9')
            digits++;
        else if (integer || !strchr(".eE+-", *s))
            return 0;
    }
    return digits > 0;
}

int ts_ydoc_int(const ts_ydoc *d, int i, const char *key, long lo, long hi, long *out, ts_error *err)
{
    const ts_ynode *y = &d->v[i];
    char got[96];
    describe(y, got, sizeof got);
    if (y->type != TS_Y_SCALAR || !y->plain || !decimal_text(y->text, 1))
        return ts_ydoc_fail(d, i, err, "'%s' must be an integer from %ld to %ld, got %s", key, lo,
                            hi, got);
    errno = 0;
    char *end;
    long v = strtol(y->text, &end, 10);
    if (errno || *end || v < lo || v > hi)
        return ts_ydoc_fail(d, i, err, "'%s' must be an integer from %ld to %ld, got %s", key, lo,
                            hi, got);
    *out = v;
    return TS_OK;
}

int ts_ydoc_num(const ts_ydoc *d, int i, const char *key, double lo, double hi, double *out,
                ts_error *err)
{
    const ts_ynode *y = &d->v[i];
    char got[96];
    describe(y, got, sizeof got);
    if (y->type != TS_Y_SCALAR || !y->plain || !decimal_text(y->text, 0))
        return ts_ydoc_fail(d, i, err, "'%s' must be a number from %g to %g, got %s", key, lo, hi,
                            got);
    errno = 0;
    char *end;
    double v = strtod(y->text, &end);
    if (*end || !isfinite(v) || v < lo || v > hi)
        return ts_ydoc_fail(d, i, err, "'%s' must be a number from %g to %g, got %s", key, lo, hi,
                            got);
    *out = v;
    return TS_OK;
}

int ts_ydoc_bool(const ts_ydoc *d, int i, const char *key, int *out, ts_error *err)
{
    const ts_ynode *y = &d->v[i];
    if (y->type == TS_Y_SCALAR && y->plain) {
        if (!strcmp(y->text, "true")) {
            *out = 1;
            return TS_OK;
        }
        if (!strcmp(y->text, "false")) {
            *out = 0;
            return TS_OK;
        }
    }
    char got[96];
    describe(y, got, sizeof got);
    return ts_ydoc_fail(d, i, err, "'%s' must be true or false, got %s", key, got);
}

int ts_ydoc_choice(const ts_ydoc *d, int i, const char *key, const char *const *choices, int *out,
                   ts_error *err)
{
    const ts_ynode *y = &d->v[i];
    if (y->type == TS_Y_SCALAR)
        for (int k = 0; choices[k]; k++)
            if (!strcmp(y->text, choices[k])) {
                *out = k;
                return TS_OK;
            }
    char got[96], list[256];
    describe(y, got, sizeof got);
    list_choices(list, sizeof list, choices);
    return ts_ydoc_fail(d, i, err, "'%s' must be one of %s, got %s", key, list, got);
}

int ts_ydoc_name(const ts_ydoc *d, int i, const char *key, char *out, size_t max, ts_error *err)
{
    const ts_ynode *y = &d->v[i];
    if (y->type != TS_Y_SCALAR || y->len == 0) {
        char got[96];
        describe(y, got, sizeof got);
        return ts_ydoc_fail(d, i, err, "'%s' must be a non-empty name, got %s", key, got);
    }
    if (y->len >= max)
        return ts_ydoc_fail(d, i, err, "'%s' is longer than %zu characters", key, max - 1);
    for (size_t k = 0; k < y->len; k++)
        if ((unsigned char)y->text[k] < 0x20 || y->text[k] == 0x7f)
            return ts_ydoc_fail(d, i, err, "'%s' must not contain control characters", key);
    memcpy(out, y->text, y->len + 1);
    return TS_OK;
}
