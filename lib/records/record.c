/* toposcope — per-job link records (see toposcope/record.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "toposcope/hostlist.h"
#include "toposcope/record.h"
#include "toposcope/textout.h"
#include "util/ydoc.h"

#define MAX_US 86400e6

void ts_record_init(ts_record *r)
{
    memset(r, 0, sizeof *r);
    r->uid = -1;
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
        fprintf(out, ", samples: %ld}\n", o->samples);
    }
    return ts_anomalies_write_yaml(&r->anomalies, out);
}

/* ---- reader ---- */

static const char *const top_keys[] = { "toposcope_record", "job", "user", "uid", "time", "status", "nodes",
                                        "tree", "links", "anomalies", NULL };
static const char *const tree_keys[] = { "switches", "depth", "leaf_groups", NULL };
static const char *const link_keys[] = { "link", "kind", "est_us", "lo_us", "hi_us", "samples", NULL };
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

static int read_links(ts_record *r, const ts_ydoc *d, int list, ts_error *err)
{
    if (d->v[list].type != TS_Y_SEQ)
        return ts_ydoc_fail(d, list, err, "'links' must be a list");
    if (d->v[list].n > TS_RECORD_MAX_LINKS)
        return ts_ydoc_fail(d, list, err, "more than %d links", TS_RECORD_MAX_LINKS);
    r->links.o = calloc((size_t)(d->v[list].n ? d->v[list].n : 1), sizeof *r->links.o);
    if (!r->links.o)
        return ts_fail(err, TS_ENOMEM, "out of memory");
    for (int e = d->v[list].first; e >= 0; e = d->v[e].next) {
        if (d->v[e].type != TS_Y_MAP)
            return ts_ydoc_fail(d, e, err, "a link must be a mapping");
        int rc = ts_ydoc_check_keys(d, e, link_keys, "a link", err), at, kind;
        if (rc)
            return rc;
        ts_link_obs *o = &r->links.o[r->links.n];
        double samples;
        if ((at = need(d, e, "link", err)) < 0 || (rc = ts_ydoc_name(d, at, "link", o->id, sizeof o->id, err)) ||
            (at = need(d, e, "kind", err)) < 0 || (rc = ts_ydoc_choice(d, at, "kind", kinds, &kind, err)) ||
            (rc = opt_num(d, e, "est_us", -MAX_US, MAX_US, &o->est_us, err)) ||
            (rc = opt_num(d, e, "lo_us", -MAX_US, MAX_US, &o->lo_us, err)) ||
            (rc = opt_num(d, e, "hi_us", -MAX_US, MAX_US, &o->hi_us, err)) ||
            (rc = opt_num(d, e, "samples", 0, 1e15, &samples, err)))
            return at < 0 ? at : rc;
        o->access = kind == 1;
        o->samples = isfinite(samples) ? (long)samples : 0;
        o->se_us = isfinite(o->hi_us - o->lo_us) ? (o->hi_us - o->lo_us) / (2 * 1.6448536) : NAN;
        r->links.n++;
    }
    return TS_OK;
}

static int read_anomalies(ts_record *r, const ts_ydoc *d, int list, ts_error *err)
{
    if (d->v[list].type != TS_Y_SEQ)
        return ts_ydoc_fail(d, list, err, "'anomalies' must be a list");
    if (d->v[list].n > TS_RECORD_MAX_LINKS)
        return ts_ydoc_fail(d, list, err, "more than %d anomalies", TS_RECORD_MAX_LINKS);
    ts_anomaly_list *l = &r->anomalies;
    l->a = calloc((size_t)(d->v[list].n ? d->v[list].n : 1), sizeof *l->a);
    if (!l->a)
        return ts_fail(err, TS_ENOMEM, "out of memory");
    l->cap = d->v[list].n ? d->v[list].n : 1;
    for (int e = d->v[list].first; e >= 0; e = d->v[e].next) {
        if (d->v[e].type != TS_Y_MAP)
            return ts_ydoc_fail(d, e, err, "an anomaly must be a mapping");
        int rc = ts_ydoc_check_keys(d, e, anomaly_keys, "an anomaly", err), at, kind, reason;
        if (rc)
            return rc;
        ts_anomaly *a = &l->a[l->n];
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
        l->n++;
    }
    return TS_OK;
}

