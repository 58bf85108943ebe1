/* toposcope — link identity, baselines and anomaly detection (see toposcope/anomaly.h). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "toposcope/anomaly.h"
#include "toposcope/hostlist.h"
#include "toposcope/probe.h"
#include "toposcope/treeyaml.h"
#include "toposcope/linksolve.h"
#include "toposcope/textout.h"
#include "util/strpool.h"
#include "util/ydoc.h"

#define LINKS_YAML_MAX_BYTES (64u << 20)
#define LINKS_YAML_MAX_ENTRIES (1 << 20)
#define SET_KEY_SHORT 200               /* a hostlist longer than this becomes a hashed key */
#define MAX_US 86400e6                  /* a day: beyond any link, keeps sums finite */

static uint64_t name_hash(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
    h ^= h >> 31;
    h *= 0x9e3779b97f4a7c15ULL;
    return h ^ (h >> 29);
}

/* ---- identity ---- */

int *ts_link_admin_counts(const ts_fabric *admin, const ts_fabric *tree)
{
    int *cnt = calloc((size_t)(admin->nvert ? admin->nvert : 1), sizeof(int));
    if (!cnt)
        return NULL;
    for (int i = 0; i < tree->nnodes; i++) {
        int a = ts_fabric_find(admin, tree->v[tree->node_vertex[i]].name);
        if (a == TS_NONE || admin->v[a].kind != TS_NODE)
            continue;
        for (; a != TS_NONE; a = admin->v[a].parent)
            cnt[a]++;
    }
    return cnt;
}

static int cmp_names(const void *a, const void *b)
{
    return ts_hostname_cmp(*(char *const *)a, *(char *const *)b);
}

/* below[i] = 1 for the tree's node indices under v. */
static int mark_below(const ts_fabric *t, int v, unsigned char *below)
{
    int *stack = malloc(sizeof(int) * (size_t)t->nvert);
    if (!stack)
        return -1;
    int sp = 0, m = 0;
    stack[sp++] = v;
    while (sp) {
        int x = stack[--sp];
        if (t->v[x].kind == TS_NODE) {
            below[t->v[x].node_index] = 1;
            m++;
        }
        for (int c = t->v[x].first_child; c != TS_NONE; c = t->v[c].next_sibling)
            stack[sp++] = c;
    }
    free(stack);
    return m;
}

/* The admin vertex holding exactly the m nodes in names (all of the job's nodes below it), or
 * TS_NONE. */
static int admin_vertex_of(const ts_fabric *admin, const int *job_count, char **names, int m)
{
    int l = TS_NONE;
    for (int i = 0; i < m; i++) {
        int a = ts_fabric_find(admin, names[i]);
        if (a == TS_NONE || admin->v[a].kind != TS_NODE)
            return TS_NONE;
        l = l == TS_NONE ? a : ts_fabric_lca(admin, l, a);
    }
    return l != TS_NONE && job_count[l] == m ? l : TS_NONE;
}

static int set_key(char **names, int m, char *out, size_t max)
{
    char *hl = ts_hostlist_compress(names, (size_t)m);
    if (!hl)
        return TS_ENOMEM;
    int n;
    if (strlen(hl) <= SET_KEY_SHORT) {
        n = snprintf(out, max, "{%s}", hl);
    } else {
        uint64_t h = 0;
        for (int i = 0; i < m; i++)
            h += name_hash(names[i]);
        n = snprintf(out, max, "{%d nodes %.60s..%.60s #%016llx}", m, names[0], names[m - 1],
                     (unsigned long long)h);
    }
    free(hl);
    return n >= 0 && (size_t)n < max ? TS_OK : TS_ELIMIT;
}

int ts_link_id(const ts_fabric *tree, int v, const ts_fabric *admin, const int *job_count,
               char *out, size_t max)
{
    if (tree->v[v].kind == TS_NODE) {
        int n = snprintf(out, max, "%s", tree->v[v].name);
        return n >= 0 && (size_t)n < max ? TS_OK : TS_ELIMIT;
    }
    int N = tree->nnodes, rc = TS_ENOMEM;
    unsigned char *below = calloc((size_t)(N ? N : 1), 1);
    char **side = malloc(sizeof(char *) * (size_t)(N ? N : 1));
    char **other = malloc(sizeof(char *) * (size_t)(N ? N : 1));
    if (!below || !side || !other)
        goto done;
    int m = mark_below(tree, v, below);
    if (m < 0)
        goto done;
    /* the smaller side names the link; on a tie the side without the first node name */
    int take_below = 2 * m < N;
    if (2 * m == N) {
        const char *min_below = NULL, *min_other = NULL;
        for (int i = 0; i < N; i++) {
            const char *name = tree->v[tree->node_vertex[i]].name;
            const char **mn = below[i] ? &min_below : &min_other;
            if (!*mn || ts_hostname_cmp(name, *mn) < 0)
                *mn = name;
        }
        take_below = min_other && min_below && ts_hostname_cmp(min_other, min_below) < 0;
    }
    int ns = 0, no = 0;
    for (int i = 0; i < N; i++) {
        char *name = tree->v[tree->node_vertex[i]].name;
        if (!below[i] == !take_below)
            side[ns++] = name;
        else
            other[no++] = name;
    }
    qsort(side, (size_t)ns, sizeof *side, cmp_names);
    if (ns == no)
        qsort(other, (size_t)no, sizeof *other, cmp_names);
    if (admin && job_count) {
        int a = admin_vertex_of(admin, job_count, side, ns);
        if (a == TS_NONE && ns == no)
            a = admin_vertex_of(admin, job_count, other, no);
        if (a != TS_NONE) {
            int n = snprintf(out, max, "%s", admin->v[a].name);
            rc = n >= 0 && (size_t)n < max ? TS_OK : TS_ELIMIT;
            goto done;
        }
    }
    rc = ns ? set_key(side, ns, out, max) : TS_EINPUT;
done:
    free(below);
    free(side);
    free(other);
    return rc;
}

