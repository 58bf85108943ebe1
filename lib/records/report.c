/* toposcope — suspect links across records, leaf groups against topology.conf (report.h). */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "toposcope/flagindex.h"
#include "toposcope/hostlist.h"
#include "toposcope/probe.h"
#include "toposcope/report.h"
#include "util/grow.h"
#include "util/strpool.h"
#include "util/unionfind.h"

typedef struct values {
    int n, cap;
    double *v;
} values;

/* What the flags of one link add up to; only links flagged at least once have one. */
typedef struct flags {
    int flagged, unreachable;
    double evidence, max_score;
    int64_t first_seen, last_seen;
    int njobs;
    const char *jobs[TS_REPORT_JOBS_KEPT];   /* in the job pool */
    values pct, us;
} flags;

/* One link id, numbered as in the id pool. */
typedef struct link_entry {
    int access;
    ts_link_match match;             /* against the admin tree, when there is one */
    int seen;                        /* records that measured or flagged it */
    int seen_by, flagged_by;         /* the last record that counted it seen, flagged */
    flags *f;
} link_entry;

typedef struct group {
    const char *job;                 /* in the job pool */
    int record;                      /* the number of the record it came from */
    char *hosts;                     /* a hostlist */
} group;

struct ts_report {
    ts_strpool *ids, *jobs;
    link_entry *e;                   /* by id number */
    int cap;
    int records;
    ts_baseline_builder *bb;
    int ngroups, gcap;
    group *g;
    const ts_fabric *admin;          /* NULL: the records' ids as they are */
    ts_link_matcher *matcher;
    int measured, partial, failed;   /* records by the prolog's status */
    values prolog;                   /* their prolog durations, s */
    ts_suspect *s;                   /* the ranking, once asked for */
    int ns;
    int ranked;
};

ts_report *ts_report_new(void)
{
    ts_report *r = calloc(1, sizeof *r);
    if (r && (!(r->bb = ts_baseline_builder_new()) || !(r->ids = ts_strpool_new()) ||
              !(r->jobs = ts_strpool_new()))) {
        ts_report_free(r);
        return NULL;
    }
    return r;
}

void ts_report_free(ts_report *r)
{
    if (!r)
        return;
    int n = r->ids ? ts_strpool_count(r->ids) : 0;
    for (int i = 0; i < n && i < r->cap; i++) {
        if (r->e[i].f) {
            free(r->e[i].f->pct.v);
            free(r->e[i].f->us.v);
            free(r->e[i].f);
        }
    }
    for (int i = 0; i < r->ngroups; i++)
        free(r->g[i].hosts);
    free(r->g);
    free(r->e);
    free(r->s);
    free(r->prolog.v);
    ts_strpool_free(r->ids);
    ts_strpool_free(r->jobs);
    ts_link_matcher_free(r->matcher);
    ts_baseline_builder_free(r->bb);
    free(r);
}

int ts_report_records(const ts_report *r)
{
    return r->records;
}

int ts_report_set_admin(ts_report *r, const ts_fabric *admin, ts_error *err)
{
    if (r->records)
        return ts_fail(err, TS_EINPUT, "the admin tree is set after records were added");
    ts_link_matcher_free(r->matcher);
    r->matcher = NULL;
    r->admin = admin;
    return ts_link_matcher_new(admin, &r->matcher, err);
}

/* The key a record's id is counted under: the admin link it names exactly, else the id. */
static const char *key_of(const ts_report *r, const char *id, ts_link_match *mt)
{
    *mt = (ts_link_match){ TS_MATCH_NONE, TS_NONE };
    if (!r->matcher)
        return id;
    *mt = ts_link_match_id(r->matcher, id);
    return mt->kind == TS_MATCH_EXACT ? r->admin->v[mt->vertex].name : id;
}

