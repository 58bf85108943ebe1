/* toposcope — suspect links across records, leaf groups against topology.conf (report.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "toposcope/hostlist.h"
#include "toposcope/probe.h"
#include "toposcope/report.h"
#include "util/unionfind.h"

typedef struct values {
    int n, cap;
    double *v;
} values;

typedef struct group {
    char job[TS_RECORD_TEXT_MAX];
    char *hosts;                     /* a hostlist */
} group;

struct ts_report {
    int n, cap;
    ts_suspect *s;
    values *pct, *us;
    int *stamp;                      /* the last record that counted the link as seen */
    int *slot;
    int slot_cap;
    int records;
    ts_baseline_builder *bb;
    int ngroups, gcap;
    group *g;
    int sorted;
};

static uint64_t hash_id(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
    return h ^ (h >> 32);
}

ts_report *ts_report_new(void)
{
    ts_report *r = calloc(1, sizeof *r);
    if (r && !(r->bb = ts_baseline_builder_new())) {
        free(r);
        return NULL;
    }
    return r;
}

void ts_report_free(ts_report *r)
{
    if (!r)
        return;
    for (int i = 0; i < r->n; i++) {
        free(r->pct[i].v);
        free(r->us[i].v);
    }
    for (int i = 0; i < r->ngroups; i++)
        free(r->g[i].hosts);
    free(r->g);
    free(r->s);
    free(r->pct);
    free(r->us);
    free(r->stamp);
    free(r->slot);
    ts_baseline_builder_free(r->bb);
    free(r);
}

int ts_report_records(const ts_report *r)
{
    return r->records;
}

static int rehash(ts_report *r)
{
    int cap = r->slot_cap ? 2 * r->slot_cap : 256;
    int *slot = malloc(sizeof(int) * (size_t)cap);
    if (!slot)
        return TS_ENOMEM;
    for (int i = 0; i < cap; i++)
        slot[i] = -1;
    for (int i = 0; i < r->n; i++) {
        size_t h = hash_id(r->s[i].id) & (size_t)(cap - 1);
        while (slot[h] >= 0)
            h = (h + 1) & (size_t)(cap - 1);
        slot[h] = i;
    }
    free(r->slot);
    r->slot = slot;
    r->slot_cap = cap;
    return TS_OK;
}

/* The entry of id, made when new; -1 on allocation failure. Entries keep their index until the
 * suspects are sorted, which only ts_report_suspects does. */
static int entry(ts_report *r, const char *id, int access)
{
    if (2 * (r->n + 1) > r->slot_cap && rehash(r))
        return -1;
    size_t h = hash_id(id) & (size_t)(r->slot_cap - 1);
    while (r->slot[h] >= 0) {
        if (!strcmp(r->s[r->slot[h]].id, id))
            return r->slot[h];
        h = (h + 1) & (size_t)(r->slot_cap - 1);
    }
    if (r->n == r->cap) {
        int cap = r->cap ? 2 * r->cap : 64;
        ts_suspect *s = realloc(r->s, sizeof *s * (size_t)cap);
        if (s)
            r->s = s;
        values *p = realloc(r->pct, sizeof *p * (size_t)cap);
        if (p)
            r->pct = p;
        values *u = realloc(r->us, sizeof *u * (size_t)cap);
        if (u)
            r->us = u;
        int *st = realloc(r->stamp, sizeof *st * (size_t)cap);
        if (st)
            r->stamp = st;
        if (!s || !p || !u || !st)
            return -1;
        r->cap = cap;
    }
    int i = r->n++;
    ts_suspect *s = &r->s[i];
    memset(s, 0, sizeof *s);
    snprintf(s->id, sizeof s->id, "%s", id);
    s->access = access;
    s->median_excess_pct = s->median_excess_us = NAN;
    memset(&r->pct[i], 0, sizeof r->pct[i]);
    memset(&r->us[i], 0, sizeof r->us[i]);
    r->stamp[i] = -1;
    r->slot[h] = i;
    return i;
}

static int push(values *v, double x)
{
    if (v->n == v->cap) {
        int cap = v->cap ? 2 * v->cap : 8;
        double *t = realloc(v->v, sizeof(double) * (size_t)cap);
        if (!t)
            return TS_ENOMEM;
        v->v = t;
        v->cap = cap;
    }
    v->v[v->n++] = x;
    return TS_OK;
}

static int flagged_in(const ts_record *rec, const char *id)
{
    for (int i = 0; i < rec->anomalies.n; i++)
        if (!strcmp(rec->anomalies.a[i].id, id))
            return 1;
    return 0;
}