/* ---- matching ids to the admin's tree ---- */

struct ts_link_matcher {
    const ts_fabric *admin;
    int *count;                      /* per admin vertex: the job's nodes below it */
    uint64_t *hash;                  /* and the sum of their name_hash */
    int *touched, ntouched;          /* the vertices with a count, to clear for the next job */
    int njob;
    uint64_t hjob;
    int *slot;                       /* (count, hash) -> the deepest switch, open addressing */
    int slot_cap;
    int *used, nused;                /* the slots taken, to clear for the next job */
};

static size_t set_slot(uint64_t h, int count, int cap)
{
    return (size_t)((h ^ ((uint64_t)count * 0x9e3779b97f4a7c15ULL)) & (uint64_t)(cap - 1));
}

static int set_lookup(const ts_link_matcher *m, int count, uint64_t h)
{
    if (count <= 0)
        return TS_NONE;
    for (size_t i = set_slot(h, count, m->slot_cap);; i = (i + 1) & (size_t)(m->slot_cap - 1)) {
        int v = m->slot[i];
        if (v == TS_NONE || (m->count[v] == count && m->hash[v] == h))
            return v;
    }
}

void ts_link_matcher_free(ts_link_matcher *m)
{
    if (!m)
        return;
    free(m->count);
    free(m->hash);
    free(m->touched);
    free(m->slot);
    free(m->used);
    free(m);
}

int ts_link_matcher_new(const ts_fabric *admin, ts_link_matcher **out, ts_error *err)
{
    ts_link_matcher *m = calloc(1, sizeof *m);
    size_t nv = (size_t)(admin->nvert ? admin->nvert : 1);
    *out = NULL;
    if (m) {
        m->admin = admin;
        m->slot_cap = 16;
        while ((size_t)m->slot_cap < 2 * nv)
            m->slot_cap *= 2;
    }
    if (!m || !(m->count = calloc(nv, sizeof *m->count)) || !(m->hash = calloc(nv, sizeof *m->hash)) ||
        !(m->touched = malloc(nv * sizeof *m->touched)) || !(m->used = malloc(nv * sizeof *m->used)) ||
        !(m->slot = malloc((size_t)m->slot_cap * sizeof *m->slot))) {
        ts_link_matcher_free(m);
        return ts_fail(err, TS_ENOMEM, "out of memory");
    }
    for (int i = 0; i < m->slot_cap; i++)
        m->slot[i] = TS_NONE;
    *out = m;
    return TS_OK;
}

/* One measured node of the job into every admin vertex above it. */
static void matcher_add(ts_link_matcher *m, const char *name)
{
    uint64_t h = name_hash(name);
    m->njob++;
    m->hjob += h;
    int a = ts_fabric_find(m->admin, name);
    if (a == TS_NONE || m->admin->v[a].kind != TS_NODE)
        return;
    for (; a != TS_NONE; a = m->admin->v[a].parent) {
        if (m->count[a]++ == 0)
            m->touched[m->ntouched++] = a;
        m->hash[a] += h;
    }
}

/* The switches holding some of the job's nodes into the slots by (count, hash). */
static void matcher_index(ts_link_matcher *m)
{
    const ts_fabric *admin = m->admin;
    for (int k = 0; k < m->ntouched; k++) {
        int v = m->touched[k];
        if (admin->v[v].kind != TS_SWITCH)
            continue;
        size_t i = set_slot(m->hash[v], m->count[v], m->slot_cap);
        for (; m->slot[i] != TS_NONE; i = (i + 1) & (size_t)(m->slot_cap - 1)) {
            int w = m->slot[i];
            if (m->count[w] == m->count[v] && m->hash[w] == m->hash[v])
                break;
        }
        if (m->slot[i] == TS_NONE)
            m->used[m->nused++] = (int)i;
        /* a chain of switches over the same job nodes: the deepest names the link */
        if (m->slot[i] == TS_NONE || admin->v[v].depth > admin->v[m->slot[i]].depth)
            m->slot[i] = v;
    }
}

int ts_link_matcher_set_job(ts_link_matcher *m, char *const *groups, int n, ts_error *err)
{
    for (int k = 0; k < m->ntouched; k++) {
        m->count[m->touched[k]] = 0;
        m->hash[m->touched[k]] = 0;
    }
    for (int k = 0; k < m->nused; k++)
        m->slot[m->used[k]] = TS_NONE;
    m->ntouched = m->nused = m->njob = 0;
    m->hjob = 0;
    for (int g = 0; g < n; g++) {
        ts_hostlist hl;
        int rc = ts_hostlist_expand(groups[g], strlen(groups[g]), &hl, err);
        if (rc != TS_OK) {
            matcher_index(m);
            return rc;
        }
        for (size_t i = 0; i < hl.count; i++)
            matcher_add(m, hl.hosts[i]);
        ts_hostlist_free(&hl);
    }
    matcher_index(m);
    return TS_OK;
}

/* "{N nodes A..B #H}" (set_key's long form): N and H. */
static int parse_hashed(const char *id, int *count, uint64_t *h)
{
    size_t L = strlen(id);
    const char *hash = L > 19 ? id + L - 19 : NULL;      /* " #" 16 hex digits "}" */
    char *end;
    if (!hash || id[0] != '{' || id[L - 1] != '}' || hash[0] != ' ' || hash[1] != '#')
        return -1;
    long n = strtol(id + 1, &end, 10);
    if (end == id + 1 || strncmp(end, " nodes ", 7) || n <= 0 || n > TS_HOSTLIST_MAX_HOSTS)
        return -1;
    unsigned long long x = strtoull(hash + 2, &end, 16);
    if (end != id + L - 1)
        return -1;
    *count = (int)n;
    *h = (uint64_t)x;
    return 0;
}

