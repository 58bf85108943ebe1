/* toposcope — per-job link records (see toposcope/record.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "toposcope/hostlist.h"
#include "toposcope/record.h"
#include "toposcope/textout.h"
#include "util/grow.h"
#include "util/ydoc.h"

#define MAX_US 86400e6

void ts_record_init(ts_record *r)
{
    memset(r, 0, sizeof *r);
    r->uid = -1;
    r->prolog_s = NAN;
}

void ts_record_free(ts_record *r)
{
    if (!r)
        return;
    free(r->nodes);
    for (int i = 0; i < r->ngroups; i++)
        free(r->leaf_groups[i]);
    free(r->leaf_groups);
    ts_link_obs_set_free(&r->links);
    ts_anomaly_list_free(&r->anomalies);
    ts_record_init(r);
}

int ts_record_set_tree(ts_record *r, const ts_fabric *tree, ts_error *err)
{
    char **names = malloc(sizeof(char *) * (size_t)(tree->nnodes ? tree->nnodes : 1));
    char **groups = calloc((size_t)(tree->nvert ? tree->nvert : 1), sizeof(char *));
    if (!names || !groups)
        goto oom;
    int ng = 0, sw = 0;
    for (int v = 0; v < tree->nvert; v++) {
        if (tree->v[v].kind != TS_SWITCH)
            continue;
        sw++;
        int n = 0;
        for (int c = tree->v[v].first_child; c != TS_NONE; c = tree->v[c].next_sibling)
            if (tree->v[c].kind == TS_NODE)
                names[n++] = tree->v[c].name;
        if (n && !(groups[ng++] = ts_hostlist_compress(names, (size_t)n)))
            goto oom;
    }
    for (int i = 0; i < r->ngroups; i++)
        free(r->leaf_groups[i]);
    free(r->leaf_groups);
    r->leaf_groups = groups;
    r->ngroups = ng;
    r->switches = sw;
    r->depth = ts_fabric_max_depth(tree);
    free(names);
    return TS_OK;
oom:
    if (groups)
        for (int i = 0; i < tree->nvert; i++)
            free(groups[i]);
    free(groups);
    free(names);
    return ts_fail(err, TS_ENOMEM, "out of memory");
}

static void num(FILE *out, const char *key, double v)
{
    if (isfinite(v))
        fprintf(out, ", %s: %.4f", key, v);
    else
        fprintf(out, ", %s: null", key);
}

int ts_record_write(const ts_record *r, FILE *out)
{
    fprintf(out, "# toposcope record: one job's per-link latencies and link anomalies (toposcope-epilog(8))\n");
    fprintf(out, "toposcope_record: %d\njob: ", TS_RECORD_VERSION);
    ts_emit_yaml_string(out, r->job);
    fprintf(out, "\nuser: ");
    ts_emit_yaml_string(out, r->user);
    if (r->uid >= 0)
        fprintf(out, "\nuid: %ld", r->uid);
    else
        fprintf(out, "\nuid: null");
    fprintf(out, "\ntime: %lld\nstatus: ", (long long)r->time);
    ts_emit_yaml_string(out, r->status[0] ? r->status : "unknown");
    if (isfinite(r->prolog_s))
        fprintf(out, "\nprolog_s: %.3f", r->prolog_s);
    fprintf(out, "\nnodes: ");
    ts_emit_yaml_string(out, r->nodes ? r->nodes : "");
    fprintf(out, "\ntree: {switches: %d, depth: %d, leaf_groups: [", r->switches, r->depth);
    for (int i = 0; i < r->ngroups; i++) {
        if (i)
            fputs(", ", out);
        ts_emit_yaml_string(out, r->leaf_groups[i]);
    }
    fprintf(out, "]}\nlinks:%s\n", r->links.n ? "" : " []");
    for (int i = 0; i < r->links.n; i++) {
        const ts_link_obs *o = &r->links.o[i];
        fprintf(out, "  - {link: ");
        ts_emit_yaml_string(out, o->id);
        fprintf(out, ", kind: %s", o->access ? "access" : "uplink");
        num(out, "est_us", o->est_us);
        num(out, "lo_us", o->lo_us);
        num(out, "hi_us", o->hi_us);
        num(out, "se_us", o->se_us);
        fprintf(out, ", samples: %ld%s}\n", o->samples, o->uncertain ? ", uncertain: true" : "");
    }
    return ts_anomalies_write_yaml(&r->anomalies, out);
}

/* ---- reader ---- */