int ts_report_add(ts_report *r, const ts_record *rec, ts_error *err)
{
    if (r->sorted)
        return ts_fail(err, TS_EINPUT, "records added after the suspects were ranked");
    int me = r->records++;
    int nlinks = rec->links.n > rec->anomalies.n ? rec->links.n : rec->anomalies.n;
    /* a job that flagged everything says little about any one link */
    double weight = nlinks ? 1.0 - (double)rec->anomalies.n / nlinks : 0;
    if (weight < 0)
        weight = 0;
    for (int i = 0; i < rec->links.n; i++) {
        const ts_link_obs *o = &rec->links.o[i];
        int k = entry(r, o->id, o->access);
        if (k < 0)
            return ts_fail(err, TS_ENOMEM, "out of memory");
        if (r->stamp[k] != me) {
            r->stamp[k] = me;
            r->s[k].seen++;
        }
        /* the baseline learns from what this job found normal */
        if (!flagged_in(rec, o->id) && ts_baseline_builder_add(r->bb, o->id, o->access, o->est_us, o->se_us))
            return ts_fail(err, TS_ENOMEM, "out of memory");
    }
    for (int i = 0; i < rec->anomalies.n; i++) {
        const ts_anomaly *a = &rec->anomalies.a[i];
        int k = entry(r, a->id, a->access);
        if (k < 0)
            return ts_fail(err, TS_ENOMEM, "out of memory");
        ts_suspect *s = &r->s[k];
        int dup = 0;
        for (int j = 0; j < i; j++)
            dup |= !strcmp(rec->anomalies.a[j].id, a->id);
        if (dup)
            continue;                    /* one job counts once per link */
        if (r->stamp[k] != me) {
            r->stamp[k] = me;
            s->seen++;
        }
        s->flagged++;
        s->evidence += weight;
        if (a->kind == TS_ANOMALY_UNREACHABLE) {
            s->unreachable++;
        } else if ((isfinite(a->excess_pct) && push(&r->pct[k], a->excess_pct)) ||
                   (isfinite(a->excess_us) && push(&r->us[k], a->excess_us))) {
            return ts_fail(err, TS_ENOMEM, "out of memory");
        }
        if (a->score > s->max_score)
            s->max_score = a->score;
        if (s->flagged == 1 || rec->time < s->first_seen)
            s->first_seen = rec->time;
        if (s->flagged == 1 || rec->time > s->last_seen)
            s->last_seen = rec->time;
        if (s->njobs < TS_REPORT_JOBS_KEPT)
            snprintf(s->jobs[s->njobs++], sizeof s->jobs[0], "%s", rec->job);
    }
    for (int i = 0; i < rec->ngroups; i++) {
        if (r->ngroups == r->gcap) {
            int cap = r->gcap ? 2 * r->gcap : 64;
            group *g = realloc(r->g, sizeof *g * (size_t)cap);
            if (!g)
                return ts_fail(err, TS_ENOMEM, "out of memory");
            r->g = g;
            r->gcap = cap;
        }
        group *g = &r->g[r->ngroups];
        snprintf(g->job, sizeof g->job, "%s", rec->job);
        if (!(g->hosts = strdup(rec->leaf_groups[i])))
            return ts_fail(err, TS_ENOMEM, "out of memory");
        r->ngroups++;
    }
    return TS_OK;
}

static int cmp_suspect(const void *pa, const void *pb)
{
    const ts_suspect *a = pa, *b = pb;
    if ((a->flagged > 0) != (b->flagged > 0))
        return a->flagged > 0 ? -1 : 1;
    if (fabs(a->evidence - b->evidence) > 1e-9)
        return a->evidence > b->evidence ? -1 : 1;
    if (a->flagged != b->flagged)
        return a->flagged > b->flagged ? -1 : 1;
    double ea = isfinite(a->median_excess_pct) ? a->median_excess_pct : -INFINITY;
    double eb = isfinite(b->median_excess_pct) ? b->median_excess_pct : -INFINITY;
    if (ea != eb)
        return ea > eb ? -1 : 1;
    return strcmp(a->id, b->id);
}

int ts_report_suspects(ts_report *r, const ts_suspect **out, int *n, ts_error *err)
{
    if (!r->sorted) {
        for (int i = 0; i < r->n; i++) {
            if (r->pct[i].n)
                r->s[i].median_excess_pct = ts_median(r->pct[i].v, r->pct[i].n);
            if (r->us[i].n)
                r->s[i].median_excess_us = ts_median(r->us[i].v, r->us[i].n);
        }
        if (r->n > 1)
            qsort(r->s, (size_t)r->n, sizeof *r->s, cmp_suspect);
        r->sorted = 1;           /* the index no longer matches: no more records */
    }
    int k = 0;
    while (k < r->n && r->s[k].flagged > 0)
        k++;
    *out = r->s;
    *n = k;
    return TS_OK;
}