ts_link_match ts_link_match_id(const ts_link_matcher *m, const char *id)
{
    ts_link_match none = { TS_MATCH_NONE, TS_NONE };
    const ts_fabric *admin = m->admin;
    size_t L = strlen(id);
    if (id[0] != '{' || L < 2 || id[L - 1] != '}') {
        int v = ts_fabric_find(admin, id);
        return v != TS_NONE && v != admin->root ? (ts_link_match){ TS_MATCH_EXACT, v } : none;
    }
    int count;
    uint64_t h;
    if (parse_hashed(id, &count, &h) == 0) {
        int v = set_lookup(m, count, h);
        if (v == TS_NONE)
            v = set_lookup(m, m->njob - count, m->hjob - h);
        return v != TS_NONE ? (ts_link_match){ TS_MATCH_EXACT, v } : none;
    }
    ts_hostlist hl;
    if (ts_hostlist_expand(id + 1, L - 2, &hl, NULL) != TS_OK)
        return none;
    int lca = TS_NONE;
    h = 0;
    for (size_t i = 0; i < hl.count; i++) {
        int a = ts_fabric_find(admin, hl.hosts[i]);
        h += name_hash(hl.hosts[i]);
        if (a == TS_NONE || admin->v[a].kind != TS_NODE) {
            lca = TS_NONE;
            break;
        }
        lca = lca == TS_NONE ? a : ts_fabric_lca(admin, lca, a);
    }
    count = (int)hl.count;
    ts_hostlist_free(&hl);
    int v = set_lookup(m, count, h);
    if (v == TS_NONE)
        v = set_lookup(m, m->njob - count, m->hjob - h);
    if (v != TS_NONE)
        return (ts_link_match){ TS_MATCH_EXACT, v };
    if (lca != TS_NONE && admin->v[lca].kind == TS_NODE)
        lca = admin->v[lca].parent;
    if (lca == TS_NONE || lca == admin->root)
        return none;
    return (ts_link_match){ TS_MATCH_WITHIN, lca };
}

void ts_link_match_describe(const ts_fabric *admin, ts_link_match mt, char *out, size_t max)
{
    if (mt.kind == TS_MATCH_EXACT)
        snprintf(out, max, "%s", admin->v[mt.vertex].name);
    else if (mt.kind == TS_MATCH_WITHIN)
        snprintf(out, max, "within %s", admin->v[mt.vertex].name);
    else
        snprintf(out, max, "matches no switch of topology.conf");
}

/* ---- observations ---- */

void ts_link_obs_set_free(ts_link_obs_set *s)
{
    if (!s)
        return;
    free(s->o);
    s->o = NULL;
    s->n = 0;
}

double ts_link_obs_interval_se(double lo_us, double hi_us, double conf)
{
    double z = ts_normal_quantile(0.5 * (1.0 + (conf > 0 && conf < 1 ? conf : 0.90)));
    return isfinite(hi_us - lo_us) ? (hi_us - lo_us) / (2 * z) : NAN;
}

/* A switch discovery left unresolved may stand for several: a link at it, below or above, may
 * span switches the tree does not show. It is measured as it is, but it is not the link of that
 * name in a resolved tree. */
static int extent_uncertain(const ts_fabric *tree, int v)
{
    int p = tree->v[v].parent;
    return tree->v[v].unresolved || (p != TS_NONE && tree->v[p].unresolved);
}

int ts_link_obs_from_result(const ts_fabric *tree, const ts_link_result *res, const ts_fabric *admin,
                            ts_link_obs_set *out, ts_error *err)
{
    memset(out, 0, sizeof *out);
    int *jc = NULL;
    if (admin && !(jc = ts_link_admin_counts(admin, tree)))
        return ts_fail(err, TS_ENOMEM, "out of memory");
    out->o = calloc((size_t)(res->nlinks ? res->nlinks : 1), sizeof *out->o);
    if (!out->o) {
        free(jc);
        return ts_fail(err, TS_ENOMEM, "out of memory");
    }
    for (int k = 0; k < res->nlinks; k++) {
        const ts_link_estimate *L = &res->link[k];
        if (!isfinite(L->est_us))
            continue;
        ts_link_obs *o = &out->o[out->n];
        int rc = ts_link_id(tree, res->members[L->first], admin, jc, o->id, sizeof o->id);
        if (rc != TS_OK) {
            free(jc);
            ts_link_obs_set_free(out);
            return ts_fail(err, rc, "cannot name link %d", k);
        }
        o->access = L->access;
        o->uncertain = extent_uncertain(tree, res->members[L->first]);
        o->est_us = L->est_us;
        o->lo_us = L->lo_us;
        o->hi_us = L->hi_us;
        o->se_us = isfinite(L->se_us) ? L->se_us : ts_link_obs_interval_se(L->lo_us, L->hi_us, res->confidence);
        o->samples = L->samples;
        o->pairs = L->npairs;
        out->n++;
    }
    free(jc);
    return TS_OK;
}

static const char *const links_top_keys[] = { "confidence", "partial", "rounds_planned", "rounds_run",
                                              "measurements", "undetermined", "error_scale", "links",
                                              NULL };
static const char *const links_entry_keys[] = { "link", "tree_link", "kind", "est_us", "lo_us", "hi_us",
                                                "se_us", "samples", "pairs", "residual_us", "truth_us",
                                                "rel_err", NULL };
static const char *const link_kinds[] = { "uplink", "access", NULL };