static const char *const top_keys[] = { "toposcope_record", "job", "user", "uid", "time", "status", "nodes",
                                        "tree", "links", "anomalies", "prolog_s", NULL };
static const char *const tree_keys[] = { "switches", "depth", "leaf_groups", NULL };
static const char *const link_keys[] = { "link", "kind", "est_us", "lo_us", "hi_us", "se_us", "samples",
                                         "uncertain", NULL };
static const char *const anomaly_keys[] = { "link", "kind", "reason", "expected_us", "observed_us",
                                            "excess_pct", "excess_us", "loss_pct", "score", NULL };
static const char *const kinds[] = { "uplink", "access", NULL };
static const char *const reasons[] = { "slow", "unreachable", "loss", NULL };

/* A scalar string of fewer than max bytes (empty allowed), copied. */
static int text(const ts_ydoc *d, int at, const char *key, char *out, size_t max, ts_error *err)
{
    const ts_ynode *y = &d->v[at];
    if (y->type != TS_Y_SCALAR)
        return ts_ydoc_fail(d, at, err, "'%s' must be a string, not %s", key, ts_ydoc_type_name(y));
    if (y->len == 0) {
        out[0] = '\0';
        return TS_OK;
    }
    return ts_ydoc_name(d, at, key, out, max, err);
}

static int opt_num(const ts_ydoc *d, int map, const char *key, double lo, double hi, double *out,
                   ts_error *err)
{
    int at = ts_ydoc_get(d, map, key);
    *out = NAN;
    if (at < 0 || ts_ydoc_is_null(&d->v[at]))
        return TS_OK;
    return ts_ydoc_num(d, at, key, lo, hi, out, err);
}

static int need(const ts_ydoc *d, int map, const char *key, ts_error *err)
{
    int at = ts_ydoc_get(d, map, key);
    if (at < 0)
        return ts_ydoc_fail(d, map, err, "'%s' is missing", key);
    return at;
}

static int read_tree(ts_record *r, const ts_ydoc *d, int at, ts_error *err)
{
    if (d->v[at].type != TS_Y_MAP)
        return ts_ydoc_fail(d, at, err, "'tree' must be a mapping");
    int rc = ts_ydoc_check_keys(d, at, tree_keys, "'tree'", err);
    long v;
    int x;
    if (rc)
        return rc;
    if ((x = ts_ydoc_get(d, at, "switches")) >= 0) {
        if ((rc = ts_ydoc_int(d, x, "switches", 0, 1 << 24, &v, err)))
            return rc;
        r->switches = (int)v;
    }
    if ((x = ts_ydoc_get(d, at, "depth")) >= 0) {
        if ((rc = ts_ydoc_int(d, x, "depth", 0, 1 << 20, &v, err)))
            return rc;
        r->depth = (int)v;
    }
    int list = ts_ydoc_get(d, at, "leaf_groups");
    if (list < 0)
        return TS_OK;
    if (d->v[list].type != TS_Y_SEQ)
        return ts_ydoc_fail(d, list, err, "'leaf_groups' must be a list of hostlists");
    if (d->v[list].n > TS_RECORD_MAX_GROUPS)
        return ts_ydoc_fail(d, list, err, "more than %d leaf groups", TS_RECORD_MAX_GROUPS);
    r->leaf_groups = calloc((size_t)(d->v[list].n ? d->v[list].n : 1), sizeof(char *));
    if (!r->leaf_groups)
        return ts_fail(err, TS_ENOMEM, "out of memory");
    size_t hosts = 0;
    for (int e = d->v[list].first; e >= 0; e = d->v[e].next) {
        if (d->v[e].type != TS_Y_SCALAR || d->v[e].len == 0)
            return ts_ydoc_fail(d, e, err, "a leaf group must be a non-empty hostlist");
        /* expanded here once, so the report's later expansions stay bounded */
        ts_hostlist hl;
        ts_error herr;
        if (ts_hostlist_expand(d->v[e].text, d->v[e].len, &hl, &herr) != TS_OK)
            return ts_ydoc_fail(d, e, err, "a leaf group must be a hostlist: %s", herr.text);
        hosts += hl.count;
        ts_hostlist_free(&hl);
        if (hosts > TS_RECORD_MAX_GROUP_HOSTS)
            return ts_ydoc_fail(d, e, err, "the leaf groups hold more than %d nodes", TS_RECORD_MAX_GROUP_HOSTS);
        if (!(r->leaf_groups[r->ngroups] = strdup(d->v[e].text)))
            return ts_fail(err, TS_ENOMEM, "out of memory");
        r->ngroups++;
    }
    return TS_OK;
}