int ts_report_baseline(const ts_report *r, ts_baseline *b, ts_error *err)
{
    return ts_baseline_builder_finish(r->bb, b, err);
}

/* ---- leaf groups ---- */

/* Every node named by any group, a dense index each (names sorted). */
typedef struct nodeset {
    int n;
    char **names;
    int *slot;
    int cap;
} nodeset;

static void nodeset_free(nodeset *s)
{
    for (int i = 0; i < s->n; i++)
        free(s->names[i]);
    free(s->names);
    free(s->slot);
    memset(s, 0, sizeof *s);
}

static int nodeset_find(const nodeset *s, const char *name)
{
    if (!s->cap)
        return -1;
    size_t h = hash_id(name) & (size_t)(s->cap - 1);
    while (s->slot[h] >= 0) {
        if (!strcmp(s->names[s->slot[h]], name))
            return s->slot[h];
        h = (h + 1) & (size_t)(s->cap - 1);
    }
    return -1;
}

static int nodeset_add(nodeset *s, const char *name, int *max_names)
{
    if (nodeset_find(s, name) >= 0)
        return TS_OK;
    if (2 * (s->n + 1) > s->cap) {
        int cap = s->cap ? 2 * s->cap : 256;
        int *slot = malloc(sizeof(int) * (size_t)cap);
        if (!slot)
            return TS_ENOMEM;
        for (int i = 0; i < cap; i++)
            slot[i] = -1;
        for (int i = 0; i < s->n; i++) {
            size_t h = hash_id(s->names[i]) & (size_t)(cap - 1);
            while (slot[h] >= 0)
                h = (h + 1) & (size_t)(cap - 1);
            slot[h] = i;
        }
        free(s->slot);
        s->slot = slot;
        s->cap = cap;
    }
    if (s->n == *max_names) {
        int m = *max_names ? 2 * *max_names : 256;
        char **t = realloc(s->names, sizeof(char *) * (size_t)m);
        if (!t)
            return TS_ENOMEM;
        s->names = t;
        *max_names = m;
    }
    if (!(s->names[s->n] = strdup(name)))
        return TS_ENOMEM;
    size_t h = hash_id(name) & (size_t)(s->cap - 1);
    while (s->slot[h] >= 0)
        h = (h + 1) & (size_t)(s->cap - 1);
    s->slot[h] = s->n++;
    return TS_OK;
}

int ts_report_inferred_tree(const ts_report *r, ts_fabric *out, ts_error *err)
{
    nodeset ns = { 0 };
    int maxn = 0, rc = TS_OK;
    int *uf = NULL, *leaf_of = NULL;
    ts_fabric_init(out);
    for (int i = 0; i < r->ngroups && rc == TS_OK; i++) {
        ts_hostlist hl;
        if (ts_hostlist_expand(r->g[i].hosts, strlen(r->g[i].hosts), &hl, NULL) != TS_OK)
            continue;                    /* the record reader accepted it; a bad one is skipped */
        for (size_t k = 0; k < hl.count && rc == TS_OK; k++)
            rc = nodeset_add(&ns, hl.hosts[k], &maxn);
        ts_hostlist_free(&hl);
    }
    if (rc)
        goto oom;
    if (ns.n == 0) {
        rc = ts_fail(err, TS_EINPUT, "no record holds a measured tree: nothing to infer");
        goto done;
    }
    uf = malloc(sizeof(int) * (size_t)ns.n);
    leaf_of = malloc(sizeof(int) * (size_t)ns.n);
    if (!uf || !leaf_of)
        goto oom;
    for (int i = 0; i < ns.n; i++)
        uf[i] = i;
    for (int i = 0; i < r->ngroups; i++) {
        ts_hostlist hl;
        if (ts_hostlist_expand(r->g[i].hosts, strlen(r->g[i].hosts), &hl, NULL) != TS_OK)
            continue;
        int first = hl.count ? nodeset_find(&ns, hl.hosts[0]) : -1;
        for (size_t k = 1; k < hl.count; k++) {
            int a = ts_uf_find(uf, first), b = ts_uf_find(uf, nodeset_find(&ns, hl.hosts[k]));
            if (a != b)
                uf[a] = b;
        }
        ts_hostlist_free(&hl);
    }
    int top = ts_fabric_add_vertex(out, "top", TS_SWITCH, err), nleaves = 0;
    if (top < 0) {
        rc = top;
        goto done;
    }
    for (int i = 0; i < ns.n; i++)
        leaf_of[i] = -1;
    for (int i = 0; i < ns.n; i++) {
        int root = ts_uf_find(uf, i);
        if (leaf_of[root] < 0) {
            char name[32];
            snprintf(name, sizeof name, "leaf%d", ++nleaves);
            int v = ts_fabric_add_vertex(out, name, TS_SWITCH, err);
            if (v < 0 || (rc = ts_fabric_attach(out, top, v, err)) != TS_OK) {
                rc = v < 0 ? v : rc;
                goto done;
            }
            leaf_of[root] = v;
        }
        int v = ts_fabric_add_vertex(out, ns.names[i], TS_NODE, err);
        if (v < 0 || (rc = ts_fabric_attach(out, leaf_of[root], v, err)) != TS_OK) {
            rc = v < 0 ? v : rc;
            goto done;
        }
    }
    rc = ts_fabric_finalize(out, err);
    goto done;
oom:
    rc = ts_fail(err, TS_ENOMEM, "out of memory");
done:
    if (rc)
        ts_fabric_free(out);
    free(uf);
    free(leaf_of);
    nodeset_free(&ns);
    return rc;
}

