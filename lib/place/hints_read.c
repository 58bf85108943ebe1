/* toposcope — hints.yaml read back (streaming, bounded), and a member's environment. */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "toposcope/hints_read.h"
#include "toposcope/place.h"
#include "util/ydoc.h"

/* One entry is a few dozen YAML values; these bound what a hostile entry can make us hold. */
#define ENTRY_MAX_NODES (8 + 2 * TS_LEVELS_MAX + 32)
#define ENTRY_MAX_DEPTH 3

enum { K_VERSION, K_POLICY, K_KIND, K_NRANKS, K_NNODES, K_CPUS, K_LEVELS, K_RANKS, K_NODES, K_COUNT };
static const char *const top_keys[] = { "version", "policy", "kind", "nranks", "nnodes",
                                        "cpus_per_rank", "levels", "ranks", "nodes", NULL };
static const char *const level_keys[] = { "name", "depth", "groups", "logp", NULL };
static const char *const logp_keys[] = { "L_us", "o_s_us", "o_r_us", "g_us", "pairs", "source",
                                         "reason", NULL };
static const char *const rank_keys[] = { "rank", "node", "slot", "cpus", "group", "leader", NULL };
static const char *const node_keys[] = { "node", "group", "leader", NULL };
static const char *const kinds[] = { "compact", "spread", "block", "measure-only", NULL };
static const char *const sources[] = { "tree", "model", "none", NULL };

typedef struct reader {
    yaml_parser_t ps;
    yaml_event_t ev;
    int have_ev;
    ts_ydoc d;                           /* the entry being checked */
    ts_hints *h;
    const ts_hints_select *sel;
    ts_error *err;
    const char *src;
    size_t bytes;                        /* read so far from a FILE */
    FILE *in;
    int seen_line[K_COUNT];              /* line of each top-level key, 0 if not seen */
    int members;                         /* entries read, kept or not */
    int found;                           /* the selected member was read: stop */
    int next_group[TS_LEVELS_MAX];       /* per level: the id a new group must get */
    int *outer[TS_LEVELS_MAX];           /* per level > 0: group -> its group one level out */
    int outer_cap[TS_LEVELS_MAX];
    int group[TS_LEVELS_MAX];            /* the entry being checked */
    unsigned char leader[TS_LEVELS_MAX];
} reader;

/* "SRC:LINE:COL: ..." at a mark (r->d names r->src) */
#define fail_mark(r, code, m, ...) ts_ydoc_fail_at(&(r)->d, (code), (m), (r)->err, __VA_ARGS__)

static int next_event(reader *r)
{
    int rc = ts_ydoc_next_event(&r->d, &r->ps, &r->ev, &r->have_ev, r->err);
    /* past the bound the read handler stopped the parser: that is what to say */
    if (rc && r->in && r->bytes > TS_HINTS_MAX_BYTES)
        return ts_fail(r->err, TS_ELIMIT, "%s: larger than %lu bytes", r->src, TS_HINTS_MAX_BYTES);
    return rc;
}

/* The value starting at the current event into the entry tree; its node index or an error. */
static int take_value(reader *r)
{
    ts_ydoc_reset(&r->d);
    return ts_ydoc_add_value(&r->d, &r->ps, &r->ev, ENTRY_MAX_DEPTH, r->err);
}

static int keep_text(reader *r, const char *s, size_t *at)
{
    ts_hints *h = r->h;
    size_t len = strlen(s) + 1;
    if (h->text_len + len > h->text_cap) {
        size_t cap = h->text_cap ? h->text_cap * 2 : 4096;
        while (cap < h->text_len + len)
            cap *= 2;
        char *t = realloc(h->text, cap);
        if (!t)
            return ts_fail(r->err, TS_ENOMEM, "%s: out of memory", r->src);
        h->text = t;
        h->text_cap = cap;
    }
    memcpy(h->text + h->text_len, s, len);
    *at = h->text_len;
    h->text_len += len;
    return TS_OK;
}

/* ---- top-level scalars ---- */