/* The entry of id, made when new and counted as seen by record `me`; NULL when out of memory. */
static link_entry *seen_by(ts_report *r, const char *id, int access, int me)
{
    ts_link_match mt;
    const char *key = key_of(r, id, &mt);
    int fresh, k = ts_strpool_intern_row(r->ids, key, &r->e, sizeof *r->e, &r->cap, &fresh);
    if (k < 0)
        return NULL;
    link_entry *e = &r->e[k];
    if (fresh)
        *e = (link_entry){ .access = access, .match = mt, .seen_by = -1, .flagged_by = -1 };
    if (e->seen_by != me) {
        e->seen_by = me;
        e->seen++;
    }
    return e;
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

/* One anomaly of a record (time t, job in the job pool, weight w) into its link's entry e. */
static int add_flag(link_entry *e, const ts_anomaly *a, int64_t t, const char *job, double w)
{
    if (!e->f && !(e->f = calloc(1, sizeof *e->f)))
        return TS_ENOMEM;
    flags *f = e->f;
    f->flagged++;
    f->evidence += w;
    if (a->kind == TS_ANOMALY_UNREACHABLE)
        f->unreachable++;
    else if ((isfinite(a->excess_pct) && push(&f->pct, a->excess_pct)) ||
             (isfinite(a->excess_us) && push(&f->us, a->excess_us)))
        return TS_ENOMEM;
    if (f->flagged == 1 || a->score > f->max_score)
        f->max_score = a->score;
    if (f->flagged == 1 || t < f->first_seen)
        f->first_seen = t;
    if (f->flagged == 1 || t > f->last_seen)
        f->last_seen = t;
    if (f->njobs < TS_REPORT_JOBS_KEPT)
        f->jobs[f->njobs++] = job;
    return TS_OK;
}

/* Linear in the record: every id is looked up once per mention, and a link's flags in this
 * record are known by the stamp its first anomaly left, not by searching the anomalies again. */
int ts_report_add(ts_report *r, const ts_record *rec, ts_error *err)
{
    if (r->ranked)
        return ts_fail(err, TS_EINPUT, "records added after the suspects were ranked");
    /* a record whose leaf groups do not expand was refused by the reader; here its ids are
     * matched without the job's nodes (EXACT by name, WITHIN) */
    if (r->matcher && ts_link_matcher_set_job(r->matcher, rec->leaf_groups, rec->ngroups, err) == TS_ENOMEM)
        return TS_ENOMEM;
    int me = r->records++;
    if (!strcmp(rec->status, "measured"))
        r->measured++;
    else if (!strcmp(rec->status, "partial"))
        r->partial++;
    else
        r->failed++;
    if (isfinite(rec->prolog_s) && push(&r->prolog, rec->prolog_s))
        return ts_fail(err, TS_ENOMEM, "out of memory");
    int nlinks = rec->links.n > rec->anomalies.n ? rec->links.n : rec->anomalies.n;
    /* a job that flagged everything says little about any one link */
    double weight = nlinks ? 1.0 - (double)rec->anomalies.n / nlinks : 0;
    if (weight < 0)
        weight = 0;
    const char *job = NULL;
    if (rec->anomalies.n) {
        int j = ts_strpool_intern(r->jobs, rec->job);
        if (j < 0)
            return ts_fail(err, TS_ENOMEM, "out of memory");
        job = ts_strpool_str(r->jobs, j);
    }
    for (int i = 0; i < rec->anomalies.n; i++) {
        const ts_anomaly *a = &rec->anomalies.a[i];
        link_entry *e = seen_by(r, a->id, a->access, me);
        if (!e)
            return ts_fail(err, TS_ENOMEM, "out of memory");
        if (e->flagged_by == me)
            continue;                    /* one job counts once per link */
        e->flagged_by = me;
        if (add_flag(e, a, rec->time, job, weight))
            return ts_fail(err, TS_ENOMEM, "out of memory");
    }
    for (int i = 0; i < rec->links.n; i++) {
        const ts_link_obs *o = &rec->links.o[i];
        link_entry *e = seen_by(r, o->id, o->access, me);
        if (!e)
            return ts_fail(err, TS_ENOMEM, "out of memory");
        /* the baseline learns from what this job found normal */
        if (e->flagged_by != me && ts_baseline_builder_learn(r->bb, o))
            return ts_fail(err, TS_ENOMEM, "out of memory");
    }
    for (int i = 0; i < rec->ngroups; i++) {
        if (ts_grow(&r->g, sizeof *r->g, &r->gcap, r->ngroups, 64))
            return ts_fail(err, TS_ENOMEM, "out of memory");
        int j = ts_strpool_intern(r->jobs, rec->job);
        group *g = &r->g[r->ngroups];
        if (j < 0 || !(g->hosts = strdup(rec->leaf_groups[i])))
            return ts_fail(err, TS_ENOMEM, "out of memory");
        g->job = ts_strpool_str(r->jobs, j);
        g->record = me;
        r->ngroups++;
    }
    return TS_OK;
}

/* ---- a records directory ---- */

/* by name, after the type character in front of it */
static int cmp_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a + 1, *(char *const *)b + 1);
}