/* One entry of 'links' (node e of d, a tree holding that entry alone) into r. */
static int read_link(ts_record *r, const ts_ydoc *d, int e, ts_error *err)
{
    if (d->v[e].type != TS_Y_MAP)
        return ts_ydoc_fail(d, e, err, "a link must be a mapping");
    int rc = ts_ydoc_check_keys(d, e, link_keys, "a link", err), at, kind;
    if (rc)
        return rc;
    ts_link_obs *o = &r->links.o[r->links.n];
    memset(o, 0, sizeof *o);
    double samples;
    if ((at = need(d, e, "link", err)) < 0 || (rc = ts_ydoc_name(d, at, "link", o->id, sizeof o->id, err)) ||
        (at = need(d, e, "kind", err)) < 0 || (rc = ts_ydoc_choice(d, at, "kind", kinds, &kind, err)) ||
        (rc = opt_num(d, e, "est_us", -MAX_US, MAX_US, &o->est_us, err)) ||
        (rc = opt_num(d, e, "lo_us", -MAX_US, MAX_US, &o->lo_us, err)) ||
        (rc = opt_num(d, e, "hi_us", -MAX_US, MAX_US, &o->hi_us, err)) ||
        (rc = opt_num(d, e, "se_us", 0, MAX_US, &o->se_us, err)) ||
        (rc = opt_num(d, e, "samples", 0, 1e15, &samples, err)))
        return at < 0 ? at : rc;
    if ((at = ts_ydoc_get(d, e, "uncertain")) >= 0 && (rc = ts_ydoc_bool(d, at, "uncertain", &o->uncertain, err)))
        return rc;
    o->access = kind == 1;
    o->samples = isfinite(samples) ? (long)samples : 0;
    if (!isfinite(o->se_us))
        o->se_us = ts_link_obs_interval_se(o->lo_us, o->hi_us, 0.90);
    r->links.n++;
    return TS_OK;
}

/* One entry of 'anomalies' into r. */
static int read_anomaly(ts_record *r, const ts_ydoc *d, int e, ts_error *err)
{
    if (d->v[e].type != TS_Y_MAP)
        return ts_ydoc_fail(d, e, err, "an anomaly must be a mapping");
    int rc = ts_ydoc_check_keys(d, e, anomaly_keys, "an anomaly", err), at, kind, reason;
    if (rc)
        return rc;
    ts_anomaly *a = &r->anomalies.a[r->anomalies.n];
    memset(a, 0, sizeof *a);
    if ((at = need(d, e, "link", err)) < 0 || (rc = ts_ydoc_name(d, at, "link", a->id, sizeof a->id, err)) ||
        (at = need(d, e, "kind", err)) < 0 || (rc = ts_ydoc_choice(d, at, "kind", kinds, &kind, err)) ||
        (at = need(d, e, "reason", err)) < 0 ||
        (rc = ts_ydoc_choice(d, at, "reason", reasons, &reason, err)) ||
        (rc = opt_num(d, e, "expected_us", -MAX_US, MAX_US, &a->expected_us, err)) ||
        (rc = opt_num(d, e, "observed_us", -MAX_US, MAX_US, &a->observed_us, err)) ||
        (rc = opt_num(d, e, "excess_pct", -1e12, 1e12, &a->excess_pct, err)) ||
        (rc = opt_num(d, e, "excess_us", -MAX_US, MAX_US, &a->excess_us, err)) ||
        (rc = opt_num(d, e, "loss_pct", 0, 100, &a->loss_pct, err)) ||
        (at = need(d, e, "score", err)) < 0 || (rc = ts_ydoc_num(d, at, "score", -1e12, 1e12, &a->score, err)))
        return at < 0 ? at : rc;
    a->access = kind == 1;
    a->kind = reason == 1 ? TS_ANOMALY_UNREACHABLE : reason == 2 ? TS_ANOMALY_LOSS : TS_ANOMALY_SLOW;
    a->z = a->score;
    r->anomalies.n++;
    return TS_OK;
}

/* ---- the streaming reader ----
 *
 * A record can name a quarter of a million links; the whole file as one YAML tree cost several
 * times the links themselves. The reader walks the top level with libyaml's events and puts one
 * value at a time into a small tree (a top-level value, or one entry of 'links' or 'anomalies'),
 * so its memory is the record's own plus one entry. */

/* The largest single value: 'tree' with its leaf groups. */
#define VALUE_MAX_NODES (TS_RECORD_MAX_GROUPS + 64)
#define VALUE_MAX_DEPTH 4