static int read_scalar_key(reader *r, int key, int v)
{
    ts_hints *h = r->h;
    const ts_ydoc *d = &r->d;
    long n;
    int rc, k;
    switch (key) {
    case K_VERSION:
        if ((rc = ts_ydoc_int(d, v, "version", 1, 1000000, &n, r->err)) != TS_OK)
            return rc;
        if (n > TS_HINTS_VERSION)
            return ts_ydoc_fail(d, v, r->err, "hints version %ld: this reader knows versions 1 to "
                                "%d (a newer toposcope wrote the file)", n, TS_HINTS_VERSION);
        h->version = (int)n;
        return TS_OK;
    case K_POLICY:
        return ts_ydoc_name(d, v, "policy", h->policy, sizeof h->policy, r->err);
    case K_KIND:
        if ((rc = ts_ydoc_choice(d, v, "kind", kinds, &k, r->err)) != TS_OK)
            return rc;
        snprintf(h->kind, sizeof h->kind, "%s", kinds[k]);
        return TS_OK;
    case K_NRANKS:
        rc = ts_ydoc_int(d, v, "nranks", 0, TS_PLACE_MAX_RANKS, &n, r->err);
        h->nranks = (int)n;
        return rc;
    case K_NNODES:
        rc = ts_ydoc_int(d, v, "nnodes", 0, TS_PLACE_MAX_RANKS, &n, r->err);
        h->nnodes = (int)n;
        return rc;
    default:
        rc = ts_ydoc_int(d, v, "cpus_per_rank", 1, 4096, &n, r->err);
        h->cpus_per_rank = (int)n;
        return rc;
    }
}

/* ---- levels ---- */

static int read_logp(reader *r, int map, ts_hints_level *lv)
{
    const ts_ydoc *d = &r->d;
    if (d->v[map].type != TS_Y_MAP)
        return ts_ydoc_fail(d, map, r->err, "'logp' must be a mapping {L_us, o_s_us, o_r_us, g_us, "
                            "pairs, source, reason}, not %s", ts_ydoc_type_name(&d->v[map]));
    int rc = ts_ydoc_check_keys(d, map, logp_keys, "'logp'", r->err);
    double *num[4] = { &lv->L_us, &lv->o_s_us, &lv->o_r_us, &lv->g_us };
    for (int k = 0; k < 4 && rc == TS_OK; k++) {
        int v = ts_ydoc_get(d, map, logp_keys[k]);
        if (v >= 0 && !ts_ydoc_is_null(&d->v[v]))
            rc = ts_ydoc_num(d, v, logp_keys[k], 0, 1e9, num[k], r->err);
    }
    int v = ts_ydoc_get(d, map, "pairs");
    long n;
    if (rc == TS_OK && v >= 0) {
        rc = ts_ydoc_int(d, v, "pairs", 0, TS_PLACE_MAX_RANKS, &n, r->err);
        lv->pairs = (int)n;
    }
    v = ts_ydoc_get(d, map, "source");
    int k;
    if (rc == TS_OK && v >= 0 && (rc = ts_ydoc_choice(d, v, "source", sources, &k, r->err)) == TS_OK)
        snprintf(lv->source, sizeof lv->source, "%s", sources[k]);
    v = ts_ydoc_get(d, map, "reason");
    if (rc == TS_OK && v >= 0)
        rc = ts_ydoc_name(d, v, "reason", lv->reason, sizeof lv->reason, r->err);
    return rc;
}

static int read_level(reader *r, int e)
{
    ts_hints *h = r->h;
    const ts_ydoc *d = &r->d;
    if (d->v[e].type != TS_Y_MAP)
        return ts_ydoc_fail(d, e, r->err, "a level must be a mapping {name, depth, groups, logp}, "
                            "not %s", ts_ydoc_type_name(&d->v[e]));
    if (h->nlevels == TS_LEVELS_MAX)
        return ts_ydoc_fail(d, e, r->err, "more than %d levels", TS_LEVELS_MAX);
    int rc = ts_ydoc_check_keys(d, e, level_keys, "a level", r->err);
    if (rc != TS_OK)
        return rc;
    int vname = ts_ydoc_get(d, e, "name"), vdepth = ts_ydoc_get(d, e, "depth");
    int vgroups = ts_ydoc_get(d, e, "groups"), vlogp = ts_ydoc_get(d, e, "logp");
    if (vname < 0 || vgroups < 0)
        return ts_ydoc_fail(d, e, r->err, "a level needs 'name' and 'groups'");
    ts_hints_level *lv = &h->level[h->nlevels];
    memset(lv, 0, sizeof *lv);
    lv->L_us = lv->o_s_us = lv->o_r_us = lv->g_us = NAN;
    if ((rc = ts_ydoc_name(d, vname, "name", lv->name, sizeof lv->name, r->err)) != TS_OK)
        return rc;
    /* the name becomes part of TOPOSCOPE_GROUP_<NAME>: keep it a safe variable name */
    for (const char *c = lv->name; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (c > lv->name && ((*c >= '0' && *c <= '9') || *c == '_'))))
            return ts_ydoc_fail(d, vname, r->err, "level name '%s' must be a lowercase letter "
                                "followed by lowercase letters, digits or '_'", lv->name);
    for (int l = 0; l < h->nlevels; l++)
        if (!strcmp(h->level[l].name, lv->name))
            return ts_ydoc_fail(d, vname, r->err, "level '%s' is listed twice", lv->name);
    long n;
    if (vdepth >= 0) {
        if ((rc = ts_ydoc_int(d, vdepth, "depth", 0, TS_LEVELS_MAX, &n, r->err)) != TS_OK)
            return rc;
        if (n != h->nlevels)
            return ts_ydoc_fail(d, vdepth, r->err, "level '%s' has depth %ld but is level %d of "
                                "the list (outermost first, from 0)", lv->name, n, h->nlevels);
    }
    if ((rc = ts_ydoc_int(d, vgroups, "groups", 1, TS_PLACE_MAX_RANKS, &n, r->err)) != TS_OK)
        return rc;
    lv->groups = (int)n;
    if (vlogp >= 0 && (rc = read_logp(r, vlogp, lv)) != TS_OK)
        return rc;
    h->nlevels++;
    return TS_OK;
}