static int opt_num(const ts_ydoc *d, int map, const char *key, double lo, double hi, double *out,
                   ts_error *err)
{
    int at = ts_ydoc_get(d, map, key);
    *out = NAN;
    if (at < 0 || ts_ydoc_is_null(&d->v[at]))
        return TS_OK;
    return ts_ydoc_num(d, at, key, lo, hi, out, err);
}

/* The bottom vertex an entry names: a name, or the first of a list. */
static int entry_vertex(const ts_ydoc *d, int at, const char *key, const ts_fabric *tree, ts_error *err)
{
    if (d->v[at].type == TS_Y_SEQ) {
        if (d->v[at].n < 1)
            return ts_ydoc_fail(d, at, err, "'%s' must name at least one link", key);
        at = d->v[at].first;
    }
    char name[TS_HOSTNAME_MAX + 1];
    int rc = ts_ydoc_name(d, at, key, name, sizeof name, err);
    if (rc)
        return rc;
    int v = ts_fabric_find(tree, name);
    if (v == TS_NONE || v == tree->root)
        return ts_ydoc_fail(d, at, err, "link '%s' is not a link of the tree (tree.yaml and links.yaml "
                            "must come from the same run)", name);
    return v;
}

int ts_link_obs_parse_links_yaml(const ts_fabric *tree, const char *text, size_t len,
                                 const char *source, const ts_fabric *admin, ts_link_obs_set *out,
                                 ts_error *err)
{
    memset(out, 0, sizeof *out);
    ts_ydoc d;
    ts_ylimits lim = { LINKS_YAML_MAX_BYTES, 6, 24 * LINKS_YAML_MAX_ENTRIES + 64 };
    int rc = ts_ydoc_parse(&d, text, len, source, &lim, err);
    int *jc = NULL;
    if (rc)
        goto done;
    if (d.root < 0 || d.v[d.root].type != TS_Y_MAP) {
        rc = d.root < 0 ? ts_fail(err, TS_EINPUT, "%s: empty, expected a links.yaml mapping", source)
                        : ts_ydoc_fail(&d, d.root, err, "expected a mapping with 'links'");
        goto done;
    }
    if ((rc = ts_ydoc_check_keys(&d, d.root, links_top_keys, "the top level", err)))
        goto done;
    double conf = 0.90;
    if ((rc = opt_num(&d, d.root, "confidence", 0.01, 0.9999, &conf, err)))
        goto done;
    if (!isfinite(conf))
        conf = 0.90;
    int list = ts_ydoc_get(&d, d.root, "links");
    if (list < 0 || d.v[list].type != TS_Y_SEQ) {
        rc = ts_ydoc_fail(&d, list < 0 ? d.root : list, err, "'links' must be a list");
        goto done;
    }
    if (admin && !(jc = ts_link_admin_counts(admin, tree))) {
        rc = ts_fail(err, TS_ENOMEM, "out of memory");
        goto done;
    }
    out->o = calloc((size_t)(d.v[list].n ? d.v[list].n : 1), sizeof *out->o);
    if (!out->o) {
        rc = ts_fail(err, TS_ENOMEM, "out of memory");
        goto done;
    }
    for (int e = d.v[list].first; e >= 0; e = d.v[e].next) {
        if (d.v[e].type != TS_Y_MAP) {
            rc = ts_ydoc_fail(&d, e, err, "a link entry must be a mapping");
            goto done;
        }
        if ((rc = ts_ydoc_check_keys(&d, e, links_entry_keys, "a link entry", err)))
            goto done;
        int name_at = ts_ydoc_get(&d, e, "tree_link");
        const char *key = "tree_link";
        if (name_at < 0) {
            name_at = ts_ydoc_get(&d, e, "link");
            key = "link";
        }
        int kind_at = ts_ydoc_get(&d, e, "kind");
        if (name_at < 0 || kind_at < 0) {
            rc = ts_ydoc_fail(&d, e, err, "a link entry needs 'link' and 'kind'");
            goto done;
        }
        int v = entry_vertex(&d, name_at, key, tree, err);
        if (v < 0) {
            rc = v;
            goto done;
        }
        int kind;
        if ((rc = ts_ydoc_choice(&d, kind_at, "kind", link_kinds, &kind, err)))
            goto done;
        ts_link_obs *o = &out->o[out->n];
        double samples = NAN, pairs = NAN;
        if ((rc = opt_num(&d, e, "est_us", -MAX_US, MAX_US, &o->est_us, err)) ||
            (rc = opt_num(&d, e, "lo_us", -MAX_US, MAX_US, &o->lo_us, err)) ||
            (rc = opt_num(&d, e, "hi_us", -MAX_US, MAX_US, &o->hi_us, err)) ||
            (rc = opt_num(&d, e, "se_us", 0, MAX_US, &o->se_us, err)) ||
            (rc = opt_num(&d, e, "samples", 0, 1e15, &samples, err)) ||
            (rc = opt_num(&d, e, "pairs", 0, 1e9, &pairs, err)))
            goto done;
        if (!isfinite(o->est_us))
            continue;                    /* undetermined: nothing to compare */
        if ((rc = ts_link_id(tree, v, admin, jc, o->id, sizeof o->id)) != TS_OK) {
            rc = ts_ydoc_fail(&d, name_at, err, "cannot name this link");
            goto done;
        }
        o->access = kind == 1;
        o->uncertain = extent_uncertain(tree, v);
        if (!isfinite(o->se_us))
            o->se_us = ts_link_obs_interval_se(o->lo_us, o->hi_us, conf);
        o->samples = isfinite(samples) ? (long)samples : 0;
        o->pairs = isfinite(pairs) ? (int)pairs : 0;
        out->n++;
    }
done:
    free(jc);
    ts_ydoc_free(&d);
    if (rc)
        ts_link_obs_set_free(out);
    return rc;
}