enum { K_VERSION, K_JOB, K_USER, K_UID, K_TIME, K_STATUS, K_NODES, K_TREE, K_LINKS, K_ANOMALIES, K_PROLOG,
       K_COUNT };

typedef struct reader {
    yaml_parser_t ps;
    yaml_event_t ev;
    int have_ev;
    ts_ydoc d;                       /* the value being read */
    ts_error *err;
    int links_cap;
} reader;

static int next_event(reader *rd)
{
    return ts_ydoc_next_event(&rd->d, &rd->ps, &rd->ev, &rd->have_ev, rd->err);
}

/* The value that starts at the current event, alone in rd->d; its node or an error (< 0). */
static int take_value(reader *rd)
{
    ts_ydoc_reset(&rd->d);
    return ts_ydoc_add_value(&rd->d, &rd->ps, &rd->ev, VALUE_MAX_DEPTH, rd->err);
}

/* 'links' or 'anomalies', entry by entry. */
static int read_list(reader *rd, ts_record *r, int key)
{
    const char *name = key == K_LINKS ? "links" : "anomalies";
    if (rd->ev.type != YAML_SEQUENCE_START_EVENT) {
        int v = take_value(rd);
        return v < 0 ? v : ts_ydoc_fail(&rd->d, v, rd->err, "'%s' must be a list", name);
    }
    for (;;) {
        int rc = next_event(rd);
        if (rc)
            return rc;
        if (rd->ev.type == YAML_SEQUENCE_END_EVENT)
            return TS_OK;
        int n = key == K_LINKS ? r->links.n : r->anomalies.n;
        if (n == TS_RECORD_MAX_LINKS)
            return ts_ydoc_fail_at(&rd->d, TS_EINPUT, &rd->ev.start_mark, rd->err, "more than %d %s",
                                   TS_RECORD_MAX_LINKS, name);
        int e = take_value(rd);
        if (e < 0)
            return e;
        if (key == K_LINKS ? ts_grow(&r->links.o, sizeof *r->links.o, &rd->links_cap, n, 64)
                           : ts_grow(&r->anomalies.a, sizeof *r->anomalies.a, &r->anomalies.cap, n, 16))
            return ts_fail(rd->err, TS_ENOMEM, "out of memory");
        rc = key == K_LINKS ? read_link(r, &rd->d, e, rd->err) : read_anomaly(r, &rd->d, e, rd->err);
        if (rc)
            return rc;
    }
}

/* A top-level key's value other than the lists (node v of rd->d). */
static int read_scalar_key(reader *rd, ts_record *r, int key, int v)
{
    const ts_ydoc *d = &rd->d;
    ts_error *err = rd->err;
    long n = 0;
    int rc;
    switch (key) {
    case K_VERSION:
        return ts_ydoc_int(d, v, "toposcope_record", TS_RECORD_VERSION, TS_RECORD_VERSION, &n, err);
    case K_JOB:
        return text(d, v, "job", r->job, sizeof r->job, err);
    case K_USER:
        return text(d, v, "user", r->user, sizeof r->user, err);
    case K_UID:
        if (ts_ydoc_is_null(&d->v[v]))
            return TS_OK;
        rc = ts_ydoc_int(d, v, "uid", 0, 4294967295L, &n, err);
        r->uid = rc ? -1 : n;
        return rc;
    case K_TIME:
        rc = ts_ydoc_int(d, v, "time", 0, 1L << 40, &n, err);
        r->time = n;
        return rc;
    case K_STATUS:
        return text(d, v, "status", r->status, sizeof r->status, err);
    case K_PROLOG:
        return ts_ydoc_num(d, v, "prolog_s", 0, 1e6, &r->prolog_s, err);
    case K_NODES:
        if (d->v[v].type != TS_Y_SCALAR)
            return ts_ydoc_fail(d, v, err, "'nodes' must be a hostlist");
        if (!(r->nodes = strdup(d->v[v].text)))
            return ts_fail(err, TS_ENOMEM, "out of memory");
        return TS_OK;
    default:
        return read_tree(r, d, v, err);
    }
}