/* ---- members ---- */

/* A list of one value per level: 'group' (ids below the level's group count) or 'leader'. */
static int read_per_level(reader *r, int v, const char *key, int is_leader)
{
    const ts_ydoc *d = &r->d;
    const ts_hints *h = r->h;
    if (d->v[v].type != TS_Y_SEQ)
        return ts_ydoc_fail(d, v, r->err, "'%s' must be a list with one value per level, not %s",
                            key, ts_ydoc_type_name(&d->v[v]));
    if (d->v[v].n != h->nlevels)
        return ts_ydoc_fail(d, v, r->err, "'%s' has %d values but there are %d levels", key,
                            d->v[v].n, h->nlevels);
    int l = 0, rc = TS_OK;
    long n;
    for (int i = d->v[v].first; i >= 0 && rc == TS_OK; i = d->v[i].next, l++) {
        if (is_leader) {
            rc = ts_ydoc_int(d, i, "leader", 0, 1, &n, r->err);
            r->leader[l] = (unsigned char)n;
        } else {
            char what[TS_LEVEL_NAME_MAX + 16];
            snprintf(what, sizeof what, "group at '%s'", h->level[l].name);
            rc = ts_ydoc_int(d, i, what, 0, h->level[l].groups - 1, &n, r->err);
            r->group[l] = (int)n;
        }
    }
    return rc;
}

static int remember_outer(reader *r, int l, int g, int outer_group)
{
    if (g >= r->outer_cap[l]) {
        int cap = r->outer_cap[l] ? r->outer_cap[l] * 2 : 64;
        while (cap <= g)
            cap *= 2;
        int *o = realloc(r->outer[l], sizeof *o * (size_t)cap);
        if (!o)
            return ts_fail(r->err, TS_ENOMEM, "%s: out of memory", r->src);
        r->outer[l] = o;
        r->outer_cap[l] = cap;
    }
    r->outer[l][g] = outer_group;
    return TS_OK;
}

/* Group ids dense in the order of first members, the first member leads, groups nest. */
static int check_groups(reader *r, int e, const char *who)
{
    const ts_ydoc *d = &r->d;
    const ts_hints *h = r->h;
    for (int l = 0; l < h->nlevels; l++) {
        const char *name = h->level[l].name;
        int g = r->group[l];
        if (g > r->next_group[l])
            return ts_ydoc_fail(d, e, r->err, "%s: group %d at '%s' comes before group %d (ids "
                                "are numbered in the order of their first member)", who, g, name,
                                r->next_group[l]);
        if (g == r->next_group[l]) {
            if (!r->leader[l])
                return ts_ydoc_fail(d, e, r->err, "%s is the first member of group %d at '%s' but "
                                    "not marked as its leader", who, g, name);
            if (l > 0) {
                int rc = remember_outer(r, l, g, r->group[l - 1]);
                if (rc != TS_OK)
                    return rc;
            }
            r->next_group[l]++;
            continue;
        }
        if (r->leader[l])
            return ts_ydoc_fail(d, e, r->err, "%s is marked as leader of group %d at '%s', which "
                                "an earlier member leads", who, g, name);
        if (l > 0 && r->outer[l][g] != r->group[l - 1])
            return ts_ydoc_fail(d, e, r->err, "%s: group %d at '%s' lies in group %d at '%s', "
                                "not in group %d", who, g, name, r->outer[l][g],
                                h->level[l - 1].name, r->group[l - 1]);
    }
    return TS_OK;
}