int ts_link_obs_load_run(const char *tree_yaml, const char *links_yaml, const ts_fabric *admin,
                         ts_link_obs_set *out, ts_error *err)
{
    ts_fabric tree;
    memset(out, 0, sizeof *out);
    int rc = ts_fabric_load_tree_yaml(&tree, tree_yaml, err);
    if (rc)
        return rc;
    char *buf = NULL;
    size_t len = 0;
    rc = ts_ydoc_read_file(links_yaml, LINKS_YAML_MAX_BYTES, &buf, &len, err);
    if (!rc)
        rc = ts_link_obs_parse_links_yaml(&tree, buf, len, links_yaml, admin, out, err);
    free(buf);
    ts_fabric_free(&tree);
    return rc;
}

/* ---- baseline ---- */

void ts_baseline_init(ts_baseline *b)
{
    memset(b, 0, sizeof *b);
}

void ts_baseline_free(ts_baseline *b)
{
    if (!b)
        return;
    free(b->l);
    free(b->slot);
    memset(b, 0, sizeof *b);
}

/* An empty index with room for n ids. */
static int baseline_index_alloc(ts_baseline *b, int n)
{
    int cap = 16;
    while (cap < 2 * n)
        cap *= 2;
    free(b->slot);
    b->slot = malloc(sizeof(int) * (size_t)cap);
    if (!b->slot)
        return TS_ENOMEM;
    b->slot_cap = cap;
    for (int i = 0; i < cap; i++)
        b->slot[i] = -1;
    return TS_OK;
}

/* Index entry i; TS_EINPUT when its id is already there. */
static int baseline_index_add(ts_baseline *b, int i)
{
    size_t s = name_hash(b->l[i].id) & (size_t)(b->slot_cap - 1);
    while (b->slot[s] >= 0) {
        if (!strcmp(b->l[b->slot[s]].id, b->l[i].id))
            return TS_EINPUT;
        s = (s + 1) & (size_t)(b->slot_cap - 1);
    }
    b->slot[s] = i;
    return TS_OK;
}

const ts_baseline_link *ts_baseline_find(const ts_baseline *b, const char *id)
{
    if (!b || !b->slot_cap)
        return NULL;
    size_t s = name_hash(id) & (size_t)(b->slot_cap - 1);
    while (b->slot[s] >= 0) {
        if (!strcmp(b->l[b->slot[s]].id, id))
            return &b->l[b->slot[s]];
        s = (s + 1) & (size_t)(b->slot_cap - 1);
    }
    return NULL;
}

/* One link id's estimates, numbered as in the builder's id pool. */
typedef struct bb_entry {
    int access;
    int n, cap;
    double *est, *se;
} bb_entry;

struct ts_baseline_builder {
    ts_strpool *ids;
    int cap;
    bb_entry *e;
};

ts_baseline_builder *ts_baseline_builder_new(void)
{
    ts_baseline_builder *bb = calloc(1, sizeof(ts_baseline_builder));
    if (bb && !(bb->ids = ts_strpool_new())) {
        free(bb);
        return NULL;
    }
    return bb;
}

void ts_baseline_builder_free(ts_baseline_builder *bb)
{
    if (!bb)
        return;
    for (int i = 0; i < ts_strpool_count(bb->ids) && i < bb->cap; i++) {
        free(bb->e[i].est);
        free(bb->e[i].se);
    }
    free(bb->e);
    ts_strpool_free(bb->ids);
    free(bb);
}

int ts_baseline_builder_add(ts_baseline_builder *bb, const char *id, int access, double est_us,
                            double se_us)
{
    if (!isfinite(est_us) || strlen(id) >= TS_LINK_ID_MAX)
        return TS_OK;
    if (ts_strpool_count(bb->ids) >= TS_BASELINE_MAX_LINKS && ts_strpool_find(bb->ids, id) < 0)
        return TS_ELIMIT;
    int fresh, k = ts_strpool_intern_row(bb->ids, id, &bb->e, sizeof *bb->e, &bb->cap, &fresh);
    if (k < 0)
        return TS_ENOMEM;
    bb_entry *x = &bb->e[k];
    if (fresh)
        x->access = access;
    if (x->n == x->cap) {
        int cap = x->cap ? 2 * x->cap : 8;
        double *est = realloc(x->est, sizeof(double) * (size_t)cap);
        if (!est)
            return TS_ENOMEM;
        x->est = est;
        double *se = realloc(x->se, sizeof(double) * (size_t)cap);
        if (!se)
            return TS_ENOMEM;
        x->se = se;
        x->cap = cap;
    }
    x->est[x->n] = est_us;
    x->se[x->n] = se_us;
    x->n++;
    return TS_OK;
}

int ts_baseline_builder_learn(ts_baseline_builder *bb, const ts_link_obs *o)
{
    if (o->uncertain)
        return TS_OK;           /* its extent is not the link's: not what the link is like */
    return ts_baseline_builder_add(bb, o->id, o->access, o->est_us, o->se_us);
}

int ts_baseline_builder_add_set(ts_baseline_builder *bb, const ts_link_obs_set *s)
{
    for (int i = 0; i < s->n; i++) {
        int rc = ts_baseline_builder_learn(bb, &s->o[i]);
        if (rc)
            return rc;
    }
    return TS_OK;
}

static int cmp_baseline_link(const void *a, const void *b)
{
    return strcmp(((const ts_baseline_link *)a)->id, ((const ts_baseline_link *)b)->id);
}