static void free_names(char **names, int n)
{
    for (int i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

/* The directory's file names, sorted, each after a character for its type ('r' a regular file,
 * 'x' anything else, '?' unknown: lstat tells), so that a stat per record is saved where the
 * file system says. */
static int list_names(const char *dir, char ***out, int *n, int *complete, ts_error *err)
{
    DIR *d = opendir(dir);
    if (!d)
        return ts_fail(err, TS_EINPUT, "%s: %s", dir, strerror(errno));
    char **names = NULL;
    int cap = 0, rc = TS_OK;
    struct dirent *de;
    *n = 0;
    while ((de = readdir(d))) {
        /* dot files: the epilogs' temporary files and their flag index (.index) */
        if (de->d_name[0] == '.')
            continue;
        if (*n == TS_REPORT_MAX_FILES) {
            *complete = 0;
            break;
        }
        size_t L = strlen(de->d_name);
        if (ts_grow(&names, sizeof *names, &cap, *n, 256) || !(names[*n] = malloc(L + 2))) {
            rc = ts_fail(err, TS_ENOMEM, "out of memory listing %s", dir);
            break;
        }
        names[*n][0] = de->d_type == DT_REG ? 'r' : de->d_type == DT_UNKNOWN ? '?' : 'x';
        memcpy(names[*n] + 1, de->d_name, L + 1);
        (*n)++;
    }
    closedir(d);
    if (rc == TS_OK && *n > 1)
        qsort(names, (size_t)*n, sizeof *names, cmp_name);
    if (rc != TS_OK) {
        free_names(names, *n);
        names = NULL;
        *n = 0;
    }
    *out = names;
    return rc;
}

int ts_report_add_dir(ts_report *r, const ts_report_dir *o, int *skipped, int *complete, ts_error *err)
{
    char **names = NULL;
    int n = 0, rc;
    *complete = 1;
    if ((rc = list_names(o->dir, &names, &n, complete, err)) != TS_OK)
        return rc;
    for (int i = 0; i < n && rc == TS_OK; i++) {
        if (o->deadline > 0 && ts_flag_clock() > o->deadline) {
            *complete = 0;
            break;
        }
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/%s", o->dir, names[i] + 1);
        struct stat st;
        ts_record rec;
        ts_error why;
        if (names[i][0] == 'x' || (names[i][0] == '?' && (lstat(path, &st) != 0 || !S_ISREG(st.st_mode)))) {
            if (o->skip)
                o->skip(path, "not a regular file", o->arg);
            (*skipped)++;
            continue;
        }
        if (ts_record_load(&rec, path, &why) != TS_OK) {
            if (o->skip)
                o->skip(path, why.text, o->arg);
            (*skipped)++;
            continue;
        }
        if (!(o->since_s > 0 && (double)(o->now - rec.time) > o->since_s))
            rc = ts_report_add(r, &rec, err);
        if (rc == TS_OK && o->each)
            rc = o->each(&rec, o->arg, err);
        ts_record_free(&rec);
    }
    free_names(names, n);
    return rc;
}

static int cmp_suspect(const void *pa, const void *pb)
{
    const ts_suspect *a = pa, *b = pb;
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
    *out = NULL;
    *n = 0;
    if (!r->ranked) {
        int ids = ts_strpool_count(r->ids), k = 0;
        for (int i = 0; i < ids; i++)
            k += r->e[i].f != NULL;
        if (!(r->s = calloc((size_t)(k ? k : 1), sizeof *r->s)))
            return ts_fail(err, TS_ENOMEM, "out of memory");
        for (int i = 0; i < ids; i++) {
            const link_entry *e = &r->e[i];
            flags *f = e->f;
            if (!f)
                continue;
            ts_suspect *s = &r->s[r->ns++];
            s->id = ts_strpool_str(r->ids, i);
            s->access = e->access;
            s->seen = e->seen;
            s->flagged = f->flagged;
            s->unreachable = f->unreachable;
            s->evidence = f->evidence;
            s->median_excess_pct = f->pct.n ? ts_median(f->pct.v, f->pct.n) : NAN;
            s->median_excess_us = f->us.n ? ts_median(f->us.v, f->us.n) : NAN;
            s->max_score = f->max_score;
            s->first_seen = f->first_seen;
            s->last_seen = f->last_seen;
            s->njobs = f->njobs;
            memcpy(s->jobs, f->jobs, sizeof s->jobs);
            s->mapped = r->admin != NULL;
            s->match = e->match.kind;
            s->within = e->match.kind == TS_MATCH_WITHIN ? r->admin->v[e->match.vertex].name : NULL;
        }
        if (r->ns > 1)
            qsort(r->s, (size_t)r->ns, sizeof *r->s, cmp_suspect);
        r->ranked = 1;
    }
    *out = r->s;
    *n = r->ns;
    return TS_OK;
}

const double ts_report_quantiles[TS_REPORT_QUANTILES] = { 0.5, 0.9, 0.99 };

static int cmp_double(const void *pa, const void *pb)
{
    double a = *(const double *)pa, b = *(const double *)pb;
    return a < b ? -1 : a > b;
}

int ts_report_totals_get(const ts_report *r, ts_report_totals *t, ts_error *err)
{
    memset(t, 0, sizeof *t);
    t->records = r->records;
    t->measured = r->measured;
    t->partial = r->partial;
    t->failed = r->failed;
    t->prolog_n = r->prolog.n;
    for (int q = 0; q < TS_REPORT_QUANTILES; q++)
        t->prolog_q_s[q] = NAN;
    if (!r->prolog.n)
        return TS_OK;
    double *v = malloc(sizeof(double) * (size_t)r->prolog.n);
    if (!v)
        return ts_fail(err, TS_ENOMEM, "out of memory");
    memcpy(v, r->prolog.v, sizeof(double) * (size_t)r->prolog.n);
    qsort(v, (size_t)r->prolog.n, sizeof *v, cmp_double);
    for (int i = 0; i < r->prolog.n; i++)
        t->prolog_sum_s += v[i];
    for (int q = 0; q < TS_REPORT_QUANTILES; q++) {
        int k = (int)ceil(ts_report_quantiles[q] * r->prolog.n) - 1;
        t->prolog_q_s[q] = v[k < 0 ? 0 : k];
    }
    free(v);
    return TS_OK;
}

int ts_report_baseline(const ts_report *r, ts_baseline *b, ts_error *err)
{
    return ts_baseline_builder_finish(r->bb, b, err);
}

/* ---- leaf groups ---- */

/* The tree the records' leaf groups make: nodes measured under one switch in any job share a
 * leaf; nodes that shared a job share a fabric. Node numbers are those of the pool `ns`. */
typedef struct inference {
    ts_strpool *ns;
    int nn;
    int *leaf, *fabric;              /* union-find over node numbers */
    int *rank;                       /* a node's place in natural name order */
    int *leaf_min, *fabric_min;      /* by root: the smallest rank of the set */
    int *order;                      /* node numbers, fabric by fabric, leaf by leaf */
} inference;

static void inference_free(inference *in)
{
    ts_strpool_free(in->ns);
    free(in->leaf);
    free(in->fabric);
    free(in->rank);
    free(in->leaf_min);
    free(in->fabric_min);
    free(in->order);
}

/* Every node named by a group, numbered in order of appearance. A group whose hostlist does not
 * expand is passed over here and below (the record reader refused those). */
static int intern_nodes(const ts_report *r, inference *in)
{
    int rc = TS_OK;
    for (int i = 0; i < r->ngroups && rc == TS_OK; i++) {
        ts_hostlist hl;
        if (ts_hostlist_expand(r->g[i].hosts, strlen(r->g[i].hosts), &hl, NULL) != TS_OK)
            continue;
        for (size_t k = 0; k < hl.count && rc == TS_OK; k++)
            rc = ts_strpool_intern(in->ns, hl.hosts[k]) < 0 ? TS_ENOMEM : TS_OK;
        ts_hostlist_free(&hl);
    }
    in->nn = ts_strpool_count(in->ns);
    return rc;
}

/* Each group's nodes joined under one leaf, and with the other groups of its record (groups of
 * one record are added one after the other) in one fabric. */
static void join_groups(const ts_report *r, inference *in)
{
    for (int i = 0; i < in->nn; i++)
        in->leaf[i] = in->fabric[i] = i;
    int rec = -1, rec_first = -1;
    for (int i = 0; i < r->ngroups; i++) {
        ts_hostlist hl;
        if (ts_hostlist_expand(r->g[i].hosts, strlen(r->g[i].hosts), &hl, NULL) != TS_OK)
            continue;
        int first = hl.count ? ts_strpool_find(in->ns, hl.hosts[0]) : -1;
        if (hl.count && rec != r->g[i].record) {
            rec = r->g[i].record;
            rec_first = first;
        }
        for (size_t k = 0; k < hl.count; k++) {
            int x = ts_strpool_find(in->ns, hl.hosts[k]);
            ts_uf_union(in->leaf, x, first);
            ts_uf_union(in->fabric, x, rec_first);
        }
        ts_hostlist_free(&hl);
    }
}

static int cmp_node_name(const void *a, const void *b, void *ctx)
{
    const ts_strpool *ns = ctx;
    return ts_hostname_cmp(ts_strpool_str(ns, *(const int *)a), ts_strpool_str(ns, *(const int *)b));
}

static int cmp_placed(const void *a, const void *b, void *ctx)
{
    const inference *in = ctx;
    int x = *(const int *)a, y = *(const int *)b;
    int fx = in->fabric_min[ts_uf_find(in->fabric, x)], fy = in->fabric_min[ts_uf_find(in->fabric, y)];
    if (fx != fy)
        return fx < fy ? -1 : 1;
    int lx = in->leaf_min[ts_uf_find(in->leaf, x)], ly = in->leaf_min[ts_uf_find(in->leaf, y)];
    if (lx != ly)
        return lx < ly ? -1 : 1;
    return in->rank[x] < in->rank[y] ? -1 : in->rank[x] > in->rank[y];
}

/* The output order, whatever the order of the records: fabrics by their first node in natural
 * name order, within a fabric leaves likewise, within a leaf the nodes. */
static void place_nodes(inference *in)
{
    for (int i = 0; i < in->nn; i++)
        in->order[i] = i;
    qsort_r(in->order, (size_t)in->nn, sizeof *in->order, cmp_node_name, in->ns);
    for (int i = 0; i < in->nn; i++) {
        in->rank[in->order[i]] = i;
        in->leaf_min[i] = in->fabric_min[i] = in->nn;
    }
    for (int i = 0; i < in->nn; i++) {
        int l = ts_uf_find(in->leaf, i), f = ts_uf_find(in->fabric, i);
        if (in->rank[i] < in->leaf_min[l])
            in->leaf_min[l] = in->rank[i];
        if (in->rank[i] < in->fabric_min[f])
            in->fabric_min[f] = in->rank[i];
    }
    qsort_r(in->order, (size_t)in->nn, sizeof *in->order, cmp_placed, in);
}

/* A switch named base+number, or with "-sw" after it while a node holds that name. */
static int add_switch(ts_fabric *out, const inference *in, const char *base, int number, ts_error *err)
{
    char name[64];
    if (number > 0)
        snprintf(name, sizeof name, "%s%d", base, number);
    else
        snprintf(name, sizeof name, "%s", base);
    while (ts_strpool_find(in->ns, name) >= 0 && strlen(name) + 3 < sizeof name)
        strcat(name, "-sw");
    return ts_fabric_add_vertex(out, name, TS_SWITCH, err);
}

static int add_under(ts_fabric *out, int parent, int v, ts_error *err)
{
    return v < 0 ? v : ts_fabric_attach(out, parent, v, err);
}

/* One top switch per fabric ("top" when there is one, else top1, top2, ... below an implicit
 * root, as topology.conf's parser makes it for parentless switches), leaf1, leaf2, ... below. */
static int build_tree(const inference *in, ts_fabric *out, ts_error *err)
{
    int nfabrics = 0;
    for (int i = 0; i < in->nn; i++)
        nfabrics += ts_uf_find(in->fabric, i) == i;
    int root = TS_NONE, top = TS_NONE, leaf = TS_NONE, ntops = 0, nleaves = 0, rc = TS_OK;
    if (nfabrics > 1) {
        if ((root = add_switch(out, in, "root", 0, err)) < 0)
            return root;
        out->v[root].implicit = 1;
    }
    for (int i = 0; i < in->nn && rc == TS_OK; i++) {
        int x = in->order[i];
        int fab = ts_uf_find(in->fabric, x), lf = ts_uf_find(in->leaf, x);
        if (i == 0 || fab != ts_uf_find(in->fabric, in->order[i - 1])) {
            top = add_switch(out, in, "top", nfabrics > 1 ? ++ntops : 0, err);
            rc = root == TS_NONE ? (top < 0 ? top : TS_OK) : add_under(out, root, top, err);
        }
        if (rc == TS_OK && (i == 0 || lf != ts_uf_find(in->leaf, in->order[i - 1]))) {
            leaf = add_switch(out, in, "leaf", ++nleaves, err);
            rc = add_under(out, top, leaf, err);
        }
        if (rc == TS_OK)
            rc = add_under(out, leaf, ts_fabric_add_vertex(out, ts_strpool_str(in->ns, x), TS_NODE, err), err);
    }
    return rc;
}

int ts_report_inferred_tree(const ts_report *r, ts_fabric *out, ts_error *err)
{
    inference in = { .ns = ts_strpool_new() };
    ts_fabric_init(out);
    int rc = in.ns ? intern_nodes(r, &in) : TS_ENOMEM;
    if (rc == TS_OK && in.nn == 0) {
        inference_free(&in);
        return ts_fail(err, TS_EINPUT, "no record holds a measured tree: nothing to infer");
    }
    size_t n = (size_t)in.nn;
    if (rc == TS_OK && (!(in.leaf = malloc(sizeof(int) * n)) || !(in.fabric = malloc(sizeof(int) * n)) ||
                        !(in.rank = malloc(sizeof(int) * n)) || !(in.leaf_min = malloc(sizeof(int) * n)) ||
                        !(in.fabric_min = malloc(sizeof(int) * n)) || !(in.order = malloc(sizeof(int) * n))))
        rc = TS_ENOMEM;
    if (rc == TS_OK) {
        join_groups(r, &in);
        place_nodes(&in);
        rc = build_tree(&in, out, err);
        if (rc == TS_OK)
            rc = ts_fabric_finalize(out, err);
    } else {
        rc = ts_fail(err, TS_ENOMEM, "out of memory");
    }
    if (rc != TS_OK)
        ts_fabric_free(out);
    inference_free(&in);
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
    ts_strpool *rows = ts_strpool_new();   /* a listed node's number is its row */
    if (!count || !rows)
        goto oom;
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
            int fresh, j = ts_strpool_intern_row(rows, hl.hosts[k], out, sizeof **out, &cap, &fresh);
            if (j < 0) {
                ts_hostlist_free(&hl);
                goto oom;
            }
            if (fresh) {
                ts_mismatch *m = &(*out)[(*n)++];
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
    ts_strpool_free(rows);
    if (*n > 1)
        qsort(*out, (size_t)*n, sizeof **out, cmp_mismatch);
    return TS_OK;
oom:
    free(count);
    ts_strpool_free(rows);
    free(*out);
    *out = NULL;
    *n = 0;
    return ts_fail(err, TS_ENOMEM, "out of memory");
}