static int keep_member(reader *r, int index, const char *node, const char *slot, const char *cpus)
{
    ts_hints *h = r->h;
    int m = h->nmembers;
    if ((m & (m - 1)) == 0) {            /* grow at powers of two */
        size_t cap = m ? (size_t)m * 2 : 1, nl = (size_t)(h->nlevels ? h->nlevels : 1);
        ts_hints_member *mm = realloc(h->member, sizeof *mm * cap);
        if (mm)
            h->member = mm;
        int *g = realloc(h->group, sizeof *g * cap * nl);
        if (g)
            h->group = g;
        unsigned char *ld = realloc(h->leader, cap * nl);
        if (ld)
            h->leader = ld;
        if (!mm || !g || !ld)
            return ts_fail(r->err, TS_ENOMEM, "%s: out of memory", r->src);
    }
    ts_hints_member *x = &h->member[m];
    x->index = index;
    int rc = keep_text(r, node, &x->node);
    if (rc == TS_OK)
        rc = keep_text(r, slot, &x->slot);
    if (rc == TS_OK)
        rc = keep_text(r, cpus, &x->cpus);
    if (rc != TS_OK)
        return rc;
    memcpy(h->group + (size_t)m * h->nlevels, r->group, sizeof(int) * (size_t)h->nlevels);
    memcpy(h->leader + (size_t)m * h->nlevels, r->leader, (size_t)h->nlevels);
    h->nmembers++;
    return TS_OK;
}

static int read_member(reader *r, int e)
{
    ts_hints *h = r->h;
    const ts_ydoc *d = &r->d;
    int is_node = h->members_are_nodes;
    const char *what = is_node ? "a node entry" : "a rank entry";
    if (d->v[e].type != TS_Y_MAP)
        return ts_ydoc_fail(d, e, r->err, "%s must be a mapping {%s}, not %s", what,
                            is_node ? "node, group, leader" : "rank, node, slot, cpus, group, leader",
                            ts_ydoc_type_name(&d->v[e]));
    if (r->members >= TS_PLACE_MAX_RANKS)
        return ts_ydoc_fail(d, e, r->err, "more than %d members", TS_PLACE_MAX_RANKS);
    int rc = ts_ydoc_check_keys(d, e, is_node ? node_keys : rank_keys, what, r->err);
    if (rc != TS_OK)
        return rc;
    int vrank = ts_ydoc_get(d, e, "rank"), vnode = ts_ydoc_get(d, e, "node");
    int vgroup = ts_ydoc_get(d, e, "group"), vleader = ts_ydoc_get(d, e, "leader");
    if ((!is_node && vrank < 0) || vnode < 0 || vgroup < 0 || vleader < 0)
        return ts_ydoc_fail(d, e, r->err, "%s needs %s'node', 'group' and 'leader'", what,
                            is_node ? "" : "'rank', ");
    char who[48 + TS_HINTS_NODE_MAX];
    if (!is_node) {
        long n;
        if ((rc = ts_ydoc_int(d, vrank, "rank", 0, TS_PLACE_MAX_RANKS - 1, &n, r->err)) != TS_OK)
            return rc;
        if (n != r->members)
            return ts_ydoc_fail(d, vrank, r->err, "ranks must be listed in order from 0: expected "
                                "rank %d, got %ld", r->members, n);
        if (h->nranks >= 0 && n >= h->nranks)
            return ts_ydoc_fail(d, vrank, r->err, "rank %ld, but 'nranks' is %d", n, h->nranks);
    }
    char node[TS_HINTS_NODE_MAX], slot[256] = "", cpus[1024] = "";
    if ((rc = ts_ydoc_name(d, vnode, "node", node, sizeof node, r->err)) != TS_OK)
        return rc;
    int vslot = ts_ydoc_get(d, e, "slot"), vcpus = ts_ydoc_get(d, e, "cpus");
    if (vslot >= 0 && (rc = ts_ydoc_name(d, vslot, "slot", slot, sizeof slot, r->err)) != TS_OK)
        return rc;
    if (vcpus >= 0 && (rc = ts_ydoc_name(d, vcpus, "cpus", cpus, sizeof cpus, r->err)) != TS_OK)
        return rc;
    if ((rc = read_per_level(r, vgroup, "group", 0)) != TS_OK ||
        (rc = read_per_level(r, vleader, "leader", 1)) != TS_OK)
        return rc;
    if (is_node)
        snprintf(who, sizeof who, "node %s", node);
    else
        snprintf(who, sizeof who, "rank %d", r->members);
    if ((rc = check_groups(r, e, who)) != TS_OK)
        return rc;
    int index = r->members++;
    const ts_hints_select *s = r->sel;
    int wanted = !s || (is_node ? s->node && !strcmp(s->node, node) : s->rank == index);
    if (!wanted)
        return TS_OK;
    r->found = s != NULL;
    return keep_member(r, index, node, slot, cpus);
}