static int read_top(reader *rd, ts_record *r, const char *source)
{
    int rc, seen[K_COUNT] = { 0 };
    if ((rc = next_event(rd)) || (rc = next_event(rd)))     /* the stream, the document */
        return rc;
    if (rd->ev.type == YAML_STREAM_END_EVENT)
        return ts_fail(rd->err, TS_EINPUT, "%s: empty, not a toposcope record", source);
    if ((rc = next_event(rd)))
        return rc;
    if (rd->ev.type != YAML_MAPPING_START_EVENT)
        return ts_ydoc_fail_at(&rd->d, TS_EINPUT, &rd->ev.start_mark, rd->err,
                               "not a toposcope record (expected a mapping)");
    yaml_mark_t top = rd->ev.start_mark, stranger = { 0 };
    char unknown[72] = "";
    for (;;) {
        if ((rc = next_event(rd)))
            return rc;
        if (rd->ev.type == YAML_MAPPING_END_EVENT)
            break;
        yaml_mark_t at = rd->ev.start_mark;
        if (rd->ev.type != YAML_SCALAR_EVENT)
            return ts_ydoc_fail_at(&rd->d, TS_EINPUT, &at, rd->err, "a key in the top level must be a name");
        const char *name = (const char *)rd->ev.data.scalar.value;
        int key = 0;
        while (top_keys[key] && strcmp(top_keys[key], name))
            key++;
        if (key < K_COUNT && seen[key])
            return ts_ydoc_fail_at(&rd->d, TS_EINPUT, &at, rd->err, "key '%.64s' given twice in the top level "
                                   "(first at line %d)", name, seen[key]);
        /* a stranger is named only once the file is known to be a record at all */
        if (key == K_COUNT && !unknown[0]) {
            snprintf(unknown, sizeof unknown, "%.64s", name);
            stranger = at;
        }
        if ((rc = next_event(rd)))
            return rc;
        if (key == K_LINKS || key == K_ANOMALIES) {
            rc = read_list(rd, r, key);
        } else {
            int v = take_value(rd);
            rc = v < 0 ? v : key == K_COUNT ? TS_OK : read_scalar_key(rd, r, key, v);
        }
        if (rc)
            return rc;
        if (key < K_COUNT)
            seen[key] = (int)at.line + 1;
    }
    static const int required[] = { K_JOB, K_TIME, K_LINKS, K_ANOMALIES };
    if (!seen[K_VERSION])
        return ts_ydoc_fail_at(&rd->d, TS_EINPUT, &top, rd->err, "not a toposcope record: 'toposcope_record: %d' "
                               "missing", TS_RECORD_VERSION);
    if (unknown[0])
        return ts_ydoc_fail_at(&rd->d, TS_EINPUT, &stranger, rd->err, "unknown key '%s' in the top level (allowed: "
                               "toposcope_record, job, user, uid, time, status, prolog_s, nodes, tree, links, anomalies)",
                               unknown);
    for (size_t i = 0; i < sizeof required / sizeof required[0]; i++)
        if (!seen[required[i]])
            return ts_ydoc_fail_at(&rd->d, TS_EINPUT, &top, rd->err, "'%s' is missing", top_keys[required[i]]);
    if ((rc = next_event(rd)) || (rc = next_event(rd)))     /* the document's end, the next */
        return rc;
    if (rd->ev.type != YAML_STREAM_END_EVENT)
        return ts_ydoc_fail_at(&rd->d, TS_EINPUT, &rd->ev.start_mark, rd->err, "only one YAML document is allowed");
    return TS_OK;
}

int ts_record_parse(ts_record *r, const char *txt, size_t len, const char *source, ts_error *err)
{
    ts_record_init(r);
    if (len > TS_RECORD_MAX_BYTES)
        return ts_fail(err, TS_ELIMIT, "%s: larger than %u bytes", source, TS_RECORD_MAX_BYTES);
    reader rd = { .err = err };
    ts_ydoc_init(&rd.d, source, VALUE_MAX_NODES);
    if (!yaml_parser_initialize(&rd.ps))
        return ts_fail(err, TS_ENOMEM, "%s: out of memory", source);
    yaml_parser_set_input_string(&rd.ps, (const unsigned char *)(txt ? txt : ""), txt ? len : 0);
    int rc = read_top(&rd, r, source);
    if (rd.have_ev)
        yaml_event_delete(&rd.ev);
    yaml_parser_delete(&rd.ps);
    ts_ydoc_free(&rd.d);
    if (rc)
        ts_record_free(r);
    return rc;
}

int ts_record_load(ts_record *r, const char *path, ts_error *err)
{
    char *buf = NULL;
    size_t len = 0;
    ts_record_init(r);
    int rc = ts_ydoc_read_file(path, TS_RECORD_MAX_BYTES, &buf, &len, err);
    if (!rc)
        rc = ts_record_parse(r, buf, len, path, err);
    free(buf);
    return rc;
}