int ts_baseline_builder_finish(ts_baseline_builder *bb, ts_baseline *b, ts_error *err)
{
    ts_baseline_init(b);
    int nids = ts_strpool_count(bb->ids);
    b->l = calloc((size_t)(nids ? nids : 1), sizeof *b->l);
    double *tmp = NULL;
    int maxn = 1;
    for (int i = 0; i < nids; i++)
        maxn = bb->e[i].n > maxn ? bb->e[i].n : maxn;
    tmp = malloc(sizeof(double) * (size_t)maxn);
    if (!b->l || !tmp) {
        free(tmp);
        ts_baseline_free(b);
        return ts_fail(err, TS_ENOMEM, "out of memory");
    }
    b->cap = nids ? nids : 1;
    for (int i = 0; i < nids; i++) {
        const bb_entry *x = &bb->e[i];
        ts_baseline_link *l = &b->l[b->n++];
        snprintf(l->id, sizeof l->id, "%s", ts_strpool_str(bb->ids, i));
        l->access = x->access;
        l->count = x->n;
        memcpy(tmp, x->est, sizeof(double) * (size_t)x->n);
        l->median_us = ts_median(tmp, x->n);
        for (int k = 0; k < x->n; k++)
            tmp[k] = fabs(x->est[k] - l->median_us);
        l->mad_us = ts_median(tmp, x->n);
        int ns = 0;
        for (int k = 0; k < x->n; k++)
            if (isfinite(x->se[k]))
                tmp[ns++] = x->se[k];
        l->se_us = ns ? ts_median(tmp, ns) : 0;
    }
    free(tmp);
    qsort(b->l, (size_t)b->n, sizeof *b->l, cmp_baseline_link);
    if (baseline_index_alloc(b, b->n)) {
        ts_baseline_free(b);
        return ts_fail(err, TS_ENOMEM, "out of memory");
    }
    for (int i = 0; i < b->n; i++)
        baseline_index_add(b, i);      /* the builder's ids are distinct */
    return TS_OK;
}

int ts_baseline_write(const ts_baseline *b, FILE *out)
{
    fprintf(out, "# toposcope baseline: per link the median of earlier one-way estimates (us), their\n"
                 "# median absolute deviation, the median of their standard errors and their count\n");
    fprintf(out, "toposcope_baseline: %d\n", TS_BASELINE_VERSION);
    fprintf(out, "links:%s\n", b->n ? "" : " []");
    for (int i = 0; i < b->n; i++) {
        const ts_baseline_link *l = &b->l[i];
        fprintf(out, "  - {link: ");
        ts_emit_yaml_string(out, l->id);
        fprintf(out, ", kind: %s, median_us: %.4f, mad_us: %.4f, se_us: %.4f, count: %d}\n",
                l->access ? "access" : "uplink", l->median_us, l->mad_us, l->se_us, l->count);
    }
    return ferror(out) ? TS_ESYS : TS_OK;
}

static const char *const baseline_top_keys[] = { "toposcope_baseline", "links", NULL };
static const char *const baseline_entry_keys[] = { "link", "kind", "median_us", "mad_us", "se_us",
                                                   "count", NULL };

int ts_baseline_parse(ts_baseline *b, const char *text, size_t len, const char *source, ts_error *err)
{
    ts_baseline_init(b);
    ts_ydoc d;
    ts_ylimits lim = { TS_BASELINE_MAX_BYTES, 6, 16 * TS_BASELINE_MAX_LINKS + 64 };
    int rc = ts_ydoc_parse(&d, text, len, source, &lim, err);
    if (rc)
        goto done;
    if (d.root < 0 || d.v[d.root].type != TS_Y_MAP) {
        rc = d.root < 0 ? ts_fail(err, TS_EINPUT, "%s: empty, expected a toposcope baseline", source)
                        : ts_ydoc_fail(&d, d.root, err, "expected a mapping with 'toposcope_baseline' "
                                       "and 'links'");
        goto done;
    }
    if ((rc = ts_ydoc_check_keys(&d, d.root, baseline_top_keys, "the top level", err)))
        goto done;
    int ver_at = ts_ydoc_get(&d, d.root, "toposcope_baseline"), list = ts_ydoc_get(&d, d.root, "links");
    long ver;
    if (ver_at < 0) {
        rc = ts_ydoc_fail(&d, d.root, err, "not a toposcope baseline: 'toposcope_baseline: %d' missing "
                          "(write one with toposcope report --update-baseline)", TS_BASELINE_VERSION);
        goto done;
    }
    if ((rc = ts_ydoc_int(&d, ver_at, "toposcope_baseline", TS_BASELINE_VERSION, TS_BASELINE_VERSION,
                          &ver, err)))
        goto done;
    if (list < 0 || d.v[list].type != TS_Y_SEQ) {
        rc = ts_ydoc_fail(&d, list < 0 ? d.root : list, err, "'links' must be a list");
        goto done;
    }
    b->l = calloc((size_t)(d.v[list].n ? d.v[list].n : 1), sizeof *b->l);
    if (!b->l) {
        rc = ts_fail(err, TS_ENOMEM, "out of memory");
        goto done;
    }
    b->cap = d.v[list].n ? d.v[list].n : 1;
    if (baseline_index_alloc(b, b->cap)) {
        rc = ts_fail(err, TS_ENOMEM, "out of memory");
        goto done;
    }
    for (int e = d.v[list].first; e >= 0; e = d.v[e].next) {
        if (d.v[e].type != TS_Y_MAP) {
            rc = ts_ydoc_fail(&d, e, err, "a baseline entry must be a mapping");
            goto done;
        }
        if ((rc = ts_ydoc_check_keys(&d, e, baseline_entry_keys, "a baseline entry", err)))
            goto done;
        ts_baseline_link *l = &b->l[b->n];
        int at[6];
        for (int k = 0; k < 6; k++) {
            at[k] = ts_ydoc_get(&d, e, baseline_entry_keys[k]);
            if (at[k] < 0) {
                rc = ts_ydoc_fail(&d, e, err, "a baseline entry needs '%s'", baseline_entry_keys[k]);
                goto done;
            }
        }
        int kind;
        long count;
        if ((rc = ts_ydoc_name(&d, at[0], "link", l->id, sizeof l->id, err)) ||
            (rc = ts_ydoc_choice(&d, at[1], "kind", link_kinds, &kind, err)) ||
            (rc = ts_ydoc_num(&d, at[2], "median_us", 0, MAX_US, &l->median_us, err)) ||
            (rc = ts_ydoc_num(&d, at[3], "mad_us", 0, MAX_US, &l->mad_us, err)) ||
            (rc = ts_ydoc_num(&d, at[4], "se_us", 0, MAX_US, &l->se_us, err)) ||
            (rc = ts_ydoc_int(&d, at[5], "count", 1, 1000000000, &count, err)))
            goto done;
        l->access = kind == 1;
        l->count = (int)count;
        if (baseline_index_add(b, b->n) != TS_OK) {
            rc = ts_ydoc_fail(&d, at[0], err, "link '%s' is listed twice", l->id);
            goto done;
        }
        b->n++;
    }
done:
    ts_ydoc_free(&d);
    if (rc)
        ts_baseline_free(b);
    return rc;
}