/* ---- the outer structure ---- */

static int read_list(reader *r, int key)
{
    const yaml_mark_t at = r->ev.start_mark;
    if (r->ev.type != YAML_SEQUENCE_START_EVENT)
        return fail_mark(r, TS_EINPUT, &at, "'%s' must be a list", top_keys[key]);
    if (key != K_LEVELS) {
        if (!r->seen_line[K_LEVELS])
            return fail_mark(r, TS_EINPUT, &at, "'%s' comes before 'levels': the levels must come "
                             "first (the file is read in one pass)", top_keys[key]);
        if (r->seen_line[K_RANKS + K_NODES - key])
            return fail_mark(r, TS_EINPUT, &at, "both 'ranks' and 'nodes': a file has one of them");
        r->h->members_are_nodes = key == K_NODES;
        if (r->sel && key == K_RANKS && r->sel->rank < 0)
            return fail_mark(r, TS_EINPUT, &at, "the file lists ranks: a rank must be asked for, "
                             "not a node");
        if (r->sel && key == K_NODES && !r->sel->node)
            return fail_mark(r, TS_EINPUT, &at, "the file lists nodes (measure-only hints): a "
                             "node must be asked for, not a rank");
    }
    for (;;) {
        int rc = next_event(r);
        if (rc != TS_OK)
            return rc;
        if (r->ev.type == YAML_SEQUENCE_END_EVENT)
            break;
        int e = take_value(r);
        if (e < 0)
            return e;
        rc = key == K_LEVELS ? read_level(r, e) : read_member(r, e);
        if (rc != TS_OK || r->found)
            return rc;
    }
    if (key == K_LEVELS && r->h->nlevels == 0)
        return fail_mark(r, TS_EINPUT, &at, "'levels' is empty: hints have at least the level 'job'");
    return TS_OK;
}

static int read_top(reader *r)
{
    int rc;
    if ((rc = next_event(r)) != TS_OK || (rc = next_event(r)) != TS_OK)   /* stream, document */
        return rc;
    if (r->ev.type == YAML_STREAM_END_EVENT)
        return fail_mark(r, TS_EINPUT, &r->ev.start_mark, "empty: hints need 'version', 'levels' "
                         "and 'ranks' or 'nodes'");
    if ((rc = next_event(r)) != TS_OK)
        return rc;
    if (r->ev.type != YAML_MAPPING_START_EVENT)
        return fail_mark(r, TS_EINPUT, &r->ev.start_mark, "the top level must be a mapping "
                         "(version, levels, ranks, ...)");
    yaml_mark_t top = r->ev.start_mark;
    for (;;) {
        if ((rc = next_event(r)) != TS_OK)
            return rc;
        if (r->ev.type == YAML_MAPPING_END_EVENT)
            break;
        yaml_mark_t at = r->ev.start_mark;
        if (r->ev.type != YAML_SCALAR_EVENT)
            return fail_mark(r, TS_EINPUT, &at, "a key at the top level must be a name");
        int key = 0;
        while (top_keys[key] && strcmp(top_keys[key], (const char *)r->ev.data.scalar.value))
            key++;
        if (!top_keys[key])
            return fail_mark(r, TS_EINPUT, &at, "unknown key '%.64s' in the top level (allowed: "
                             "version, policy, kind, nranks, nnodes, cpus_per_rank, levels, ranks, "
                             "nodes)", (const char *)r->ev.data.scalar.value);
        if (r->seen_line[key])
            return fail_mark(r, TS_EINPUT, &at, "key '%s' given twice in the top level (first at "
                             "line %d)", top_keys[key], r->seen_line[key]);
        if ((rc = next_event(r)) != TS_OK)
            return rc;
        if (key == K_LEVELS || key == K_RANKS || key == K_NODES) {
            rc = read_list(r, key);
            r->seen_line[key] = (int)at.line + 1;
            if (rc != TS_OK || r->found)
                return rc;
            continue;
        }
        r->seen_line[key] = (int)at.line + 1;
        int v = take_value(r);
        if (v < 0)
            return v;
        if ((rc = read_scalar_key(r, key, v)) != TS_OK)
            return rc;
    }
    if (!r->seen_line[K_VERSION] || !r->seen_line[K_LEVELS] ||
        (!r->seen_line[K_RANKS] && !r->seen_line[K_NODES]))
        return fail_mark(r, TS_EINPUT, &top, "hints need 'version', 'levels' and 'ranks' or 'nodes'");
    if ((rc = next_event(r)) != TS_OK || (rc = next_event(r)) != TS_OK)   /* document end, next */
        return rc;
    if (r->ev.type != YAML_STREAM_END_EVENT)
        return fail_mark(r, TS_EINPUT, &r->ev.start_mark, "only one YAML document is allowed");
    return TS_OK;
}