int ts_record_parse(ts_record *r, const char *txt, size_t len, const char *source, ts_error *err)
{
    ts_record_init(r);
    ts_ydoc d;
    ts_ylimits lim = { TS_RECORD_MAX_BYTES, 6, 24 * TS_RECORD_MAX_LINKS + 4 * TS_RECORD_MAX_GROUPS + 64 };
    int rc = ts_ydoc_parse(&d, txt, len, source, &lim, err), at;
    long v;
    if (rc)
        goto done;
    if (d.root < 0 || d.v[d.root].type != TS_Y_MAP) {
        rc = d.root < 0 ? ts_fail(err, TS_EINPUT, "%s: empty, not a toposcope record", source)
                        : ts_ydoc_fail(&d, d.root, err, "not a toposcope record (expected a mapping)");
        goto done;
    }
    if ((at = ts_ydoc_get(&d, d.root, "toposcope_record")) < 0) {
        rc = ts_ydoc_fail(&d, d.root, err, "not a toposcope record: 'toposcope_record: %d' missing",
                          TS_RECORD_VERSION);
        goto done;
    }
    if ((rc = ts_ydoc_int(&d, at, "toposcope_record", TS_RECORD_VERSION, TS_RECORD_VERSION, &v, err)) ||
        (rc = ts_ydoc_check_keys(&d, d.root, top_keys, "the top level", err)))
        goto done;
    if ((at = need(&d, d.root, "job", err)) < 0 || (rc = text(&d, at, "job", r->job, sizeof r->job, err))) {
        rc = at < 0 ? at : rc;
        goto done;
    }
    if ((at = ts_ydoc_get(&d, d.root, "user")) >= 0 && (rc = text(&d, at, "user", r->user, sizeof r->user, err)))
        goto done;
    if ((at = ts_ydoc_get(&d, d.root, "uid")) >= 0 && !ts_ydoc_is_null(&d.v[at])) {
        if ((rc = ts_ydoc_int(&d, at, "uid", 0, 4294967295L, &v, err)))
            goto done;
        r->uid = v;
    }
    if ((at = need(&d, d.root, "time", err)) < 0 ||
        (rc = ts_ydoc_int(&d, at, "time", 0, 1L << 40, &v, err))) {
        rc = at < 0 ? at : rc;
        goto done;
    }
    r->time = v;
    if ((at = ts_ydoc_get(&d, d.root, "status")) >= 0 &&
        (rc = text(&d, at, "status", r->status, sizeof r->status, err)))
        goto done;
    if ((at = ts_ydoc_get(&d, d.root, "nodes")) >= 0) {
        if (d.v[at].type != TS_Y_SCALAR) {
            rc = ts_ydoc_fail(&d, at, err, "'nodes' must be a hostlist");
            goto done;
        }
        if (!(r->nodes = strdup(d.v[at].text))) {
            rc = ts_fail(err, TS_ENOMEM, "out of memory");
            goto done;
        }
    }
    if ((at = ts_ydoc_get(&d, d.root, "tree")) >= 0 && (rc = read_tree(r, &d, at, err)))
        goto done;
    if ((at = need(&d, d.root, "links", err)) < 0 || (rc = read_links(r, &d, at, err))) {
        rc = at < 0 ? at : rc;
        goto done;
    }
    if ((at = need(&d, d.root, "anomalies", err)) < 0 || (rc = read_anomalies(r, &d, at, err))) {
        rc = at < 0 ? at : rc;
        goto done;
    }
done:
    ts_ydoc_free(&d);
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