static int cmp_mismatch(const void *pa, const void *pb)
{
    const ts_mismatch *a = pa, *b = pb;
    if (a->jobs != b->jobs)
        return a->jobs > b->jobs ? -1 : 1;
    return ts_hostname_cmp(a->node, b->node);
}

int ts_report_mismatches(const ts_report *r, const ts_fabric *admin, ts_mismatch **out, int *n,
                         ts_error *err)
{
    *out = NULL;
    *n = 0;
    int cap = 0;
    int *count = calloc((size_t)(admin->nvert ? admin->nvert : 1), sizeof(int));
    if (!count)
        return ts_fail(err, TS_ENOMEM, "out of memory");
    for (int i = 0; i < r->ngroups; i++) {
        ts_hostlist hl;
        if (ts_hostlist_expand(r->g[i].hosts, strlen(r->g[i].hosts), &hl, NULL) != TS_OK)
            continue;
        /* the admin switch most of the group sits on */
        int best = TS_NONE;
        for (size_t k = 0; k < hl.count; k++) {
            int v = ts_fabric_find(admin, hl.hosts[k]);
            int p = v != TS_NONE && admin->v[v].kind == TS_NODE ? admin->v[v].parent : TS_NONE;
            if (p != TS_NONE && ++count[p] > (best == TS_NONE ? 0 : count[best]))
                best = p;
        }
        for (size_t k = 0; k < hl.count && best != TS_NONE; k++) {
            int v = ts_fabric_find(admin, hl.hosts[k]);
            int p = v != TS_NONE && admin->v[v].kind == TS_NODE ? admin->v[v].parent : TS_NONE;
            /* a group of two split across two switches names no majority: leave it */
            if (p == best || 2 * count[best] <= (int)hl.count)
                continue;
            int j = 0;
            while (j < *n && strcmp((*out)[j].node, hl.hosts[k]))
                j++;
            if (j == *n) {
                if (*n == cap) {
                    cap = cap ? 2 * cap : 16;
                    ts_mismatch *t = realloc(*out, sizeof *t * (size_t)cap);
                    if (!t) {
                        ts_hostlist_free(&hl);
                        free(count);
                        free(*out);
                        *out = NULL;
                        *n = 0;
                        return ts_fail(err, TS_ENOMEM, "out of memory");
                    }
                    *out = t;
                }
                ts_mismatch *m = &(*out)[(*n)++];
                memset(m, 0, sizeof *m);
                snprintf(m->node, sizeof m->node, "%s", hl.hosts[k]);
                snprintf(m->admin_switch, sizeof m->admin_switch, "%s", p != TS_NONE ? admin->v[p].name : "");
                snprintf(m->measured_with, sizeof m->measured_with, "%s", admin->v[best].name);
            }
            (*out)[j].jobs++;
            snprintf((*out)[j].last_job, sizeof (*out)[j].last_job, "%s", r->g[i].job);
        }
        for (size_t k = 0; k < hl.count; k++) {
            int v = ts_fabric_find(admin, hl.hosts[k]);
            if (v != TS_NONE && admin->v[v].kind == TS_NODE && admin->v[v].parent != TS_NONE)
                count[admin->v[v].parent] = 0;
        }
        ts_hostlist_free(&hl);
    }
    free(count);
    if (*n > 1)
        qsort(*out, (size_t)*n, sizeof **out, cmp_mismatch);
    return TS_OK;
}