/* What a complete read (no selection) must add up to; what a selection must have found. */
static int check_totals(reader *r)
{
    ts_hints *h = r->h;
    const char *unit = h->members_are_nodes ? "nodes" : "ranks";
    if (r->sel) {
        if (r->found)
            return TS_OK;
        if (h->members_are_nodes)
            return ts_fail(r->err, TS_EINPUT, "%s: node '%s' is not in the file (%d nodes)", r->src,
                           r->sel->node ? r->sel->node : "(none)", r->members);
        return ts_fail(r->err, TS_EINPUT, "%s: rank %d is not in the file (%d ranks)", r->src,
                       r->sel->rank, r->members);
    }
    int want = h->members_are_nodes ? h->nnodes : h->nranks;
    if (want >= 0 && want != r->members)
        return ts_fail(r->err, TS_EINPUT, "%s: 'n%s' is %d but %d %s are listed", r->src, unit,
                       want, r->members, unit);
    for (int l = 0; l < h->nlevels; l++)
        if (r->members && r->next_group[l] != h->level[l].groups)
            return ts_fail(r->err, TS_EINPUT, "%s: level '%s' has %d groups but the %s use %d",
                           r->src, h->level[l].name, h->level[l].groups, unit, r->next_group[l]);
    return TS_OK;
}

static int read_handler(void *data, unsigned char *buf, size_t size, size_t *got)
{
    reader *r = data;
    *got = fread(buf, 1, size, r->in);
    r->bytes += *got;
    /* past the bound: report an error to libyaml; next_event names the bound */
    return !ferror(r->in) && r->bytes <= TS_HINTS_MAX_BYTES;
}

static int run(ts_hints *h, const char *text, size_t len, FILE *in, const char *src,
               const ts_hints_select *sel, ts_error *err)
{
    memset(h, 0, sizeof *h);
    h->nranks = h->nnodes = h->cpus_per_rank = -1;
    reader *r = calloc(1, sizeof *r);
    if (!r)
        return ts_fail(err, TS_ENOMEM, "%s: out of memory", src);
    r->h = h;
    r->sel = sel;
    r->err = err;
    r->src = src ? src : "<input>";
    r->in = in;
    ts_ydoc_init(&r->d, r->src, ENTRY_MAX_NODES);
    int rc;
    if (!yaml_parser_initialize(&r->ps)) {
        rc = ts_fail(err, TS_ENOMEM, "%s: out of memory", r->src);
    } else {
        if (in)
            yaml_parser_set_input(&r->ps, read_handler, r);
        else
            yaml_parser_set_input_string(&r->ps, (const unsigned char *)(text ? text : ""),
                                         text ? len : 0);
        rc = read_top(r);
        if (rc == TS_OK)
            rc = check_totals(r);
        if (r->have_ev)
            yaml_event_delete(&r->ev);
        yaml_parser_delete(&r->ps);
    }
    ts_ydoc_free(&r->d);
    for (int l = 0; l < TS_LEVELS_MAX; l++)
        free(r->outer[l]);
    free(r);
    if (rc != TS_OK)
        ts_hints_free(h);
    return rc;
}

int ts_hints_parse(ts_hints *h, const char *text, size_t len, const char *src,
                   const ts_hints_select *sel, ts_error *err)
{
    if (len > TS_HINTS_MAX_BYTES) {
        memset(h, 0, sizeof *h);
        return ts_fail(err, TS_ELIMIT, "%s: larger than %lu bytes", src, TS_HINTS_MAX_BYTES);
    }
    return run(h, text, len, NULL, src, sel, err);
}

int ts_hints_parse_file(ts_hints *h, FILE *in, const char *src, const ts_hints_select *sel,
                        ts_error *err)
{
    return run(h, NULL, 0, in, src, sel, err);
}

int ts_hints_load(ts_hints *h, const char *path, const ts_hints_select *sel, ts_error *err)
{
    FILE *in = fopen(path, "rb");
    if (!in) {
        memset(h, 0, sizeof *h);
        return ts_fail(err, errno == ENOENT ? TS_EINPUT : TS_ESYS, "%s: %s", path, strerror(errno));
    }
    int rc = ts_hints_parse_file(h, in, path, sel, err);
    fclose(in);
    return rc;
}