int ts_baseline_load(ts_baseline *b, const char *path, ts_error *err)
{
    char *buf = NULL;
    size_t len = 0;
    ts_baseline_init(b);
    int rc = ts_ydoc_read_file(path, TS_BASELINE_MAX_BYTES, &buf, &len, err);
    if (!rc)
        rc = ts_baseline_parse(b, buf, len, path, err);
    free(buf);
    return rc;
}

/* ---- detection ---- */

void ts_detect_options_default(ts_detect_options *o)
{
    /* no floor by default: significance against the baseline's own spread decides, so what a
     * profile's noise allows is flagged and nothing a fixed number would hide (bench/anomaly.sh) */
    o->threshold_pct = 0;
    o->threshold_us = 0;
    o->z = TS_ANOMALY_Z_DEFAULT;
    o->loss_pct = TS_ANOMALY_LOSS_PCT_DEFAULT;
}

void ts_anomaly_list_free(ts_anomaly_list *l)
{
    if (!l)
        return;
    free(l->a);
    memset(l, 0, sizeof *l);
}

static ts_anomaly *anomaly_new(ts_anomaly_list *l)
{
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 16;
        ts_anomaly *a = realloc(l->a, sizeof *a * (size_t)cap);
        if (!a)
            return NULL;
        l->a = a;
        l->cap = cap;
    }
    ts_anomaly *a = &l->a[l->n++];
    memset(a, 0, sizeof *a);
    return a;
}

/* How much more earlier estimates scatter from run to run than their own standard errors say,
 * pooled over the baseline's links of one kind (median of 1.4826 MAD / se; at least 1). One
 * link's MAD of a handful of runs is too rough to judge it by (five values put it anywhere
 * between a third and twice the truth), the pooled ratio is not. */
static double pooled_spread_ratio(const ts_baseline *b, int access)
{
    double *r = malloc(sizeof(double) * (size_t)(b->n ? b->n : 1));
    if (!r)
        return 1;
    int n = 0;
    for (int i = 0; i < b->n; i++)
        if (b->l[i].access == access && b->l[i].count >= 3 && b->l[i].se_us > 0)
            r[n++] = 1.4826 * b->l[i].mad_us / b->l[i].se_us;
    double m = n ? ts_median(r, n) : 1;
    free(r);
    return m > 1 ? m : 1;
}

/* Below this many earlier estimates a link's own MAD does not widen its spread beyond the
 * pooled one; from here on a link that is unsteady by itself is judged by its own scatter. */
#define OWN_SPREAD_MIN_COUNT 10

/* The standard deviation of (this estimate - the baseline median): one run's spread (the
 * baseline's typical standard error times the pooled ratio, or the link's own scatter once it
 * has enough history, never below this estimate's own standard error), plus the median's
 * uncertainty (pi/2 * s^2 / n for a median of n values). */
static double difference_sd(double se_obs, const ts_baseline_link *b, double ratio)
{
    double s_b = b->se_us * ratio;
    if (b->count >= OWN_SPREAD_MIN_COUNT || !(s_b > 0))
        s_b = fmax(s_b, 1.4826 * b->mad_us);
    double s_obs = isfinite(se_obs) ? fmax(se_obs, s_b) : s_b;
    return sqrt(s_obs * s_obs + (M_PI / 2) * s_b * s_b / (b->count > 0 ? b->count : 1));
}

/* The loss a lossy link's score ranks it by: the one-sided 95% lower bound (Wilson) of the share
 * of its probes lost, `lost` of `sent`. A link above a lossy one whose every pair crosses it
 * (a node's access link under a lossy leaf uplink) loses as large a share of fewer probes: by
 * its rate alone it ranked above the link at fault as often as not; by what its probes show
 * for certain, the link with the more evidence, the shared one, comes first. */
static double loss_lower_bound(double lost, double sent)
{
    if (!(sent > 0))
        return 0;
    const double z = 1.6449;     /* one-sided 95% */
    double p = fmin(fmax(lost / sent, 0), 1), z2n = z * z / sent;
    double centre = p + z2n / 2, half = z * sqrt(p * (1 - p) / sent + z2n / (4 * sent));
    return fmax(0, (centre - half) / (1 + z2n));
}