void ts_hints_free(ts_hints *h)
{
    free(h->member);
    free(h->group);
    free(h->leader);
    free(h->text);
    memset(h, 0, sizeof *h);
}

int ts_hints_copy(ts_hints *dst, const ts_hints *src, ts_error *err)
{
    *dst = *src;
    dst->member = NULL;
    dst->group = NULL;
    dst->leader = NULL;
    dst->text = NULL;
    size_t nm = (size_t)src->nmembers, cells = nm * (size_t)src->nlevels;
    dst->member = malloc(sizeof *dst->member * (nm ? nm : 1));
    dst->group = malloc(sizeof *dst->group * (cells ? cells : 1));
    dst->leader = malloc(cells ? cells : 1);
    dst->text = malloc(src->text_len ? src->text_len : 1);
    if (!dst->member || !dst->group || !dst->leader || !dst->text) {
        ts_hints_free(dst);
        return ts_fail(err, TS_ENOMEM, "out of memory");
    }
    if (nm)
        memcpy(dst->member, src->member, sizeof *dst->member * nm);
    if (cells) {
        memcpy(dst->group, src->group, sizeof *dst->group * cells);
        memcpy(dst->leader, src->leader, cells);
    }
    if (src->text_len)
        memcpy(dst->text, src->text, src->text_len);
    dst->text_cap = src->text_len;
    return TS_OK;
}

/* ---- the process's last lookup ---- */

static struct {
    pthread_mutex_t lock;
    int valid;
    char path[4096];
    int rank;
    char node[TS_HINTS_NODE_MAX];        /* "" for no node */
    int has_node;
    dev_t dev;
    ino_t ino;
    off_t size;
    struct timespec mtime;
    int rc;                              /* TS_OK: h holds the result; else err holds it */
    ts_hints h;
    ts_error err;
    unsigned long reads;
} cache = { .lock = PTHREAD_MUTEX_INITIALIZER };

static int cache_matches(const char *path, const ts_hints_select *sel, const struct stat *st)
{
    int rank = sel ? sel->rank : -1;
    const char *node = sel ? sel->node : NULL;
    return cache.valid && !strcmp(cache.path, path) && cache.rank == rank &&
           cache.has_node == (node != NULL) && (!node || !strcmp(cache.node, node)) &&
           cache.dev == st->st_dev && cache.ino == st->st_ino && cache.size == st->st_size &&
           cache.mtime.tv_sec == st->st_mtim.tv_sec && cache.mtime.tv_nsec == st->st_mtim.tv_nsec;
}

static void cache_store(const char *path, const ts_hints_select *sel, const struct stat *st, int rc,
                        ts_hints *h, const ts_error *err)
{
    if (cache.valid && cache.rc == TS_OK)
        ts_hints_free(&cache.h);
    cache.valid = 0;
    const char *node = sel ? sel->node : NULL;
    /* a path or node too long to keep is simply not kept */
    if (strlen(path) >= sizeof cache.path || (node && strlen(node) >= sizeof cache.node))
        return;
    snprintf(cache.path, sizeof cache.path, "%s", path);
    cache.rank = sel ? sel->rank : -1;
    cache.has_node = node != NULL;
    snprintf(cache.node, sizeof cache.node, "%s", node ? node : "");
    cache.dev = st->st_dev;
    cache.ino = st->st_ino;
    cache.size = st->st_size;
    cache.mtime = st->st_mtim;
    cache.rc = rc;
    if (rc == TS_OK)
        cache.h = *h;                    /* the cache takes what was read; the caller gets a copy */
    else
        cache.err = *err;
    cache.valid = 1;
}

int ts_hints_lookup(ts_hints *h, const char *path, const ts_hints_select *sel, ts_error *err)
{
    ts_error local;
    if (!err)
        err = &local;                    /* a refusal is kept with its message */
    memset(h, 0, sizeof *h);
    FILE *in = fopen(path, "rb");
    if (!in)
        return ts_fail(err, errno == ENOENT ? TS_EINPUT : TS_ESYS, "%s: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fileno(in), &st) != 0) {
        int e = errno;
        fclose(in);
        return ts_fail(err, TS_ESYS, "%s: %s", path, strerror(e));
    }
    pthread_mutex_lock(&cache.lock);
    int rc;
    if (cache_matches(path, sel, &st)) {
        fclose(in);
        if (cache.rc == TS_OK)
            rc = ts_hints_copy(h, &cache.h, err);
        else {
            *err = cache.err;
            rc = cache.rc;
        }
        pthread_mutex_unlock(&cache.lock);
        return rc;
    }
    ts_hints fresh;
    rc = ts_hints_parse_file(&fresh, in, path, sel, err);
    fclose(in);
    cache.reads++;
    if (rc == TS_OK) {
        rc = ts_hints_copy(h, &fresh, err);
        if (rc == TS_OK)
            cache_store(path, sel, &st, TS_OK, &fresh, err);
        else
            ts_hints_free(&fresh);
    } else if (rc == TS_EINPUT || rc == TS_ELIMIT) {
        cache_store(path, sel, &st, rc, NULL, err);
    }
    pthread_mutex_unlock(&cache.lock);
    return rc;
}