int ts_anomaly_detect(const ts_link_obs_set *obs, const ts_baseline *b, const ts_detect_options *o,
                      ts_anomaly_list *out, ts_error *err)
{
    double ratio[2] = { pooled_spread_ratio(b, 0), pooled_spread_ratio(b, 1) };
    double *spp = malloc(sizeof(double) * (size_t)(obs->n ? obs->n : 1));
    if (!spp)
        return ts_fail(err, TS_ENOMEM, "out of memory");
    int nspp = 0;
    for (int i = 0; i < obs->n; i++)
        if (obs->o[i].pairs > 0)
            spp[nspp++] = (double)obs->o[i].samples / obs->o[i].pairs;
    double typical = nspp >= 3 ? ts_median(spp, nspp) : NAN;
    free(spp);
    for (int i = 0; i < obs->n; i++) {
        const ts_link_obs *x = &obs->o[i];
        const ts_baseline_link *bl = ts_baseline_find(b, x->id);
        double loss = x->pairs > 0 && typical > 0 ? 100 * (1 - x->samples / (x->pairs * typical)) : NAN;
        if (loss >= o->loss_pct) {
            ts_anomaly *a = anomaly_new(out);
            if (!a)
                return ts_fail(err, TS_ENOMEM, "out of memory");
            snprintf(a->id, sizeof a->id, "%s", x->id);
            a->access = x->access;
            a->kind = TS_ANOMALY_LOSS;
            a->expected_us = bl ? bl->median_us : NAN;
            a->observed_us = x->est_us;
            a->excess_us = bl ? x->est_us - bl->median_us : NAN;
            a->excess_pct = bl && bl->median_us > 0 ? 100 * a->excess_us / bl->median_us : NAN;
            a->z = NAN;
            a->loss_pct = loss;
            double sent = x->pairs * typical;
            a->score = TS_ANOMALY_SCORE_LOSS + 100 * loss_lower_bound(sent - x->samples, sent);
            continue;
        }
        if (!bl || bl->access != x->access || !isfinite(x->est_us) || x->uncertain)
            continue;
        out->checked++;
        double excess = x->est_us - bl->median_us;
        double pct = bl->median_us > 0 ? 100 * excess / bl->median_us : (excess > 0 ? INFINITY : 0);
        double sd = difference_sd(x->se_us, bl, ratio[bl->access != 0]);
        double z = sd > 0 ? excess / sd : (excess > 0 ? INFINITY : 0);
        if (!(z >= o->z && pct >= o->threshold_pct && excess >= o->threshold_us))
            continue;
        ts_anomaly *a = anomaly_new(out);
        if (!a)
            return ts_fail(err, TS_ENOMEM, "out of memory");
        snprintf(a->id, sizeof a->id, "%s", x->id);
        a->access = x->access;
        a->kind = TS_ANOMALY_SLOW;
        a->expected_us = bl->median_us;
        a->observed_us = x->est_us;
        a->excess_us = excess;
        a->excess_pct = pct;
        a->z = z;
        a->loss_pct = NAN;
        a->score = fmin(z, TS_ANOMALY_SCORE_LOSS - 1);
    }
    return TS_OK;
}

int ts_anomaly_add_unreachable(ts_anomaly_list *l, const char *node, const ts_baseline *b,
                               ts_error *err)
{
    ts_anomaly *a = anomaly_new(l);
    if (!a)
        return ts_fail(err, TS_ENOMEM, "out of memory");
    snprintf(a->id, sizeof a->id, "%s", node);
    a->access = 1;
    a->kind = TS_ANOMALY_UNREACHABLE;
    const ts_baseline_link *bl = ts_baseline_find(b, node);
    a->expected_us = bl ? bl->median_us : NAN;
    a->observed_us = a->excess_us = a->excess_pct = a->z = INFINITY;
    a->loss_pct = 100;
    a->score = TS_ANOMALY_SCORE_UNREACHABLE;
    return TS_OK;
}

static int cmp_anomaly(const void *pa, const void *pb)
{
    const ts_anomaly *a = pa, *b = pb;
    if (a->score != b->score)
        return a->score > b->score ? -1 : 1;
    if (a->excess_pct != b->excess_pct)
        return a->excess_pct > b->excess_pct ? -1 : 1;
    return strcmp(a->id, b->id);
}

void ts_anomaly_sort(ts_anomaly_list *l)
{
    if (l->n > 1)
        qsort(l->a, (size_t)l->n, sizeof *l->a, cmp_anomaly);
}

static void num_or_null(FILE *out, const char *key, double v)
{
    if (isfinite(v))
        fprintf(out, ", %s: %.4f", key, v);
    else
        fprintf(out, ", %s: null", key);
}

int ts_anomalies_write_yaml(const ts_anomaly_list *l, FILE *out)
{
    fprintf(out, "# toposcope anomalies: links slower than their baseline (significant and above the\n"
                 "# policy thresholds), links whose probes were lost and nodes that did not answer, most\n"
                 "# severe first\n");
    fprintf(out, "anomalies:%s\n", l->n ? "" : " []");
    for (int i = 0; i < l->n; i++) {
        const ts_anomaly *a = &l->a[i];
        fprintf(out, "  - {link: ");
        ts_emit_yaml_string(out, a->id);
        fprintf(out, ", kind: %s, reason: %s", a->access ? "access" : "uplink",
                a->kind == TS_ANOMALY_UNREACHABLE ? "unreachable" : a->kind == TS_ANOMALY_LOSS ? "loss" : "slow");
        num_or_null(out, "expected_us", a->expected_us);
        num_or_null(out, "observed_us", a->observed_us);
        num_or_null(out, "excess_pct", a->excess_pct);
        num_or_null(out, "excess_us", a->excess_us);
        if (a->kind == TS_ANOMALY_LOSS)
            num_or_null(out, "loss_pct", a->loss_pct);
        fprintf(out, ", score: %.3f}\n", a->score);
    }
    return ferror(out) ? TS_ESYS : TS_OK;
}