unsigned long ts_hints_lookup_reads(void)
{
    pthread_mutex_lock(&cache.lock);
    unsigned long n = cache.reads;
    pthread_mutex_unlock(&cache.lock);
    return n;
}

int ts_hints_level_index(const ts_hints *h, const char *name)
{
    for (int l = 0; l < h->nlevels; l++)
        if (!strcmp(h->level[l].name, name))
            return l;
    return -1;
}

void ts_hints_level_list(const ts_hints *h, char *buf, size_t max)
{
    size_t used = 0;
    if (max)
        buf[0] = '\0';
    for (int l = 0; l < h->nlevels && used < max; l++) {
        int w = snprintf(buf + used, max - used, "%s%s", l ? "," : "", h->level[l].name);
        used += w > 0 ? (size_t)w : 0;
    }
}

const char *ts_hints_node(const ts_hints *h, int m)
{
    return h->text + h->member[m].node;
}

int ts_hints_on_this_host(const char *node, char *host, size_t max)
{
    /* Slurm's name is the one hints use; the host name may differ (NodeHostname) */
    const char *slurm = getenv("SLURMD_NODENAME");
    if (slurm && *slurm) {
        snprintf(host, max, "%s (SLURMD_NODENAME)", slurm);
        return !strcmp(slurm, node);
    }
    char name[TS_HINTS_NODE_MAX];
    if (gethostname(name, sizeof name) != 0)
        name[0] = '\0';
    name[sizeof name - 1] = '\0';
    name[strcspn(name, ".")] = '\0';
    snprintf(host, max, "%s", name);
    return *name && !strcmp(name, node);
}

/* ---- environment ---- */

void ts_hints_member_env(const ts_hints *h, int m, ts_hints_env *out)
{
    memset(out, 0, sizeof *out);
    out->is_node = h->members_are_nodes;
    out->index = h->member[m].index;
    out->node = h->text + h->member[m].node;
    out->cpus = h->members_are_nodes ? NULL : h->text + h->member[m].cpus;
    out->nlevels = h->nlevels;
    for (int l = 0; l < h->nlevels; l++)
        out->level[l] = h->level[l].name;
    out->group = h->group + (size_t)m * h->nlevels;
    out->leader = h->leader + (size_t)m * h->nlevels;
}

int ts_hints_env_key(char *out, size_t max, const char *what, const char *level)
{
    int w = snprintf(out, max, "TOPOSCOPE_%s_%s", what, level);
    if (w < 0 || (size_t)w >= max)
        return -1;
    for (char *c = out + strlen("TOPOSCOPE_") + strlen(what) + 1; *c; c++)
        if (*c >= 'a' && *c <= 'z')
            *c = (char)(*c - 'a' + 'A');
    return 0;
}

void ts_hints_env_each(const ts_hints_env *e, ts_env_setter set, void *ctx)
{
    char value[TS_LEVELS_MAX * TS_LEVEL_NAME_MAX + 16], key[64];
    size_t used = 0;
    value[0] = '\0';
    for (int l = 0; l < e->nlevels; l++) {
        int w = snprintf(value + used, sizeof value - used, "%s%s", l ? "," : "", e->level[l]);
        used += w > 0 ? (size_t)w : 0;
    }
    set(ctx, "TOPOSCOPE_LEVELS", value);
    if (!e->node)
        return;
    snprintf(value, sizeof value, "%d", e->index);
    set(ctx, e->is_node ? "TOPOSCOPE_NODE_INDEX" : "TOPOSCOPE_RANK", value);
    set(ctx, "TOPOSCOPE_NODE", e->node);
    if (!e->is_node && e->cpus)
        set(ctx, "TOPOSCOPE_CPUS", e->cpus);
    for (int l = 0; l < e->nlevels; l++) {
        if (ts_hints_env_key(key, sizeof key, "GROUP", e->level[l]) == 0) {
            snprintf(value, sizeof value, "%d", e->group[l]);
            set(ctx, key, value);
        }
        if (ts_hints_env_key(key, sizeof key, "LEADER", e->level[l]) == 0)
            set(ctx, key, e->leader[l] ? "1" : "0");
    }
}
